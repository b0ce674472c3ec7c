// SPDX-License-Identifier: Apache-2.0
// Classification of responses by status *and* headers (S3–S7) into acknowledgements,
// results and Error values.
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/http/detail/text.hpp"
#include "prodsm/http/retry_after.hpp"

namespace prodsm::ds {
namespace {

using Ack = DurableStreamsPolicy::Ack;
using Fail = tl::unexpected<Error>;

/// Largest Retry-After (delta-seconds) taken into account: one day.
/// Bytes of the response body quoted in rejected/conflict messages.
constexpr std::size_t kBodyExcerptBytes = 200;

/// What was asked, for messages ("append: HTTP 409 Conflict: ...").
enum class Operation : std::uint8_t { append, close, create, head, read, remove };

std::string_view name_of(Operation op) noexcept {
  switch (op) {
    case Operation::append: return "append";
    case Operation::close: return "close";
    case Operation::create: return "create";
    case Operation::head: return "HEAD";
    case Operation::read: return "read";
    case Operation::remove: return "delete";
  }
  return "request";
}

/// A header's value, trimmed, if present.
std::optional<std::string_view> header(const Response& r, std::string_view name) {
  if (auto v = r.header(name)) return http::detail::trim_ows(*v);
  return std::nullopt;
}

/// True when the header is present with the value `true` (case-insensitive); any other
/// value counts as absent (PROTOCOL.md: Stream-Closed, Stream-Up-To-Date).
bool header_is_true(const Response& r, std::string_view name) {
  const auto v = header(r, name);
  return v && http::detail::iequals(*v, "true");
}

/// "append: HTTP 409 Conflict"
std::string status_prefix(Operation op, int status) {
  std::string m{name_of(op)};
  m += ": HTTP ";
  if (status < 0) {
    m += '-';
    http::detail::append_decimal(m, static_cast<std::uint64_t>(-static_cast<std::int64_t>(status)));
  } else {
    http::detail::append_decimal(m, static_cast<std::uint64_t>(status));
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

Error make(ErrorCode code, Certainty certainty, bool retryable, const Response& r, Operation op,
           std::string_view detail_text) {
  Error e = make_error(code, certainty, retryable, status_prefix(op, r.status));
  if (!detail_text.empty()) {
    e.message += ": ";
    e.message += detail_text;
  }
  e.http_status = (r.status >= 0 && r.status <= 0xFFFF) ? static_cast<std::uint16_t>(r.status) : 0;
  return e;
}

/// Adds up to kBodyExcerptBytes of the response body text to the message.
void add_body_excerpt(Error& e, const Response& r) {
  const std::string_view body = http::detail::trim_ows(r.body);
  if (body.empty()) return;
  e.message += "; server said \"";
  http::detail::append_excerpt(e.message, body, kBodyExcerptBytes);
  e.message += '"';
}

Error protocol_error(const Response& r, Operation op, std::string_view what) {
  return make(ErrorCode::protocol_error, Certainty::indefinite, false, r, op, what);
}

Error missing_header(const Response& r, Operation op, std::string_view name) {
  std::string what = "missing or empty ";
  what += name;
  what += " header";
  return protocol_error(r, op, what);
}

Error bad_number(const Response& r, Operation op, std::string_view name, std::string_view value) {
  std::string what{name};
  what += ": not a decimal number in 0..2^53-1: ";
  what += http::detail::quoted(value);
  return protocol_error(r, op, what);
}

/// A required, non-empty header (Stream-Next-Offset).
tl::expected<std::string, Error> required(const Response& r, Operation op, std::string_view name) {
  const auto v = header(r, name);
  if (!v || v->empty()) return Fail{missing_header(r, op, name)};
  return std::string{*v};
}

std::string optional_value(const Response& r, std::string_view name) {
  const auto v = header(r, name);
  return v ? std::string{*v} : std::string{};
}

/// The status-only error cases shared by every operation: 403 and other 4xx rejected,
/// 404/410 not_found, 408 request_timeout (indefinite, retryable), 409 conflict, 429/503
/// unavailable (definite, Retry-After), other 5xx unavailable (indefinite), anything else
/// protocol_error.
Error status_error(const Response& r, Operation op) {
  const int s = r.status;
  if (s == 404 || s == 410) {
    Error e = make(ErrorCode::not_found, Certainty::definite, false, r, op,
                   s == 404 ? "the stream does not exist" : "the stream is gone");
    return e;
  }
  if (s == 409) {
    Error e = make(ErrorCode::conflict, Certainty::definite, false, r, op, "conflict");
    add_body_excerpt(e, r);
    return e;
  }
  if (s == 429 || s == 503) {
    Error e = make(ErrorCode::unavailable, Certainty::definite, true, r, op,
                   s == 429 ? "rate limited" : "service unavailable");
    if (const auto after = http::retry_after(r)) {
      e.retry_after_ns = after->delay_ns;
      e.message += "; " + http::describe(*after);
    }
    return e;
  }
  // A read or a HEAD changes nothing (RFC 9110 section 9.2.1, safe methods): nothing of
  // it can have been applied, so its timeout or server error is definite.
  const bool safe = op == Operation::read || op == Operation::head;
  if (s == 408) {  // a proxy's or the server's request timeout: the body may have been applied (E2)
    return make(ErrorCode::request_timeout, safe ? Certainty::definite : Certainty::indefinite, true, r, op,
                safe ? "request timeout" : "request timeout; the request may have been applied");
  }
  if (s >= 500 && s <= 599) {
    return make(ErrorCode::unavailable, safe ? Certainty::definite : Certainty::indefinite, true, r, op,
                safe ? "server error" : "server error; the request may have been applied");
  }
  if (s >= 400 && s <= 499) {
    Error e = make(ErrorCode::rejected, Certainty::definite, false, r, op, "rejected");
    add_body_excerpt(e, r);
    return e;
  }
  std::string what = "unexpected status for ";
  what += name_of(op);
  return protocol_error(r, op, what);
}

/// The error cases of append and close: 403 with Producer-Epoch is a stale epoch (S5);
/// 409 is stream closed (S6, checked first), then sequence gap (S4), then conflict (E3).
Error producer_error(const Response& r, Operation op) {
  if (r.status == 403) {
    if (const auto epoch_text = header(r, "Producer-Epoch")) {
      const auto epoch = parse_protocol_number(*epoch_text);
      if (!epoch) return bad_number(r, op, "Producer-Epoch", *epoch_text);
      std::string what = "stale producer epoch; the server's epoch is ";
      http::detail::append_decimal(what, *epoch);
      Error e = make(ErrorCode::stale_epoch, Certainty::definite, false, r, op, what);
      e.server_epoch = *epoch;
      return e;
    }
  }
  if (r.status == 409) {
    if (header_is_true(r, "Stream-Closed")) {  // S6 first
      std::string final_offset = optional_value(r, "Stream-Next-Offset");
      std::string what = "the stream is closed";
      if (final_offset.empty()) {
        what += " (final offset unknown)";
      } else {
        what += "; final offset ";
        what += http::detail::quoted(final_offset);
      }
      Error e = make(ErrorCode::stream_closed, Certainty::definite, false, r, op, what);
      e.final_offset = std::move(final_offset);
      return e;
    }
    if (const auto expected_text = header(r, "Producer-Expected-Seq")) {  // S4
      const auto expected = parse_protocol_number(*expected_text);
      if (!expected) return bad_number(r, op, "Producer-Expected-Seq", *expected_text);
      std::uint64_t received = 0;
      std::string what = "producer sequence gap; the server expected seq ";
      http::detail::append_decimal(what, *expected);
      if (const auto received_text = header(r, "Producer-Received-Seq")) {
        const auto value = parse_protocol_number(*received_text);
        if (!value) return bad_number(r, op, "Producer-Received-Seq", *received_text);
        received = *value;
        what += ", received ";
        http::detail::append_decimal(what, received);
      }
      Error e = make(ErrorCode::sequence_gap, Certainty::definite, false, r, op, what);
      e.expected_seq = *expected;
      e.received_seq = received;
      return e;
    }
  }
  return status_error(r, op);
}

/// How a Producer-Seq echo must relate to the seq sent.
enum class SeqEcho : std::uint8_t { equal, at_least };

/// The echo of a sequenced 200/204 (Producer-Epoch, Producer-Seq) checked against what
/// was sent; an absent header is not checked.
std::optional<Error> echo_error(const Response& r, Operation op, const ProducerStamp& sent, SeqEcho rule) {
  if (const auto text = header(r, "Producer-Epoch")) {
    const auto epoch = parse_protocol_number(*text);
    if (!epoch) return bad_number(r, op, "Producer-Epoch", *text);
    if (*epoch != sent.epoch) {
      std::string what = "the acknowledgement's Producer-Epoch ";
      http::detail::append_decimal(what, *epoch);
      what += " is not the request's epoch ";
      http::detail::append_decimal(what, sent.epoch);
      return protocol_error(r, op, what);
    }
  }
  if (const auto text = header(r, "Producer-Seq")) {
    const auto seq = parse_protocol_number(*text);
    if (!seq) return bad_number(r, op, "Producer-Seq", *text);
    if (rule == SeqEcho::equal ? *seq != sent.seq : *seq < sent.seq) {
      std::string what = "the acknowledgement's Producer-Seq ";
      http::detail::append_decimal(what, *seq);
      what += rule == SeqEcho::equal ? " is not the request's seq " : " is below the request's seq ";
      http::detail::append_decimal(what, sent.seq);
      what += rule == SeqEcho::equal ? " (an append was acknowledged as another)"
                                     : " (a duplicate of a seq the server never accepted)";
      return protocol_error(r, op, what);
    }
  }
  return std::nullopt;
}

/// Runs a classifier; an allocation failure gives an internal error without text (D4).
template <typename T, typename Classify>
tl::expected<T, Error> guarded(Classify&& classify) noexcept {
  try {
    return classify();
  } catch (...) {
    Error e;
    e.code = ErrorCode::internal;
    e.certainty = Certainty::indefinite;
    return Fail{std::move(e)};
  }
}

}  // namespace

tl::expected<Ack, Error> classify_append(const Response& response, const std::optional<ProducerStamp>& sent) {
  return guarded<Ack>([&]() -> tl::expected<Ack, Error> {
    constexpr auto op = Operation::append;
    switch (response.status) {
      case 200: {  // appended (a producer append; a plain one on older servers)
        auto offset = required(response, op, "Stream-Next-Offset");
        if (!offset) return Fail{std::move(offset).error()};
        if (sent) {
          if (auto e = echo_error(response, op, *sent, SeqEcho::equal)) return Fail{std::move(*e)};
        }
        return Ack{std::move(*offset), false};
      }
      case 204: {
        if (sent) {  // S3: duplicate; the offset is sent only on a closed stream
          if (auto e = echo_error(response, op, *sent, SeqEcho::at_least)) return Fail{std::move(*e)};
          return Ack{optional_value(response, "Stream-Next-Offset"), true};
        }
        auto offset = required(response, op, "Stream-Next-Offset");
        if (!offset) return Fail{std::move(offset).error()};
        return Ack{std::move(*offset), false};
      }
      default: return Fail{producer_error(response, op)};
    }
  });
}

tl::expected<CreateResult, Error> classify_create(const Response& response) {
  return guarded<CreateResult>([&]() -> tl::expected<CreateResult, Error> {
    if (response.status == 201 || response.status == 200) {
      return CreateResult{response.status == 201, optional_value(response, "Stream-Next-Offset")};
    }
    return Fail{status_error(response, Operation::create)};
  });
}

tl::expected<CloseResult, Error> classify_close(const Response& response, const std::optional<ProducerStamp>& sent) {
  return guarded<CloseResult>([&]() -> tl::expected<CloseResult, Error> {
    if (response.status == 204 || response.status == 200) {
      // 200/204 both close, new or repeated: the seq echo is at least the one sent.
      if (sent) {
        if (auto e = echo_error(response, Operation::close, *sent, SeqEcho::at_least)) return Fail{std::move(*e)};
      }
      return CloseResult{optional_value(response, "Stream-Next-Offset")};
    }
    return Fail{producer_error(response, Operation::close)};
  });
}

tl::expected<HeadResult, Error> classify_head(const Response& response) {
  return guarded<HeadResult>([&]() -> tl::expected<HeadResult, Error> {
    constexpr auto op = Operation::head;
    if (response.status != 200) return Fail{status_error(response, op)};
    auto offset = required(response, op, "Stream-Next-Offset");
    if (!offset) return Fail{std::move(offset).error()};
    HeadResult result;
    result.content_type = optional_value(response, "Content-Type");
    result.next_offset = std::move(*offset);
    result.closed = header_is_true(response, "Stream-Closed");
    return result;
  });
}

tl::expected<ReadResult, Error> classify_read(const Response& response) {
  return guarded<ReadResult>([&]() -> tl::expected<ReadResult, Error> {
    constexpr auto op = Operation::read;
    if (response.status != 200) return Fail{status_error(response, op)};
    auto offset = required(response, op, "Stream-Next-Offset");
    if (!offset) return Fail{std::move(offset).error()};
    if (const auto coding = header(response, "Content-Encoding");
        coding && !coding->empty() && !http::detail::iequals(*coding, "identity")) {
      // The codec never sends Accept-Encoding, so it cannot decode what it did not ask for.
      return Fail{protocol_error(response, op, "unrequested Content-Encoding " + http::detail::quoted(*coding))};
    }
    ReadResult result;
    result.body = response.body;
    result.next_offset = std::move(*offset);
    result.up_to_date = header_is_true(response, "Stream-Up-To-Date");
    result.closed = header_is_true(response, "Stream-Closed");
    return result;
  });
}

tl::expected<void, Error> classify_delete(const Response& response) {
  try {
    if (response.status == 204 || response.status == 200) return {};
    return Fail{status_error(response, Operation::remove)};
  } catch (...) {
    Error e;
    e.code = ErrorCode::internal;
    e.certainty = Certainty::indefinite;
    return Fail{std::move(e)};
  }
}

}  // namespace prodsm::ds
