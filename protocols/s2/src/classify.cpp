// SPDX-License-Identifier: Apache-2.0
// Classification of S2 responses by status *and* body and headers (S7) into acks,
// results and Error values. JSON bodies are read with simdjson's DOM parser.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "prodsm/http/detail/text.hpp"
#include "prodsm/http/retry_after.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace prodsm::s2 {
namespace text = http::detail;
namespace {

using Fail = tl::unexpected<Error>;

/// Largest retry-after taken into account: one day.
constexpr auto kMaxRetryAfterMs =
    static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(http::kMaxRetryAfter).count());
/// Bytes of a body quoted in messages.
constexpr std::size_t kExcerptBytes = 200;

/// How S2 says an error may be treated (s2 `api/src/v1/error.rs`: is_retryable,
/// has_no_side_effects).
enum class Kind : std::uint8_t {
  retry_nothing_applied,  ///< retryable, no side effects
  retry_maybe_applied,    ///< retryable, may have been applied
  terminal_definite,      ///< not retryable, no side effects
  terminal_indefinite,    ///< not retryable, may have been applied
};

struct KnownCode {
  std::string_view code;
  int status;
  Kind kind;
  ErrorCode mapped;
};

/// Every code of s2 `api/src/v1/error.rs` (ErrorCode, alphabetical), its status, and its
/// treatment (is_retryable x has_no_side_effects).
constexpr std::array<KnownCode, 28> kCodes = {{
    {"access_token_not_found", 404, Kind::terminal_definite, ErrorCode::not_found},
    {"authn", 401, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_frame", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_header", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_json", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_path", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_proto", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"bad_query", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"basin_deletion_pending", 409, Kind::terminal_definite, ErrorCode::not_found},
    {"basin_not_found", 404, Kind::terminal_definite, ErrorCode::not_found},
    {"client_hangup", 499, Kind::terminal_indefinite, ErrorCode::connection_lost},
    {"decryption_failed", 400, Kind::terminal_definite, ErrorCode::rejected},
    {"hot_server", 502, Kind::retry_nothing_applied, ErrorCode::unavailable},
    {"invalid", 422, Kind::terminal_definite, ErrorCode::rejected},
    {"not_implemented", 501, Kind::terminal_definite, ErrorCode::rejected},
    {"other", 500, Kind::retry_maybe_applied, ErrorCode::unavailable},
    {"permission_denied", 403, Kind::terminal_definite, ErrorCode::rejected},
    {"quota_exhausted", 403, Kind::terminal_definite, ErrorCode::rejected},
    {"rate_limited", 429, Kind::retry_nothing_applied, ErrorCode::unavailable},
    {"request_timeout", 408, Kind::retry_maybe_applied, ErrorCode::request_timeout},
    {"resource_already_exists", 409, Kind::terminal_definite, ErrorCode::conflict},
    {"server_draining", 503, Kind::retry_nothing_applied, ErrorCode::unavailable},
    {"storage", 500, Kind::retry_maybe_applied, ErrorCode::unavailable},
    {"stream_deletion_pending", 409, Kind::terminal_definite, ErrorCode::not_found},
    {"stream_not_found", 404, Kind::terminal_definite, ErrorCode::not_found},
    {"transaction_conflict", 409, Kind::retry_nothing_applied, ErrorCode::unavailable},
    {"unavailable", 503, Kind::retry_maybe_applied, ErrorCode::unavailable},
    {"upstream_timeout", 504, Kind::retry_maybe_applied, ErrorCode::unavailable},
}};

const KnownCode* find_code(std::string_view code) noexcept {
  for (const KnownCode& k : kCodes) {
    if (k.code == code) return &k;
  }
  return nullptr;
}

/// A parsed JSON body (only what the classifiers read).
struct Body {
  bool object = false;  // the body is a JSON object
  std::optional<std::string> code;
  std::optional<std::string> message;
  bool has_seq_num_mismatch = false;
  std::optional<std::uint64_t> seq_num_mismatch;  // absent when not an unsigned integer
  bool has_fencing_token_mismatch = false;
  std::optional<std::string> fencing_token_mismatch;  // absent when not a string
};

/// The object `value` as a StreamPosition (`{"seq_num": u64, "timestamp": u64}`).
std::optional<StreamPosition> position_of(simdjson::dom::element value) {
  simdjson::dom::object object;
  if (value.get(object) != simdjson::SUCCESS) return std::nullopt;
  StreamPosition p;
  bool seq = false;
  for (const simdjson::dom::key_value_pair field : object) {
    if (field.key == "seq_num") {
      if (field.value.get(p.seq_num) != simdjson::SUCCESS) return std::nullopt;
      seq = true;
    } else if (field.key == "timestamp") {
      if (field.value.get(p.timestamp) != simdjson::SUCCESS) return std::nullopt;
    }
  }
  if (!seq) return std::nullopt;
  return p;
}

/// Parses `text` as one JSON document; false when it is not JSON (or memory ran out).
bool parse_json(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::element& doc) {
  const simdjson::padded_string padded(text);
  return parser.parse(padded).get(doc) == simdjson::SUCCESS;
}

Body parse_body(std::string_view text) {
  Body b;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (!parse_json(parser, text, doc)) return b;
  simdjson::dom::object object;
  if (doc.get(object) != simdjson::SUCCESS) return b;
  b.object = true;
  for (const simdjson::dom::key_value_pair field : object) {
    std::string_view s;
    if (field.key == "code") {
      if (field.value.get(s) == simdjson::SUCCESS) b.code = std::string{s};
    } else if (field.key == "message") {
      if (field.value.get(s) == simdjson::SUCCESS) b.message = std::string{s};
    } else if (field.key == "seq_num_mismatch") {
      b.has_seq_num_mismatch = true;
      std::uint64_t n = 0;
      if (field.value.get(n) == simdjson::SUCCESS) b.seq_num_mismatch = n;
    } else if (field.key == "fencing_token_mismatch") {
      b.has_fencing_token_mismatch = true;
      if (field.value.get(s) == simdjson::SUCCESS) b.fencing_token_mismatch = std::string{s};
    }
  }
  return b;
}

std::uint16_t status_field(int status) noexcept {
  return (status >= 0 && status <= 0xFFFF) ? static_cast<std::uint16_t>(status) : 0;
}

/// "append: HTTP 412 Precondition Failed"
std::string status_prefix(std::string_view operation, int status) {
  std::string m{operation};
  m += ": HTTP ";
  if (status < 0) {
    m += '-';
    text::append_decimal(m, static_cast<std::uint64_t>(-static_cast<std::int64_t>(status)));
  } else {
    text::append_decimal(m, static_cast<std::uint64_t>(status));
  }
  if (status >= 100 && status <= 599) {
    const std::string_view reason = http::reason_phrase(status);
    if (reason != "<unknown>") {
      m += ' ';
      m += reason;
    }
  }
  return m;
}

Error make(ErrorCode code, Certainty certainty, bool retryable, const http::Response& r, std::string_view operation,
           std::string_view detail_text) {
  Error e = make_error(code, certainty, retryable, status_prefix(operation, r.status));
  if (!detail_text.empty()) {
    e.message += ": ";
    e.message += detail_text;
  }
  e.http_status = status_field(r.status);
  return e;
}

void add_excerpt(Error& e, std::string_view body) {
  body = text::trim_ows(body);
  if (body.empty()) return;
  e.message += "; server said \"";
  text::append_excerpt(e.message, body, kExcerptBytes);
  e.message += '"';
}

std::optional<std::uint64_t> parse_decimal(std::string_view s, std::size_t max_digits) noexcept {
  s = text::trim_ows(s);
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

/// retry-after-ms (decimal ms; s2 `sdk/src/api.rs`), else Retry-After (http::retry_after:
/// delay-seconds or an HTTP-date); either capped at http::kMaxRetryAfter.
void add_retry_after(Error& e, const http::Response& r) {
  if (const auto ms_text = r.header("retry-after-ms")) {
    if (const auto ms = parse_decimal(*ms_text, 12)) {
      const std::uint64_t taken = std::min(*ms, kMaxRetryAfterMs);
      e.retry_after_ns = std::chrono::milliseconds{static_cast<std::int64_t>(taken)};
      e.message += "; retry-after-ms ";
      text::append_decimal(e.message, taken);
      if (taken < *ms) e.message += " (capped: the server asked for longer)";
      return;
    }
  }
  if (const auto after = http::retry_after(r)) {
    e.retry_after_ns = after->delay_ns;
    e.message += "; " + http::describe(*after);
  }
}

bool retryable_status(int s) noexcept {
  return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

/// A 412: the append's condition failed; nothing was appended (E3). With the append's
/// `match_seq_num` and a stream that ends below it, an append sent before this one did
/// not land: a sequence gap (S4), resolvable behind the appends before it.
Error condition_failed(const http::Response& r, std::string_view operation, const Body& body,
                       std::optional<std::uint64_t> match_seq_num) {
  if (body.has_seq_num_mismatch) {
    std::string what = "seq_num_mismatch: match_seq_num did not match; the stream's next seq_num is ";
    if (body.seq_num_mismatch) {
      text::append_decimal(what, *body.seq_num_mismatch);
    } else {
      what += "(not an unsigned integer)";
    }
    const bool gap = body.seq_num_mismatch && match_seq_num && *body.seq_num_mismatch < *match_seq_num;
    if (gap) {
      what += ", below this append's match_seq_num ";
      text::append_decimal(what, *match_seq_num);
      what += ": an append sent before it did not land";
    }
    Error e = make(gap ? ErrorCode::sequence_gap : ErrorCode::condition_failed, Certainty::definite, false, r,
                   operation, what);
    if (body.seq_num_mismatch) e.expected_seq = *body.seq_num_mismatch;
    if (gap) e.received_seq = *match_seq_num;
    return e;
  }
  if (body.has_fencing_token_mismatch) {
    std::string what = "fencing_token_mismatch: the stream's fencing token is ";
    if (body.fencing_token_mismatch) {
      what += text::quoted(*body.fencing_token_mismatch);
    } else {
      what += "(not a string)";
    }
    return make(ErrorCode::condition_failed, Certainty::definite, false, r, operation, what);
  }
  Error e = make(ErrorCode::condition_failed, Certainty::definite, false, r, operation,
                 "append condition failed (unrecognised body)");
  add_excerpt(e, r.body);
  return e;
}

/// By status alone, for an unknown code or a body that is not S2's JSON; `retryable`
/// only where the status allows it.
Error by_status(const http::Response& r, std::string_view operation, std::string_view what, bool allow_retry) {
  const int s = r.status;
  if (retryable_status(s)) {
    const ErrorCode code = s == 408 ? ErrorCode::request_timeout : ErrorCode::unavailable;
    if (allow_retry) {
      return make(code, Certainty::indefinite, true, r, operation,
                  std::string{what} + "; retryable, the request may have been applied");
    }
    return make(code, Certainty::indefinite, false, r, operation,
                std::string{what} + "; not retried: the code does not belong to this status");
  }
  if (s == 404 || s == 410) return make(ErrorCode::not_found, Certainty::indefinite, false, r, operation, what);
  if (s == 409) return make(ErrorCode::conflict, Certainty::indefinite, false, r, operation, what);
  if (s >= 400 && s <= 499) return make(ErrorCode::rejected, Certainty::indefinite, false, r, operation, what);
  if (s >= 500 && s <= 599) return make(ErrorCode::unavailable, Certainty::indefinite, false, r, operation, what);
  return make(ErrorCode::protocol_error, Certainty::indefinite, false, r, operation,
              std::string{what} + "; unexpected status");
}

Error classify_error_impl(const http::Response& r, std::string_view operation,
                          std::optional<std::uint64_t> match_seq_num) {
  const Body body = parse_body(r.body);
  if (r.status == 412) return condition_failed(r, operation, body, match_seq_num);
  Error e;
  if (body.code) {
    std::string what = *body.code;
    if (body.message) {
      what += ": ";
      text::append_excerpt(what, *body.message, kExcerptBytes);
    }
    const KnownCode* known = find_code(*body.code);
    if (known != nullptr && known->status == r.status) {
      switch (known->kind) {
        case Kind::retry_nothing_applied:
          e = make(known->mapped, Certainty::definite, true, r, operation, what + "; retryable, nothing was applied");
          break;
        case Kind::retry_maybe_applied:
          e = make(known->mapped, Certainty::indefinite, true, r, operation,
                   what + "; retryable, the request may have been applied");
          break;
        case Kind::terminal_definite: e = make(known->mapped, Certainty::definite, false, r, operation, what); break;
        case Kind::terminal_indefinite:
          e = make(known->mapped, Certainty::indefinite, false, r, operation, what);
          break;
      }
    } else if (known != nullptr) {
      e = by_status(r, operation, what + " (a code of status " + std::to_string(known->status) + ")", false);
    } else {
      e = by_status(r, operation, what + " (unknown code)", true);
    }
  } else {
    e = by_status(r, operation, body.object ? "JSON error body without a code" : "error body is not S2's JSON", true);
    add_excerpt(e, r.body);
  }
  if (e.retryable) add_retry_after(e, r);
  return e;
}

/// Content-Encoding other than identity: never asked for (no Accept-Encoding is sent).
bool unrequested_encoding(const http::Response& r) {
  const auto v = r.header("Content-Encoding");
  return v && !text::trim_ows(*v).empty() && !text::iequals(text::trim_ows(*v), "identity");
}

bool is_json(const http::Response& r) {
  const auto v = r.header("Content-Type");
  if (!v) return false;
  const std::string_view media = text::trim_ows(v->substr(0, v->find(';')));
  constexpr std::string_view kSuffix = "+json";
  return text::iequals(media, "application/json") ||
         (media.size() > kSuffix.size() && text::iequals(media.substr(media.size() - kSuffix.size()), kSuffix));
}

Error protocol_error(const http::Response& r, std::string_view operation, std::string_view what) {
  return make(ErrorCode::protocol_error, Certainty::indefinite, false, r, operation, what);
}

/// A 200 JSON AppendAck: `{"start": pos, "end": pos, "tail": pos}`.
tl::expected<AppendAck, Error> json_ack(const http::Response& r) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (!parse_json(parser, r.body, doc)) return Fail{protocol_error(r, "append", "AppendAck: body is not JSON")};
  AppendAck ack;
  bool start = false, end = false, tail = false;
  simdjson::dom::object object;
  if (doc.get(object) != simdjson::SUCCESS) return Fail{protocol_error(r, "append", "AppendAck: not a JSON object")};
  for (const simdjson::dom::key_value_pair field : object) {
    StreamPosition* into = nullptr;
    bool* seen = nullptr;
    if (field.key == "start") into = &ack.start, seen = &start;
    if (field.key == "end") into = &ack.end, seen = &end;
    if (field.key == "tail") into = &ack.tail, seen = &tail;
    if (into == nullptr) continue;
    const auto p = position_of(field.value);
    if (!p) return Fail{protocol_error(r, "append", "AppendAck: a position is not {seq_num, timestamp}")};
    *into = *p;
    *seen = true;
  }
  if (!start || !end) return Fail{protocol_error(r, "append", "AppendAck: start or end missing")};
  if (!tail) ack.tail = ack.end;
  return ack;
}

template <typename F>
auto guarded(const http::Response& r, std::string_view operation, F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    Error e = make_error(ErrorCode::internal, Certainty::indefinite, false,
                         std::string{operation} + ": out of memory while classifying the response");
    e.http_status = status_field(r.status);
    return Fail{std::move(e)};
  }
}

/// classify_error, with the append's match_seq_num when there is one (S4 on a 412).
Error classify_error_for(const http::Response& response, std::string_view operation,
                         std::optional<std::uint64_t> match_seq_num) {
  try {
    return classify_error_impl(response, operation, match_seq_num);
  } catch (...) {
    Error e;  // no memory for a message: the bare classification by status
    e.code = retryable_status(response.status) ? ErrorCode::unavailable : ErrorCode::rejected;
    e.certainty = Certainty::indefinite;
    e.retryable = retryable_status(response.status);
    e.http_status = status_field(response.status);
    return e;
  }
}

}  // namespace

