// SPDX-License-Identifier: Apache-2.0
// The built-in driver: prodsm's Producer<Policy> on virtual time, with a simulated
// server that answers sends the way the harness commands say.
//
// The simulated server (documented in docs/conformance.md, so external drivers build the
// same answers):
//  - ack: S2 -> [base + first ticket, + count), base = the initial match_seq_num or 0
//    (a record's position is its ticket: the stream holds the records in order);
//    Durable Streams -> next offset = the byte tail after the body, as a 20-digit
//    decimal string, and the tail advances.
//  - duplicate: Durable Streams sequenced -> {no offset, duplicate}; otherwise an ack.
//  - fail: the error of `fail_code`, with its certainty (connection_lost and
//    protocol_error indefinite, the rest definite) and retryability (unavailable and
//    connection_lost); sequence_gap -> expected = seq - 1 (0 for seq 0), received = seq;
//    stale_epoch -> server epoch = the send's epoch + 1; stream_closed -> final offset =
//    the tail.
//  - invalid_ack: S2 -> the range is one record too long; Durable Streams -> neither an
//    offset nor a duplicate flag; unknown_batch -> an ack for a batch id never issued.
#include <algorithm>
#include <cstdio>
#include <deque>

#include "prodsm/conformance/driver.hpp"

namespace prodsm::conformance {
namespace {

TraceStamp to_trace(const DurableStreamsPolicy::Stamp& s) {
  TraceStamp t;
  t.sequenced = s.sequenced;
  t.epoch = s.epoch;
  t.seq = s.seq;
  return t;
}
TraceStamp to_trace(const S2Policy::Stamp& s) {
  TraceStamp t;
  t.sequenced = s.match_seq_num.has_value();
  t.match_seq_num = s.match_seq_num;
  if (s.fenced) t.fencing_token = std::string(s.fencing_token());
  return t;
}
TraceAck to_trace(const DurableStreamsPolicy::Ack& a) {
  TraceAck t;
  t.next_offset = a.next_offset;
  t.duplicate = a.duplicate;
  return t;
}
TraceAck to_trace(const S2Policy::Ack& a) {
  TraceAck t;
  t.start = a.start_seq_num;
  t.end = a.end_seq_num;
  return t;
}
DurableStreamsPolicy::Ack from_trace(const TraceAck& a, DurableStreamsPolicy*) {
  return {a.next_offset, a.duplicate};
}
S2Policy::Ack from_trace(const TraceAck& a, S2Policy*) { return {a.start, a.end}; }

std::string offset_text(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(bytes));
  return buf;
}

template <class Policy>
class CoreDriver final : public Driver {
 public:
  CoreDriver(Producer<Policy> producer, TraceConfig config) : producer_{std::move(producer)} {
    trace_.config = std::move(config);
  }

  bool run(const Command& c) override {
    using K = Command::Kind;
    switch (c.kind) {
      case K::submit: {
        Step& step = begin(Input::Kind::submit);
        step.input.record = c.record;
        auto r = producer_.submit(now_, std::string_view{c.record});
        if (r) {
          step.result.kind = SyncResult::Kind::ticket;
          step.result.value = r->value;
        } else {
          reject(step, r.error());
        }
        drain(step);
        return true;
      }
      case K::flush: {
        Step& step = begin(Input::Kind::flush);
        auto r = producer_.flush(now_);
        if (r) {
          step.result.kind = SyncResult::Kind::barrier;
          step.result.value = r->value;
        } else {
          reject(step, r.error());
        }
        drain(step);
        return true;
      }
      case K::close: {
        Step& step = begin(Input::Kind::close);
        if (auto r = producer_.close(now_)) {
          step.result.kind = SyncResult::Kind::closed_result;
          step.result.ok = r->has_value();
          if (!*r) step.result.error = r->error();
        }
        drain(step);
        return true;
      }
      case K::abort: {
        Step& step = begin(Input::Kind::abort);
        producer_.abort(now_);
        drain(step);
        return true;
      }
      case K::advance: {
        const Instant target = saturating_add(now_, c.advance_ns);
        bool fired = false;
        while (auto deadline = producer_.next_deadline()) {
          if (*deadline > target) break;
          now_ = std::max(now_, *deadline);
          Step& step = begin(Input::Kind::advance);
          producer_.handle_timeout(now_);
          drain(step);
          fired = true;
        }
        if (!fired || now_ < target) {
          now_ = target;
          Step& step = begin(Input::Kind::advance);  // a timer event with nothing due (D3)
          producer_.handle_timeout(now_);
          drain(step);
        }
        return true;
      }
      case K::ack:
      case K::duplicate:
      case K::fail:
      case K::invalid_ack:
        return respond(c);
    }
    return false;
  }

