// SPDX-License-Identifier: Apache-2.0
// The built-in driver: prodsm's Producer<Policy> on virtual time, with a simulated
// server that answers sends the way the harness commands say.
//
// The simulated server's answers are sim_server.cpp's (shared with external drivers).
#include <algorithm>
#include <cstdio>

#include "prodsm/conformance/driver.hpp"
#include "sim_server.hpp"
#include "timed_driver.hpp"

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
S2Policy::Ack from_trace(const TraceAck& a, S2Policy*) {
  return {a.start, a.end};
}

template <class Policy>
class CoreDriver final : public detail::TimedDriver<CoreDriver<Policy>> {
  using Base = detail::TimedDriver<CoreDriver<Policy>>;
  using Base::begin;
  using Base::now_;
  using Base::sends_;
  using Base::server_;
  using Base::trace_;
  using Base::unsupported_;

 public:
  CoreDriver(Producer<Policy> producer, const TraceConfig& config) : Base{config}, producer_{std::move(producer)} {}

  bool run(const Command& c) override {
    using K = Command::Kind;
    unsupported_.clear();
    if (auto shared = this->run_shared(c)) return *shared;
    switch (c.kind) {
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
      case K::ack:
      case K::duplicate:
      case K::fail:
      case K::invalid_ack: return respond(c);
      case K::restart_server: {
        // Every unanswered send fails in the same instant, one answer step each.
        for (const auto& [sent, response] : server_.restart(c.server_state_kept)) deliver(sent, response);
        return true;
      }
      case K::close_stream:
        unsupported_ =
            "close_stream: the bare core has no stream; a Durable Streams run with config stream_operations runs "
            "prodsm's producer client";
        return false;
      default: return false;
    }
  }

  Producer<Policy>& producer() { return producer_; }

  /// Records every action the producer emitted in reaction to the step's input.
  void drain(Step& step) {
    while (auto action = producer_.poll_action()) {
      Observation o;
      std::visit(
          [&](auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, SendBatch<Policy>>) {
              o.kind = Observation::Kind::send;
              o.send_index = this->sends_++;
              o.batch = a.batch.value;
              o.attempt = a.attempt;
              o.first_ticket = a.first_ticket.value;
              o.count = a.record_count;
              o.body.assign(reinterpret_cast<const char*>(a.body.data()), a.body.size());
              o.record_ends.assign(a.record_ends.begin(), a.record_ends.end());
              o.stamp = to_trace(a.stamp);
              this->server_.sent(o);
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

 private:
  bool respond(const Command& c) {
    if (c.kind == Command::Kind::invalid_ack && c.invalid == Command::Invalid::unknown_batch) {
      Step& step = begin(Input::Kind::respond);
      step.input.send_index = SIZE_MAX;  // names no send
      step.input.response = detail::SimServer::unknown_batch_ack();
      producer_.handle_ack(now_, BatchId{UINT64_MAX / 2}, 1, typename Policy::Ack{});
      drain(step);
      return true;
    }
    auto answered = server_.answer(c);
    if (!answered) return false;
    deliver(answered->first, answered->second);
    return true;
  }

  /// One answer step: the simulated server's response to `sent`, given to the producer.
  void deliver(const detail::PendingSend& sent, const Response& response) {
    Step& step = begin(Input::Kind::respond);
    step.input.send_index = sent.index;
    step.input.response = response;
    if (response.kind == Response::Kind::fail) {
      producer_.handle_failure(now_, BatchId{sent.batch}, sent.attempt, response.error);
    } else {
      producer_.handle_ack(now_, BatchId{sent.batch}, sent.attempt,
                           from_trace(response.ack, static_cast<Policy*>(nullptr)));
    }
    drain(step);
  }

  Producer<Policy> producer_;
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
      t.initial_seq = c.protocol.idempotent->seq;
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
  if (config.protocol == Protocol::durable_streams && config.stream_operations) {
    return make_client_driver(config, error);  // the bare core has no stream (C4)
  }
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
