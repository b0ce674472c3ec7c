// SPDX-License-Identifier: Apache-2.0
#include "prodsm/error.hpp"

#include <utility>

namespace prodsm {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::closed: return "closed";
    case ErrorCode::aborted: return "aborted";
    case ErrorCode::delivery_timeout: return "delivery_timeout";
    case ErrorCode::invalid_ack: return "invalid_ack";
    case ErrorCode::internal: return "internal";
    case ErrorCode::would_block: return "would_block";
    case ErrorCode::invalid_record: return "invalid_record";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::connection_lost: return "connection_lost";
    case ErrorCode::condition_failed: return "condition_failed";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::sequence_gap: return "sequence_gap";
    case ErrorCode::stale_epoch: return "stale_epoch";
    case ErrorCode::stream_closed: return "stream_closed";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::rejected: return "rejected";
    case ErrorCode::protocol_error: return "protocol_error";
    case ErrorCode::tls_failed: return "tls_failed";
    case ErrorCode::header_provider_failed: return "header_provider_failed";
    case ErrorCode::request_timeout: return "request_timeout";
    case ErrorCode::sequence_exhausted: return "sequence_exhausted";
  }
  return "unknown";
}

std::string_view to_string(Certainty certainty) noexcept {
  return certainty == Certainty::definite ? "definite" : "indefinite";
}

std::string Error::describe() const {
  std::string out{to_string(code)};
  out += " (";
  out += to_string(certainty);
  if (retryable) out += ", retryable";
  out += ")";
  if (!message.empty()) {
    out += ": ";
    out += message;
  }
  return out;
}

Error make_error(ErrorCode code, Certainty certainty, bool retryable, std::string message) {
  Error e;
  e.code = code;
  e.certainty = certainty;
  e.retryable = retryable;
  e.message = std::move(message);
  return e;
}

}  // namespace prodsm