Error classify_error(const http::Response& response, std::string_view operation) {
  return classify_error_for(response, operation, std::nullopt);
}

tl::expected<AppendAck, Error> classify_append(const http::Response& response,
                                               std::optional<std::uint64_t> match_seq_num) {
  return guarded(response, "append", [&]() -> tl::expected<AppendAck, Error> {
    const int s = response.status;
    if (s == 200) {
      if (unrequested_encoding(response)) {
        return Fail{protocol_error(response, "append", "unrequested Content-Encoding")};
      }
      if (is_json(response)) return json_ack(response);
      auto ack = decode_append_ack(response.body);
      if (!ack) {
        Error e = std::move(ack.error());
        e.message = status_prefix("append", s) + ": " + e.message;
        e.http_status = status_field(s);
        return Fail{std::move(e)};
      }
      return *ack;
    }
    if ((s >= 100 && s < 200) || (s >= 201 && s < 400)) {
      return Fail{protocol_error(response, "append", "unexpected status; the batch may have been appended")};
    }
    return Fail{classify_error_for(response, "append", match_seq_num)};  // a 412 below match_seq_num: S4
  });
}

tl::expected<ReadResult, Error> classify_read(const http::Response& response) {
  return guarded(response, "read", [&]() -> tl::expected<ReadResult, Error> {
    const int s = response.status;
    if (s == 200) {
      if (unrequested_encoding(response)) return Fail{protocol_error(response, "read", "unrequested Content-Encoding")};
      auto batch = decode_read_batch(response.body);
      if (!batch) {
        Error e = std::move(batch.error());
        e.message = status_prefix("read", s) + ": " + e.message;
        e.http_status = status_field(s);
        return Fail{std::move(e)};
      }
      return ReadResult{std::move(*batch), std::nullopt};
    }
    if (s == 416) {
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      simdjson::dom::element tail;
      if (parse_json(parser, response.body, doc) && doc["tail"].get(tail) == simdjson::SUCCESS) {
        if (const auto p = position_of(tail)) return ReadResult{{}, *p};
      }
      return Fail{classify_error(response, "read")};
    }
    return Fail{classify_error(response, "read")};
  });
}

tl::expected<StreamPosition, Error> classify_check_tail(const http::Response& response) {
  return guarded(response, "check tail", [&]() -> tl::expected<StreamPosition, Error> {
    if (response.status != 200) return Fail{classify_error(response, "check tail")};
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::element tail;
    if (parse_json(parser, response.body, doc) && doc["tail"].get(tail) == simdjson::SUCCESS) {
      if (const auto p = position_of(tail)) return *p;
    }
    return Fail{protocol_error(response, "check tail", "body is not {\"tail\": {\"seq_num\", \"timestamp\"}}")};
  });
}

tl::expected<bool, Error> classify_create_stream(const http::Response& response) {
  return guarded(response, "create stream", [&]() -> tl::expected<bool, Error> {
    if (response.status == 201) return true;
    Error e = classify_error(response, "create stream");
    if (response.status == 409 && e.code == ErrorCode::conflict && e.certainty == Certainty::definite) return false;
    return Fail{std::move(e)};
  });
}

}  // namespace prodsm::s2