  [[nodiscard]] const Trace& trace() const override { return trace_; }
  [[nodiscard]] Capabilities capabilities() const override { return {}; }
  [[nodiscard]] std::size_t unanswered_sends() const override { return unanswered_.size(); }

 private:
  struct SentRef {
    std::size_t index;
    BatchId batch;
    std::uint32_t attempt;
    std::uint64_t first_ticket;
    std::uint32_t count;
    std::size_t body_bytes;
    TraceStamp stamp;
  };

  Step& begin(Input::Kind kind) {
    trace_.steps.emplace_back();
    Step& step = trace_.steps.back();
    step.input.kind = kind;
    step.input.at = now_;
    return step;
  }

  static void reject(Step& step, const Rejection& r) {
    step.result.kind = SyncResult::Kind::rejected;
    step.result.reason = r.reason;
    step.result.error = r.terminal;
  }

  void drain(Step& step) {
    while (auto action = producer_.poll_action()) {
      Observation o;
      std::visit(
          [&](auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, SendBatch<Policy>>) {
              o.kind = Observation::Kind::send;
              o.send_index = sends_++;
              o.batch = a.batch.value;
              o.attempt = a.attempt;
              o.first_ticket = a.first_ticket.value;
              o.count = a.record_count;
              o.body.assign(reinterpret_cast<const char*>(a.body.data()), a.body.size());
              o.record_ends.assign(a.record_ends.begin(), a.record_ends.end());
              o.stamp = to_trace(a.stamp);
              unanswered_.push_back(
                  SentRef{o.send_index, a.batch, a.attempt, a.first_ticket.value, a.record_count,
                          a.body.size(), o.stamp});
            } else if constexpr (std::is_same_v<T, TicketsCompleted<Policy>>) {
              o.kind = Observation::Kind::done;
              o.first_ticket = a.first.value;
              o.last_ticket = a.last.value;
              o.ok = a.result.has_value();
              if (a.result) {
                o.ack = to_trace(*a.result);
              } else {
                o.error = a.result.error();
              }
            } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
              o.kind = Observation::Kind::barrier;
              o.barrier = a.barrier.value;
              o.ok = a.result.has_value();
              if (!a.result) o.error = a.result.error();
            } else if constexpr (std::is_same_v<T, Closed>) {
              o.kind = Observation::Kind::closed;
              o.ok = a.result.has_value();
              if (!a.result) o.error = a.result.error();
            } else {
              o.kind = Observation::Kind::capacity;
            }
          },
          *action);
      step.observed.push_back(std::move(o));
    }
  }

  bool respond(const Command& c) {
    using K = Command::Kind;
    if (c.kind == K::invalid_ack && c.invalid == Command::Invalid::unknown_batch) {
      Step& step = begin(Input::Kind::respond);
      step.input.send_index = SIZE_MAX;  // names no send
      step.input.response.kind = Response::Kind::ack;
      step.input.response.invalid = true;
      producer_.handle_ack(now_, BatchId{UINT64_MAX / 2}, 1, typename Policy::Ack{});
      drain(step);
      return true;
    }
    if (unanswered_.empty()) return false;
    auto it = c.which == Command::Which::oldest ? unanswered_.begin() : std::prev(unanswered_.end());
    const SentRef sent = *it;
    unanswered_.erase(it);
    Step& step = begin(Input::Kind::respond);
    step.input.send_index = sent.index;
    Response& r = step.input.response;
    if (c.kind == K::fail) {
      r.kind = Response::Kind::fail;
      r.error = make_failure(c, sent);
      producer_.handle_failure(now_, sent.batch, sent.attempt, r.error);
      drain(step);
      return true;
    }
    r.kind = Response::Kind::ack;
    r.ack = make_ack(c, sent);
    producer_.handle_ack(now_, sent.batch, sent.attempt, from_trace(r.ack, static_cast<Policy*>(nullptr)));
    if (!r.invalid && !r.ack.duplicate && trace_.config.protocol == Protocol::durable_streams) {
      tail_ += sent.body_bytes;
    }
    drain(step);
    return true;
  }

  TraceAck make_ack(const Command& c, const SentRef& sent) {
    TraceAck a;
    const bool s2 = trace_.config.protocol == Protocol::s2;
    if (c.kind == Command::Kind::invalid_ack) {
      trace_.steps.back().input.response.invalid = true;
      if (s2) {
        a.start = s2_start(sent);
        a.end = a.start + sent.count + 1;  // one record too many
      }  // Durable Streams: an ack without offset (and not a duplicate)
      return a;
    }
    if (c.kind == Command::Kind::duplicate && !s2 && sent.stamp.sequenced) {
      a.duplicate = true;
      return a;
    }
    if (s2) {
      a.start = s2_start(sent);
      a.end = a.start + sent.count;
    } else {
      a.next_offset = offset_text(tail_ + sent.body_bytes);
    }
    return a;
  }

  std::uint64_t s2_start(const SentRef& sent) const {
    return trace_.config.initial_match_seq_num.value_or(0) + sent.first_ticket;
  }

  Error make_failure(const Command& c, const SentRef& sent) const {
    const ErrorCode code = c.fail_code;
    const bool indefinite = code == ErrorCode::connection_lost || code == ErrorCode::protocol_error;
    const bool retryable = code == ErrorCode::unavailable || code == ErrorCode::connection_lost;
    Error e = make_error(code, indefinite ? Certainty::indefinite : Certainty::definite, retryable,
                         "harness: " + std::string(to_string(code)));
    if (code == ErrorCode::unavailable) e.retry_after_ns = c.retry_after_ns;
    if (code == ErrorCode::sequence_gap) {
      e.received_seq = sent.stamp.seq;
      e.expected_seq = sent.stamp.seq > 0 ? sent.stamp.seq - 1 : 0;
    }
    if (code == ErrorCode::stale_epoch) e.server_epoch = sent.stamp.epoch + 1;
    if (code == ErrorCode::stream_closed) e.final_offset = offset_text(tail_);
    return e;
  }

  Producer<Policy> producer_;
  Trace trace_;
  Instant now_{};
  std::size_t sends_ = 0;
  std::deque<SentRef> unanswered_;
  std::uint64_t tail_ = 0;
};

}  // namespace

