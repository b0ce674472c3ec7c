// SPDX-License-Identifier: Apache-2.0
// s2::ProducerClient: the S2 producer between the core and the transport, once for
// every adapter. See client.hpp for what lives here.
#include "prodsm/s2/client.hpp"
#include "prodsm/http/request_fields.hpp"

#include <algorithm>
#include <utility>

namespace prodsm::s2 {
namespace {

using namespace std::chrono_literals;

}  // namespace

S2Config default_producer_config() {
  S2Config config;
  config.max_in_flight = 1;  // unary appends: one batch at a time unless sequenced (E4)
  return config;
}

http::TransportOptions default_transport_options() {
  http::TransportOptions options;
  options.stall.enabled = false;  // a raced resend of an applied append fails its condition
  return options;
}

RecordResult RecordsCompleted::record(Ticket ticket) const {
  if (!result) return tl::unexpected(result.error());
  return RecordAck{ticket, ticket.value - first.value, *result};
}

std::optional<std::string> validate(const ProducerOptions& o) {
  if (auto why = check_basin_name(o.endpoint.basin)) return "endpoint: " + *why;
  if (o.endpoint.host.empty()) return std::string{"endpoint: no host"};
  if (o.stream.empty()) return std::string{"stream: must not be empty"};
  RequestOptions request;
  request.access_token = o.access_token;
  request.extra_headers = o.extra_headers;
  if (auto why = check_request_target(o.endpoint, o.stream, request)) {
    // check_request_target names no field: attribute it.
    if (check_stream_name(o.stream)) return "stream: " + *why;
    // An empty token is sent as none (check_request_target skips it), so only a given one is the culprit.
    if (!o.access_token.empty() && check_access_token(o.access_token)) return "access_token: " + *why;
    for (const auto& h : o.extra_headers) {
      if (check_extra_header(h)) return "extra_headers: " + *why;
    }
    return "endpoint: " + *why;
  }
  if (auto why = http::check_extra_header_bounds(o.extra_headers)) return "extra_headers: " + *why;
  if (o.submit_timeout_ns.count() < 0 || o.submit_timeout_ns > 10min) {
    return "submit_timeout_ns: must be in 0..10 min (got " + std::to_string(o.submit_timeout_ns.count()) + " ns)";
  }
  if (o.max_pending_records < 1 || o.max_pending_records > (1U << 24)) {
    return "max_pending_records: must be in 1..16777216 (got " + std::to_string(o.max_pending_records) + ")";
  }
  if (auto why = o.session.validate()) return "session." + *why;
  if (auto e = S2Producer::validate(o.producer)) return "producer." + e->message();
  if (o.producer.max_in_flight > 1) {
    if (!o.producer.protocol.match_seq_num) {
      // E4: a second unsequenced append in flight could land before a retried first
      // one, and a maybe-applied failure could not be resent at all.
      return "producer.max_in_flight: more than one S2 append in flight needs producer.protocol.match_seq_num "
             "(got " +
             std::to_string(o.producer.max_in_flight) + " without it)";
    }
    if (o.session.mode != http::ConnectionMode::pipelined) {
      return std::string{
          "producer.max_in_flight: more than one S2 append in flight needs the pipelined connection mode "
          "(pooled connections race at the server)"};
    }
  }
  return std::nullopt;
}

std::optional<std::string> validate_attached(ProducerOptions options, const http::TransportOptions& session) {
  options.session = session;
  if (auto why = validate(options)) return why;
  if (options.producer.protocol.match_seq_num && session.stall.enabled) {
    return std::string{
        "session.stall.enabled: must be false for an S2 producer with match_seq_num (a stall resend of an append "
        "that landed would fail seq_num_mismatch)"};
  }
  return std::nullopt;
}

tl::expected<ProducerClient, std::string> ProducerClient::create(const ProducerOptions& options) {
  if (auto why = validate(options)) return tl::unexpected(std::move(*why));
  auto core = S2Producer::create(options.producer);
  if (!core) return tl::unexpected("producer." + core.error().message());
  return ProducerClient(options, std::move(*core));
}

ProducerClient::ProducerClient(ProducerOptions options, S2Producer core)
    : options_{std::move(options)}, core_{std::move(core)}, pending_{options_.max_pending_records} {
  request_options_.access_token = options_.access_token;
  request_options_.extra_headers = options_.extra_headers;
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

void ProducerClient::abort(Instant now) {
  core_.abort(now);
  drive(now);
}

void ProducerClient::on_delivered(Instant now, std::uint64_t records) {
  (void)now;
  if (pending_.on_delivered(records)) events_.emplace_back(CapacityAvailable{});  // R3
}

// ---- the drive rule ------------------------------------------------------------------------

/// Drains the core's actions into requests and events (the core's drive rule).
void ProducerClient::drive(Instant now) {
  while (auto action = core_.poll_action()) {
    std::visit(
        [&](auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, SendBatch<S2Policy>>) {
            // Encoded from the sealed body and stamp: byte-identical on every attempt (S1,
            // E4); the copy outlives the core's buffer recycling.
            auto request = encode_batch(options_.endpoint, options_.stream, a, options_.producer.protocol.record_format,
                                        request_options_);
            if (!request) {  // not reachable with validated options and checked records
              core_.handle_failure(now, a.batch, a.attempt,
                                   make_error(ErrorCode::internal, Certainty::definite, false,
                                              "append: the batch could not be encoded: " + request.error()));
              return;
            }
            const std::uint64_t tag = next_tag_++;
            outstanding_.emplace(tag, Outstanding{a.batch, a.attempt, a.stamp.match_seq_num});
            request->id = http::RequestId{tag};  // an http::Pool echoes it: the outcome finds its tag
            requests_.push_back(ClientRequest{tag, std::move(*request)});
          } else if constexpr (std::is_same_v<T, TicketsCompleted<S2Policy>>) {
            RecordsCompleted done{a.first, a.last, tl::unexpected(Error{})};
            latency_.completed(a.first, a.last, a.result.has_value(), now);
            if (a.result) {
              done.result = std::make_shared<const S2Policy::Ack>(*a.result);
            } else {
              annotate(a.result.error());
              done.result = tl::unexpected(std::move(a.result.error()));
            }
            events_.emplace_back(std::move(done));
          } else if constexpr (std::is_same_v<T, BarrierCompleted> || std::is_same_v<T, Closed>) {
            if (!a.result) annotate(a.result.error());
            events_.emplace_back(std::move(a));
          } else if constexpr (std::is_same_v<T, CapacityAvailable>) {
            events_.emplace_back(a);
          }
        },
        *action);
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

// ---- transport -----------------------------------------------------------------------------

std::optional<ClientRequest> ProducerClient::poll_request() {
  if (requests_.empty()) return std::nullopt;
  ClientRequest r = std::move(requests_.front());
  requests_.pop_front();
  return r;
}

void ProducerClient::handle_outcome(Instant now, std::uint64_t tag, tl::expected<http::Response, Error> result) {
  auto it = outstanding_.find(tag);
  if (it == outstanding_.end()) return;
  const Outstanding o = it->second;
  outstanding_.erase(it);
  if (!result) {
    last_failure_ = result.error();
    core_.handle_failure(now, o.batch, o.attempt, std::move(result.error()));
  } else if (auto ack = classify_append(*result, o.match_seq_num)) {  // S7: status, body and headers
    core_.handle_ack(now, o.batch, o.attempt, to_policy_ack(*ack));
  } else {
    last_failure_ = ack.error();
    core_.handle_failure(now, o.batch, o.attempt, std::move(ack.error()));
  }
  drive(now);
}

std::optional<Instant> ProducerClient::next_deadline() const {
  return core_.next_deadline();
}

void ProducerClient::handle_timeout(Instant now) {
  core_.handle_timeout(now);
  drive(now);
}

std::optional<ClientEvent> ProducerClient::poll_event() {
  if (events_.empty()) return std::nullopt;
  ClientEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool ProducerClient::finished() const noexcept {
  return core_.state() == ProducerState::closed;
}

}  // namespace prodsm::s2
