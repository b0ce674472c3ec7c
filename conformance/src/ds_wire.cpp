// SPDX-License-Identifier: Apache-2.0
// The simulated server's answers on the Durable Streams wire (ds_wire.hpp).
#include "ds_wire.hpp"

#include <chrono>

#include "prodsm/durable_streams.hpp"

namespace prodsm::conformance::detail {
namespace {

http::Response status(int code) {
  http::Response r;
  r.status = code;
  return r;
}

void add(http::Response& r, std::string name, std::string value) {
  r.headers.push_back(http::Header{std::move(name), std::move(value)});
}

void echo(http::Response& r, const PendingSend& sent) {
  if (!sent.stamp.sequenced) return;
  add(r, "Producer-Epoch", std::to_string(sent.stamp.epoch));
  add(r, "Producer-Seq", std::to_string(sent.stamp.seq));
}

}  // namespace

std::optional<WireAnswer> ds_wire_answer(const Response& response, const PendingSend& sent, std::string* why) {
  if (response.kind == Response::Kind::ack) {
    if (sent.stream_close) {
      http::Response r = status(204);
      add(r, "Stream-Closed", "true");
      if (!response.ack.next_offset.empty()) add(r, "Stream-Next-Offset", response.ack.next_offset);
      return WireAnswer{std::move(r)};
    }
    if (response.invalid && response.ack.next_offset.empty()) {
      if (why) {
        *why =
            "invalid_ack(wrong_count): on the wire an acknowledgement without Stream-Next-Offset is a malformed "
            "response, classified protocol_error (S7) before any acknowledgement reaches the core";
      }
      return std::nullopt;
    }
    if (response.ack.duplicate) {
      http::Response r = status(204);
      echo(r, sent);
      return WireAnswer{std::move(r)};
    }
    http::Response r = status(200);
    if (!response.ack.next_offset.empty()) add(r, "Stream-Next-Offset", response.ack.next_offset);
    echo(r, sent);
    return WireAnswer{std::move(r)};
  }
  const Error& e = response.error;
  switch (e.code) {
    case ErrorCode::connection_lost:
    case ErrorCode::request_timeout:
    case ErrorCode::protocol_error: return WireAnswer{tl::unexpected(e)};
    case ErrorCode::unavailable: {
      http::Response r = status(503);
      if (e.retry_after_ns) {
        const auto s = std::chrono::ceil<std::chrono::seconds>(*e.retry_after_ns).count();
        add(r, "Retry-After", std::to_string(s));
      }
      return WireAnswer{std::move(r)};
    }
    case ErrorCode::sequence_gap: {
      http::Response r = status(409);
      add(r, "Producer-Expected-Seq", std::to_string(e.expected_seq));
      add(r, "Producer-Received-Seq", std::to_string(e.received_seq));
      return WireAnswer{std::move(r)};
    }
    case ErrorCode::stale_epoch: {
      if (e.server_epoch > DurableStreamsPolicy::kMaxSequenceValue) {
        if (why) *why = "fail(stale_epoch) naming an epoch above 2^53-1: no Durable Streams server can send it";
        return std::nullopt;
      }
      http::Response r = status(403);
      add(r, "Producer-Epoch", std::to_string(e.server_epoch));
      return WireAnswer{std::move(r)};
    }
    case ErrorCode::stream_closed: {
      http::Response r = status(409);
      add(r, "Stream-Closed", "true");
      if (!e.final_offset.empty()) add(r, "Stream-Next-Offset", e.final_offset);
      return WireAnswer{std::move(r)};
    }
    case ErrorCode::conflict: return WireAnswer{status(409)};
    case ErrorCode::rejected: return WireAnswer{status(400)};
    case ErrorCode::not_found: return WireAnswer{status(404)};
    default:
      if (why) *why = "fail(" + std::string(to_string(e.code)) + "): no Durable Streams server answers with it";
      return std::nullopt;
  }
}

}  // namespace prodsm::conformance::detail
