// SPDX-License-Identifier: Apache-2.0
// ds::ProducerClient: the Durable Streams producer between the core and the transport,
// once for every adapter. See client.hpp for what lives here.
#include "prodsm/ds/client.hpp"
#include "prodsm/http/request_fields.hpp"

#include <algorithm>
#include <utility>

namespace prodsm::ds {
namespace {

using namespace std::chrono_literals;

Error local_error(ErrorCode code, std::string message) {
  return make_error(code, Certainty::definite, false, std::move(message));
}

}  // namespace

RecordResult RecordsCompleted::record(Ticket ticket) const {
  if (!result) return tl::unexpected(result.error());
  return RecordAck{ticket, ticket.value - first.value, *result};
}

std::optional<std::string> validate(const ProducerOptions& o) {
  auto url = StreamUrl::parse(o.url);
  if (!url) return "url: " + url.error();
  if (o.content_type.empty() || o.content_type.find_first_of("\r\n") != std::string::npos) {
    return "content_type: must be a non-empty header value without CR/LF";
  }
  // application/json needs JSON framing and a non-JSON type bytes; a `+json` type takes
  // either (the server stores it as bytes, the other SDKs frame it as JSON).
  const bool json = is_json_content_type(o.content_type);
  const bool either = json && !stores_json_messages(o.content_type);
  if (!either && json != (o.producer.protocol.body_format == DurableStreamsPolicy::BodyFormat::json)) {
    return "content_type: '" + o.content_type + "' needs producer.protocol.body_format = " + (json ? "json" : "bytes");
  }
  for (const auto& h : o.extra_headers) {
    if (auto why = check_extra_header(h)) return "extra_headers: " + *why;
  }
  if (auto why = http::check_extra_header_bounds(o.extra_headers)) return "extra_headers: " + *why;
  if (o.submit_timeout_ns.count() < 0 || o.submit_timeout_ns > 10min) {
    return "submit_timeout_ns: must be in 0..10 min (got " + std::to_string(o.submit_timeout_ns.count()) + " ns)";
  }
  if (o.max_pending_records < 1 || o.max_pending_records > (1U << 24)) {
    return "max_pending_records: must be in 1..16777216 (got " + std::to_string(o.max_pending_records) + ")";
  }
  if (auto why = o.session.validate()) return "session." + *why;
  if (auto e = DurableStreamsProducer::validate(o.producer)) return "producer." + e->message();
  if (!o.producer.protocol.idempotent && o.session.mode == http::ConnectionMode::pool && o.producer.max_in_flight > 1) {
    // Requests on different connections race at the server: plain appends would land
    // out of order (measured). Sequenced appends are reordered by S4 instead.
    return "producer.max_in_flight: plain appends (no idempotent producer) over pooled connections can land out of "
           "order; use max_in_flight = 1, the pipelined connection mode, or an idempotent producer";
  }
  return std::nullopt;
}

DurableStreamsConfig starting_config(const ProducerOptions& options, std::chrono::system_clock::time_point wall_now) {
  DurableStreamsConfig config = options.producer;
  if (!config.protocol.idempotent) return config;
  auto& id = *config.protocol.idempotent;
  switch (options.start) {
    case ProducerStart::fresh_epoch: {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(wall_now.time_since_epoch()).count();
      const auto clock_epoch = static_cast<std::uint64_t>(std::max<std::int64_t>(us, 0));
      id.epoch = std::min(std::max(id.epoch, clock_epoch), DurableStreamsPolicy::kMaxSequenceValue);
      id.first_attempt_duplicates = FirstAttemptDuplicates::fail;
      break;
    }
    case ProducerStart::given_epoch: id.first_attempt_duplicates = FirstAttemptDuplicates::fail; break;
    case ProducerStart::resume: id.first_attempt_duplicates = FirstAttemptDuplicates::accept; break;
  }
  return config;
}

tl::expected<ProducerClient, std::string> ProducerClient::create(const ProducerOptions& options,
                                                                 std::chrono::system_clock::time_point wall_now) {
  if (auto why = validate(options)) return tl::unexpected(std::move(*why));
  if (options.start != ProducerStart::fresh_epoch && options.start != ProducerStart::given_epoch &&
      options.start != ProducerStart::resume) {
    return tl::unexpected(std::string{"start: must be fresh_epoch, given_epoch or resume"});
  }
  if (const auto& id = options.producer.protocol.idempotent;
      id && id->seq != 0 && options.start == ProducerStart::fresh_epoch) {
    // A fresh epoch is new to the server, which expects its seq 0: any other first seq
    // fails every append with a sequence gap.
    return tl::unexpected(
        std::string{"producer.protocol.idempotent.seq: must be 0 with start fresh_epoch (a new epoch starts at seq 0); "
                    "continuing an epoch at a later seq is start given_epoch or resume"});
  }
  ProducerOptions started = options;
  started.producer = starting_config(options, wall_now);
  auto url = StreamUrl::parse(started.url);
  auto core = DurableStreamsProducer::create(started.producer);
  if (!core) return tl::unexpected("producer." + core.error().message());
  return ProducerClient(std::move(started), std::move(*url), std::move(*core));
}

ProducerClient::ProducerClient(ProducerOptions options, StreamUrl url, DurableStreamsProducer core)
    : options_{std::move(options)},
      url_{std::move(url)},
      json_{options_.producer.protocol.body_format == DurableStreamsPolicy::BodyFormat::json},
      core_{std::move(core)},
      pending_{options_.max_pending_records},
      rng_{options_.producer.retry.jitter_seed ^ 0x636c6f7365ULL} {
  request_options_.extra_headers = options_.extra_headers;
  if (options_.producer.protocol.idempotent) producer_id_ = options_.producer.protocol.idempotent->producer_id;
}

// ---- producer operations -----------------------------------------------------------------

tl::expected<Ticket, Rejection> ProducerClient::submit(Instant now, std::string_view record) {
  auto r = pending_.submit(core_, now, record, latency_);  // R3, R2
  drive(now);
  return r;
}

SubmitManyResult ProducerClient::submit_many(Instant now, std::span<const std::string_view> records) {
  SubmitManyResult r = pending_.submit_many(core_, now, records, latency_);  // R3, R2
  drive(now);
  return r;
}

tl::expected<BarrierId, Rejection> ProducerClient::flush(Instant now) {
  auto r = core_.flush(now);
  drive(now);
  return r;
}

void ProducerClient::close(Instant now) {
  (void)core_.close(now);
  drive(now);
}

tl::expected<std::uint64_t, Error> ProducerClient::close_stream(Instant now) {
  auto barrier = core_.flush(now);
  if (!barrier) {
    drive(now);
    return tl::unexpected(to_error(barrier.error()));
  }
  StreamClose c;
  c.op = next_op_++;
  c.barrier = barrier->value;
  stream_closes_.push_back(c);
  drive(now);  // F3: an empty barrier completes at once and the close goes out now
  return c.op;
}

tl::expected<std::uint64_t, Error> ProducerClient::close_with_stream(Instant now,
                                                                     std::optional<std::string> final_record) {
  if (final_requested_) {
    // A later call is a retry of the same sequenced close, whatever its final record: the
    // server deduplicates a resend of that seq to the first body, and the cross-SDK suite
    // asks the same of a client (close-with-body-retry-different-body). Only the first
    // call's record is appended; the first call's result is returned.
    if (!final_result_) return final_op_;  // still running: the same op
    const std::uint64_t op = next_op_++;   // finished: the same result, as a new operation
    events_.emplace_back(StreamCloseCompleted{op, *final_result_});
    return op;
  }
  if (core_.state() == ProducerState::closing || core_.state() == ProducerState::closed) {
    return tl::unexpected(local_error(ErrorCode::closed, "the producer is already closed; the stream was not closed"));
  }
  if (final_record) {
    const auto bytes = std::as_bytes(std::span<const char>(final_record->data(), final_record->size()));
    if (auto why = core_.policy().check_record(bytes)) {
      return tl::unexpected(local_error(ErrorCode::invalid_record, "final record: " + std::string(*why)));
    }
    // B4, as at submit: the final record is one request's body, framed as a batch of one.
    const auto& policy = core_.policy();
    if (policy.metered_bytes(final_record->size()) + policy.batch_overhead_bytes() > core_.config().max_batch_bytes) {
      return tl::unexpected(local_error(ErrorCode::invalid_record, "final record exceeds max_batch_bytes"));
    }
    final_body_ = json_ ? "[" + *final_record + "]" : std::move(*final_record);
  }
  final_requested_ = true;
  final_op_ = next_op_++;
  StreamClose c;
  c.op = final_op_;
  c.final = true;
  stream_closes_.push_back(c);
  (void)core_.close(now);  // C1 first: no later batch can take the seq
  drive(now);
  return final_op_;
}

void ProducerClient::abort(Instant now) {
  core_.abort(now);
  drive(now);
  const Error aborted = local_error(ErrorCode::aborted, "the producer was aborted before the stream was closed");
  while (!stream_closes_.empty()) finish_stream_close(stream_closes_.front().op, tl::unexpected(aborted));
}

void ProducerClient::on_delivered(Instant now, std::uint64_t records) {
  (void)now;
  if (pending_.on_delivered(records)) events_.emplace_back(CapacityAvailable{});  // R3
}

// ---- the drive rule ------------------------------------------------------------------------

std::uint64_t ProducerClient::push_request(http::Request request, Outstanding what, std::size_t body_bytes,
                                           std::optional<RequestBatch> batch) {
  const std::uint64_t tag = next_tag_++;
  outstanding_.emplace(tag, what);
  ClientRequest r{tag,
                  std::move(request),
                  what.batch ? RequestKind::append : RequestKind::stream_close,
                  std::move(batch),
                  what.batch ? 0 : what.op,
                  body_bytes};
  r.request.id = http::RequestId{tag};  // an http::Pool echoes it: the outcome finds its tag
  requests_.push_back(std::move(r));
  return tag;
}

/// Drains the core's actions into requests and events (the core's drive rule).
void ProducerClient::drive(Instant now) {
  while (auto action = core_.poll_action()) {
    std::visit(
        [&](auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, SendBatch<DurableStreamsPolicy>>) {
            // The body is copied here, while the core still owns it (S2: byte-identical on
            // every attempt; the copy outlives the core's buffer recycling).
            http::Request request;
            request.bytes =
                encode_batch(url_, options_.content_type, a.body.size(), a.stamp, producer_id_, request_options_);
            request.bytes.append(reinterpret_cast<const char*>(a.body.data()), a.body.size());
            // A resend is deduplicated by (id, epoch, seq), so a sequenced append is
            // retry_safe — except the first attempt of the epoch's first batch when a
            // first-attempt duplicate fails the producer: a stall-hedged resend would turn
            // a lying 204 into a believable one (issue 22 item 7), so only the request
            // timeout may end that attempt.
            const auto& id = options_.producer.protocol.idempotent;
            const bool probe = id && id->first_attempt_duplicates == FirstAttemptDuplicates::fail && a.attempt == 1 &&
                               a.stamp.seq == 0;
            request.retry_safe = a.stamp.sequenced && !probe;
            push_request(
                std::move(request),
                Outstanding{true, a.batch, a.attempt, a.stamp.sequenced, 0, ProducerStamp{a.stamp.epoch, a.stamp.seq}},
                a.body.size(), RequestBatch{a.batch, a.attempt, a.first_ticket, a.record_count, a.stamp});
          } else if constexpr (std::is_same_v<T, TicketsCompleted<DurableStreamsPolicy>>) {
            RecordsCompleted done{a.first, a.last, tl::unexpected(Error{})};
            latency_.completed(a.first, a.last, a.result.has_value(), now);
            if (a.result) {
              done.result = std::make_shared<const DurableStreamsPolicy::Ack>(std::move(*a.result));
            } else {
              annotate(a.result.error());
              done.result = tl::unexpected(std::move(a.result.error()));
            }
            events_.emplace_back(std::move(done));
          } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
            auto it = std::find_if(stream_closes_.begin(), stream_closes_.end(),
                                   [&](const StreamClose& c) { return c.barrier == a.barrier.value; });
            if (!a.result) annotate(a.result.error());
            if (it == stream_closes_.end()) {
              events_.emplace_back(std::move(a));
            } else if (!a.result) {
              finish_stream_close(it->op, tl::unexpected(a.result.error()));
            } else {
              send_stream_close(*it);  // every covered record is durable: close the stream
            }
          } else if constexpr (std::is_same_v<T, Closed>) {
            if (!a.result) annotate(a.result.error());
            events_.emplace_back(a);
            if (final_requested_) {
              if (StreamClose* c = find_stream_close(final_op_)) {
                if (a.result) {
                  c->epoch = core_.policy().epoch();
                  c->seq = core_.policy().next_seq();  // every batch is acknowledged: the first unused seq
                  send_stream_close(*c);
                } else {
                  finish_stream_close(c->op, tl::unexpected(a.result.error()));
                }
              }
            }
          } else if constexpr (std::is_same_v<T, CapacityAvailable>) {
            events_.emplace_back(a);
          }
        },
        *action);
  }
}

