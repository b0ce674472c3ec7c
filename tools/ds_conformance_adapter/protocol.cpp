// SPDX-License-Identifier: Apache-2.0
#include "protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace prodsm::tools::dsconf {
namespace {

bool contains_ignoring_case(std::string_view text, std::string_view word) {
  auto it = std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

std::string_view code_for(const Error& e, Operation op) {
  switch (e.code) {
    case ErrorCode::stream_closed: return codes::kStreamClosed;
    case ErrorCode::sequence_gap: return codes::kSequenceConflict;
    case ErrorCode::conflict:
      // The server's body says "Sequence conflict" for a Stream-Seq regression and
      // "Content-type mismatch" / "already exists ..." otherwise (as the TS adapter reads it).
      return contains_ignoring_case(e.message, "sequence") ? codes::kSequenceConflict : codes::kConflict;
    case ErrorCode::not_found: return codes::kNotFound;
    case ErrorCode::rejected:
      return op == Operation::read && e.http_status == 400 ? codes::kInvalidOffset : codes::kUnexpectedStatus;
    case ErrorCode::stale_epoch: return codes::kUnexpectedStatus;
    case ErrorCode::unavailable: return e.http_status != 0 ? codes::kUnexpectedStatus : codes::kNetworkError;
    case ErrorCode::tls_failed: return codes::kNetworkError;
    case ErrorCode::connection_lost:
      return contains_ignoring_case(e.message, "timeout") || contains_ignoring_case(e.message, "timed out")
                 ? codes::kTimeout
                 : codes::kNetworkError;
    case ErrorCode::protocol_error:
    case ErrorCode::invalid_ack: return codes::kParseError;
    case ErrorCode::request_timeout:
    case ErrorCode::delivery_timeout:
    case ErrorCode::would_block: return codes::kTimeout;
    case ErrorCode::invalid_record: return codes::kInvalidArgument;
    case ErrorCode::condition_failed: return codes::kConflict;
    case ErrorCode::header_provider_failed:
    case ErrorCode::sequence_exhausted:
    case ErrorCode::closed:
    case ErrorCode::aborted:
    case ErrorCode::cancelled:
    case ErrorCode::internal: return codes::kInternalError;
  }
  return codes::kInternalError;
}

[[noreturn]] void wrong_type(std::string_view field, std::string_view what) {
  throw ArgumentError(std::string(field) + ": must be " + std::string(what));
}

const Json* field_of(const Json& command, std::string_view field) {
  auto it = command.find(field);
  if (it == command.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

Json success(std::string_view type, int status) {
  Json r;
  r["type"] = type;
  r["success"] = true;
  if (status != 0) r["status"] = status;
  return r;
}

Json error_result(std::string_view command_type, std::string_view error_code, std::string message, int status,
                  Json details) {
  Json r;
  r["type"] = "error";
  r["success"] = false;
  r["commandType"] = command_type;
  if (status != 0) r["status"] = status;
  r["errorCode"] = error_code;
  r["message"] = std::move(message);
  if (!details.is_null()) r["details"] = std::move(details);
  return r;
}

Json error_result(std::string_view command_type, const Error& error, Operation op) {
  Json details;
  details["prodsmCode"] = to_string(error.code);
  details["certainty"] = to_string(error.certainty);
  details["retryable"] = error.retryable;
  if (error.code == ErrorCode::stale_epoch) details["producerEpoch"] = error.server_epoch;
  if (error.code == ErrorCode::sequence_gap) {
    details["producerExpectedSeq"] = error.expected_seq;
    details["producerReceivedSeq"] = error.received_seq;
  }
  if (error.code == ErrorCode::stream_closed && !error.final_offset.empty()) {
    details["finalOffset"] = error.final_offset;
  }
  int status = error.http_status;
  if (status == 0 && error.code == ErrorCode::stream_closed) status = 409;
  return error_result(command_type, code_for(error, op), error.describe(), status, std::move(details));
}

std::string required_string(const Json& command, std::string_view field) {
  const Json* v = field_of(command, field);
  if (v == nullptr) throw ArgumentError(std::string(field) + ": required");
  if (!v->is_string()) wrong_type(field, "a string");
  return v->get<std::string>();
}

std::optional<std::string> optional_string(const Json& command, std::string_view field) {
  const Json* v = field_of(command, field);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(field, "a string");
  return v->get<std::string>();
}

std::optional<bool> optional_bool(const Json& command, std::string_view field) {
  const Json* v = field_of(command, field);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(field, "a boolean");
  return v->get<bool>();
}

std::optional<std::int64_t> optional_integer(const Json& command, std::string_view field, std::int64_t min,
                                             std::int64_t max) {
  const Json* v = field_of(command, field);
  if (v == nullptr) return std::nullopt;
  const std::string range = " in " + std::to_string(min) + ".." + std::to_string(max);
  std::int64_t value = 0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) throw ArgumentError(std::string(field) + ": must be an integer" + range);
    value = static_cast<std::int64_t>(u);
  } else if (v->is_number_integer()) {
    value = v->get<std::int64_t>();
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || d < static_cast<double>(min) || d > static_cast<double>(max)) {
      throw ArgumentError(std::string(field) + ": must be an integer" + range);
    }
    value = static_cast<std::int64_t>(d);
  } else {
    wrong_type(field, "a number");
  }
  if (value < min || value > max) throw ArgumentError(std::string(field) + ": must be an integer" + range);
  return value;
}

std::vector<std::pair<std::string, std::string>> string_map(const Json& command, std::string_view field) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json* v = field_of(command, field);
  if (v == nullptr) return out;
  if (!v->is_object()) wrong_type(field, "an object of strings");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_string()) throw ArgumentError(std::string(field) + "." + it.key() + ": must be a string");
    out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

std::string serialize_line(const Json& result) {
  std::string line = result.dump(-1, ' ', false, Json::error_handler_t::replace);
  // U+2028 / U+2029 (E2 80 A8 / E2 80 A9) only occur inside strings of the dump.
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (i + 2 < line.size() && line[i] == '\xE2' && line[i + 1] == '\x80' &&
        (line[i + 2] == '\xA8' || line[i + 2] == '\xA9')) {
      out += line[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += line[i];
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(bytes[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace prodsm::tools::dsconf