TraceConfig trace_config(const CoreConfig& config) {
  TraceConfig t;
  t.protocol = config.protocol;
  auto common = [&t](const auto& c) {
    if (!c.linger.is_disabled()) t.linger_ns = c.linger.duration_ns();
    t.max_batch_records = c.max_batch_records;
    t.max_batch_bytes = c.max_batch_bytes;
    t.max_unacked_bytes = c.max_unacked_bytes;
    t.max_unacked_batches = c.max_unacked_batches;
    t.max_in_flight = c.max_in_flight;
    t.max_pending_barriers = c.max_pending_barriers;
    t.delivery_timeout_ns = c.delivery_timeout_ns;
    t.max_attempts = c.retry.max_attempts;
    t.retry_indefinite = c.retry.mode == RetryMode::all;
  };
  if (config.protocol == Protocol::durable_streams) {
    const auto& c = config.durable_streams;
    common(c);
    t.json = c.protocol.body_format == DurableStreamsPolicy::BodyFormat::json;
    if (c.protocol.idempotent) {
      t.sequencing = Sequencing::ds_idempotent;
      t.auto_claim = c.protocol.idempotent->auto_claim;
      t.initial_epoch = c.protocol.idempotent->epoch;
    }
  } else {
    const auto& c = config.s2;
    common(c);
    if (c.protocol.match_seq_num) {
      t.sequencing = Sequencing::s2_match_seq_num;
      t.initial_match_seq_num = c.protocol.match_seq_num;
    }
    t.fencing_token = c.protocol.fencing_token;
  }
  return t;
}

std::unique_ptr<Driver> make_core_driver(const CoreConfig& config, std::string* error) {
  if (config.protocol == Protocol::durable_streams) {
    auto p = DurableStreamsProducer::create(config.durable_streams);
    if (!p) {
      if (error) *error = p.error().message();
      return nullptr;
    }
    return std::make_unique<CoreDriver<DurableStreamsPolicy>>(std::move(*p), trace_config(config));
  }
  auto p = S2Producer::create(config.s2);
  if (!p) {
    if (error) *error = p.error().message();
    return nullptr;
  }
  return std::make_unique<CoreDriver<S2Policy>>(std::move(*p), trace_config(config));
}

}  // namespace prodsm::conformance