// ---- stream closes -------------------------------------------------------------------------

ProducerClient::StreamClose* ProducerClient::find_stream_close(std::uint64_t op) {
  for (StreamClose& c : stream_closes_) {
    if (c.op == op) return &c;
  }
  return nullptr;
}

/// Builds (or rebuilds, for a retry or a claim) the stream close's request.
void ProducerClient::send_stream_close(StreamClose& c) {
  c.started = true;
  c.retry_at.reset();
  ++c.attempts;
  http::Request request;
  request.retry_safe = true;  // a repeated close is answered 204; a sequenced one is deduplicated
  std::size_t body_bytes = 0;
  if (!c.final) {
    request.bytes = encode_close(url_, options_.content_type, std::nullopt, request_options_);
  } else {
    std::optional<ProducerHeaders> producer;
    if (options_.producer.protocol.idempotent) producer = ProducerHeaders{producer_id_, c.epoch, c.seq};
    if (final_body_) {
      AppendOptions append;
      append.producer = producer;
      append.close_stream = true;
      request.bytes = encode_append(url_, options_.content_type, final_body_->size(), append, request_options_);
      request.bytes += *final_body_;
      body_bytes = final_body_->size();
    } else {
      request.bytes = encode_close(url_, options_.content_type, producer, request_options_);
    }
  }
  push_request(std::move(request), Outstanding{false, {}, 0, false, c.op}, body_bytes);
}

void ProducerClient::finish_stream_close(std::uint64_t op, CloseStreamResult result) {
  auto it =
      std::find_if(stream_closes_.begin(), stream_closes_.end(), [&](const StreamClose& c) { return c.op == op; });
  if (it == stream_closes_.end()) return;
  if (it->final) final_result_ = result;
  stream_closes_.erase(it);
  events_.emplace_back(StreamCloseCompleted{op, std::move(result)});
}

void ProducerClient::on_stream_close_outcome(Instant now, std::uint64_t op,
                                             tl::expected<http::Response, Error> result) {
  StreamClose* c = find_stream_close(op);
  if (c == nullptr) return;
  const bool sequenced = c->final && options_.producer.protocol.idempotent.has_value();
  const auto sent = sequenced ? std::optional<ProducerStamp>(ProducerStamp{c->epoch, c->seq}) : std::nullopt;
  CloseStreamResult outcome{CloseResult{}};
  if (!result) {
    outcome = tl::unexpected(std::move(result.error()));
  } else if (c->final && final_body_) {  // append + close: classified as an append (S3, S6, S7)
    auto ack = classify_append(*result, sent);
    if (ack) {
      outcome->final_offset = ack->next_offset;
      if (outcome->final_offset.empty()) {  // a duplicate carries the offset only sometimes
        if (auto offset = result->header("Stream-Next-Offset")) outcome->final_offset = std::string(*offset);
      }
    } else {
      outcome = tl::unexpected(std::move(ack.error()));
    }
  } else {
    outcome = classify_close(*result, sent);
  }
  if (!outcome && outcome.error().certainty == Certainty::indefinite) c->maybe_applied = true;
  if (!outcome) {
    const Error& e = outcome.error();
    const auto& idempotent = options_.producer.protocol.idempotent;
    if (e.code == ErrorCode::stale_epoch && sequenced && !c->claimed && idempotent && idempotent->auto_claim &&
        e.server_epoch < DurableStreamsPolicy::kMaxSequenceValue) {
      c->claimed = true;  // S5: one claim step, epoch server + 1 from seq 0
      c->epoch = e.server_epoch + 1;
      c->seq = 0;
      send_stream_close(*c);
      return;
    }
    if (e.retryable && c->attempts < options_.producer.retry.max_attempts) {  // E4: idempotent request
      // E6: as a record's, a stream close's retries end at delivery_timeout_ns (from its
      // first failure: the flush before it had a deadline of its own).
      if (!c->first_failure_at) c->first_failure_at = now;
      const Instant retry_at =
          saturating_add(now, prodsm::detail::backoff_delay(options_.producer.retry, c->attempts, e, rng_));
      const Duration timeout_ns = options_.producer.delivery_timeout_ns;
      if (retry_at <= saturating_add(*c->first_failure_at, timeout_ns)) {
        c->retry_at = retry_at;
        return;
      }
      outcome.error().message +=
          "; not retried: the next attempt would come more than delivery_timeout_ns (" +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout_ns).count()) +
          " ms) after the stream close's first failure (E6)";
    }
    if (c->final && final_body_ && c->maybe_applied && outcome.error().certainty == Certainty::definite) {
      // E3: after an ambiguous attempt a refusal says nothing about the final record. An
      // append with Stream-Closed is one step at the server, so the resend could not
      // append it twice, but a 409 may answer our own earlier attempt.
      outcome.error().certainty = Certainty::indefinite;
      outcome.error().message += "; an earlier attempt may have appended the final record and closed the stream";
    }
  }
  finish_stream_close(op, std::move(outcome));
}

// ---- transport -----------------------------------------------------------------------------

std::optional<ClientRequest> ProducerClient::poll_request() {
  if (requests_.empty()) return std::nullopt;
  ClientRequest r = std::move(requests_.front());
  requests_.pop_front();
  return r;
}

void ProducerClient::on_batch_outcome(Instant now, const Outstanding& o, tl::expected<http::Response, Error> result) {
  if (!result) {
    last_failure_ = result.error();
    core_.handle_failure(now, o.batch_id, o.attempt, std::move(result.error()));
    return;
  }
  // S7: status and headers; the echo of a sequenced append is checked against it.
  auto ack = classify_append(*result, o.sequenced ? std::optional<ProducerStamp>(o.stamp) : std::nullopt);
  if (ack) {
    core_.handle_ack(now, o.batch_id, o.attempt, std::move(*ack));
  } else {
    last_failure_ = ack.error();
    core_.handle_failure(now, o.batch_id, o.attempt, std::move(ack.error()));
  }
}

/// A delivery timeout (E6) keeps the cause: the last failed attempt, if any, unless the
/// core's message already names the last failure it retried ("; the last failure retried: ",
/// or "; the last failure (its retry had not gone out): " when the resend was still waiting).
void ProducerClient::annotate(Error& error) const {
  if (error.code != ErrorCode::delivery_timeout || !last_failure_) return;
  if (error.message.find("; the last failed attempt: ") != std::string::npos) return;
  if (error.message.find("; the last failure ") != std::string::npos) return;  // the core named it
  error.message += "; the last failed attempt: " + last_failure_->describe();
}

void ProducerClient::handle_outcome(Instant now, std::uint64_t tag, tl::expected<http::Response, Error> result) {
  auto it = outstanding_.find(tag);
  if (it == outstanding_.end()) return;
  const Outstanding o = it->second;
  outstanding_.erase(it);
  if (o.batch) {
    on_batch_outcome(now, o, std::move(result));
  } else {
    on_stream_close_outcome(now, o.op, std::move(result));
  }
  drive(now);
}

std::optional<Instant> ProducerClient::next_deadline() const {
  std::optional<Instant> when = core_.next_deadline();
  for (const StreamClose& c : stream_closes_) {
    if (c.retry_at) when = when ? std::min(*when, *c.retry_at) : *c.retry_at;
  }
  return when;
}

void ProducerClient::handle_timeout(Instant now) {
  core_.handle_timeout(now);
  for (StreamClose& c : stream_closes_) {
    if (c.retry_at && now >= *c.retry_at) send_stream_close(c);
  }
  drive(now);
}

std::optional<ClientEvent> ProducerClient::poll_event() {
  if (events_.empty()) return std::nullopt;
  ClientEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool ProducerClient::finished() const noexcept {
  return core_.state() == ProducerState::closed && stream_closes_.empty();
}

}  // namespace prodsm::ds
