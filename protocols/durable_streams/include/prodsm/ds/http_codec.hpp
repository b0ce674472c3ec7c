// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file http_codec.hpp
/// The Durable Streams wire codec over HTTP/1.1, sans-IO: it encodes requests into
/// bytes, parses response bytes (prodsm::http::ResponseParser) and classifies responses by
/// status *and* headers (S7) into the Producer core's events. No sockets, no clock.
/// Source: PROTOCOL.md of durable-streams/durable-streams (create, append, idempotent
/// producers, close, read, head, delete).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/durable_streams_policy.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/message.hpp"
#include "prodsm/http/response_parser.hpp"
#include "prodsm/time.hpp"

namespace prodsm::ds {

// ---- URLs and headers --------------------------------------------------------------

/// A parsed `http[s]://host[:port]/path` stream URL.
struct StreamUrl {
  std::string host;         ///< host name or IPv4 literal (IPv6 literal without brackets)
  std::uint16_t port = 80;  ///< TCP port (default 80, 443 for https)
  std::string path;         ///< request target path, starting with '/', as given (no query)
  bool tls = false;         ///< https://: every connection runs TLS (prodsm/http/tls.hpp)

  /// Parses `url`. Errors name what was wrong: "only http:// and https:// URLs are supported",
  /// "missing host", "bad port", "URL contains a query or fragment", ...
  static tl::expected<StreamUrl, std::string> parse(std::string_view url);
  /// `host` or `host:port` when the port is not the scheme's default (IPv6 hosts in
  /// brackets).
  [[nodiscard]] std::string authority() const;
  /// `http[s]://authority/path`.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const StreamUrl&, const StreamUrl&) = default;
};

/// One HTTP header (prodsm/http/message.hpp).
using Header = http::Header;
/// Header fields in order; duplicates are kept.
using Headers = http::Headers;

/// Why `name: value` cannot be sent as a caller-supplied header: empty or non-token
/// name, a control character (CR, LF, NUL, ...; HTAB is allowed) in the value, or a name
/// the codec manages itself or that would change framing or encoding (Host,
/// Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, Trailer,
/// Expect, Accept-Encoding, Content-Type, Producer-*, Stream-Closed, Stream-Seq,
/// Stream-TTL, Stream-Expires-At).
std::optional<std::string> check_extra_header(const Header& header);

// ---- requests ---------------------------------------------------------------------
// The encoders never throw; they return an empty string only when memory ran out.

/// What every request carries besides its own headers.
struct RequestOptions {
  Headers extra_headers;   ///< e.g. Authorization; one check_extra_header refuses is not sent
  bool keep_alive = true;  ///< false: `Connection: close`
};

/// The idempotent producer's headers (S2): all three or none.
struct ProducerHeaders {
  std::string_view producer_id;  ///< Producer-Id
  std::uint64_t epoch = 0;       ///< Producer-Epoch, 0..2^53-1
  std::uint64_t seq = 0;         ///< Producer-Seq, 0..2^53-1
};

/// Options of PUT (create).
struct CreateOptions {
  std::optional<std::uint64_t> ttl_seconds;  ///< Stream-TTL
  std::optional<std::string> expires_at;     ///< Stream-Expires-At (RFC 3339)
  bool closed = false;                       ///< create already closed (Stream-Closed: true)
};

/// Options of POST (append / close).
struct AppendOptions {
  std::optional<ProducerHeaders> producer;  ///< producer headers (sequenced append)
  std::optional<std::string> stream_seq;    ///< Stream-Seq (writer coordination)
  bool close_stream = false;                ///< Stream-Closed: true (close, with or without body)
};

/// The request head for PUT `url` creating a stream of `content_type`; no body.
std::string encode_create(const StreamUrl& url, std::string_view content_type, const CreateOptions& create,
                          const RequestOptions& options);
/// The request head for POST `url` with a `body_bytes`-byte body of `content_type`.
/// The caller sends the body bytes right after the head (no copy is made).
std::string encode_append(const StreamUrl& url, std::string_view content_type, std::size_t body_bytes,
                          const AppendOptions& append, const RequestOptions& options);
/// The request head for a batch the Producer core asked to send (SendBatch): producer
/// headers from the stamp when it is sequenced.
std::string encode_batch(const StreamUrl& url, std::string_view content_type, std::size_t body_bytes,
                         const DurableStreamsPolicy::Stamp& stamp, std::string_view producer_id,
                         const RequestOptions& options);
/// The request for POST `url` closing the stream with an empty body
/// (Stream-Closed: true, Content-Length: 0), optionally sequenced.
std::string encode_close(const StreamUrl& url, std::string_view content_type,
                         const std::optional<ProducerHeaders>& producer, const RequestOptions& options);
/// The request for HEAD `url`.
std::string encode_head(const StreamUrl& url, const RequestOptions& options);
/// The request for DELETE `url`.
std::string encode_delete(const StreamUrl& url, const RequestOptions& options);
/// The request for a catch-up GET `url?offset=<offset>` (percent-encoded; "-1" = from
/// the start).
std::string encode_read(const StreamUrl& url, std::string_view offset, const RequestOptions& options);

// ---- responses --------------------------------------------------------------------

/// Bounds on one response (prodsm/http/message.hpp).
using ResponseLimits = http::ResponseLimits;
/// One parsed response (prodsm/http/message.hpp).
using Response = http::Response;
/// The incremental HTTP/1.1 response parser (prodsm/http/response_parser.hpp).
using ResponseParser = http::ResponseParser;

// ---- classification (S3–S7) ----------------------------------------------------------

/// What a sequenced request sent (S2): the producer epoch and seq its acknowledgement
/// echoes (PROTOCOL.md 5.2.1, response headers: Producer-Epoch is echoed on 200/204;
/// Producer-Seq is the highest seq the server accepted for the producer and epoch).
struct ProducerStamp {
  std::uint64_t epoch = 0;  ///< Producer-Epoch sent
  std::uint64_t seq = 0;    ///< Producer-Seq sent
};

/// Classifies the response to an append (or to a close with a final body) by status and
/// headers (S7); `sent`: the producer epoch and seq of a sequenced append, nullopt for a
/// plain one:
///  - 200 with Stream-Next-Offset: appended (sequenced);
///  - 204: sequenced -> duplicate (S3; no offset needed); plain -> appended, needs
///    Stream-Next-Offset;
///  - a sequenced 200/204 whose echo contradicts the request is protocol_error,
///    indefinite (the server acknowledged something else: nothing here can be trusted):
///    a Producer-Epoch other than the one sent, or a Producer-Seq other than the one sent
///    (200: this seq was just accepted, so it is the highest) or below it (204: a duplicate
///    of a seq the server says it never accepted). An echo header that is absent is not
///    checked (older servers send none);
///  - 403 with Producer-Epoch: stale_epoch{server_epoch} (S5); other 403: rejected;
///  - 409 with Stream-Closed: true: stream_closed{final_offset} (S6), checked first;
///  - 409 with Producer-Expected-Seq: sequence_gap{expected, received} (S4);
///  - other 409: conflict (E3); 404/410: not_found; 408: request_timeout, indefinite,
///    retryable (E2); 400/401/413/other 4xx: rejected;
///  - 429/503: unavailable, definite, retryable, with Retry-After (delta-seconds, or an
///    IMF-fixdate measured from the response's own Date; over a day is taken as a day:
///    http::retry_after);
///  - 500/502/504 and other 5xx: unavailable, indefinite, retryable;
///  - anything else, or a required header missing or malformed (numbers must be plain
///    decimal 0..2^53-1): protocol_error, indefinite.
tl::expected<DurableStreamsPolicy::Ack, Error> classify_append(const Response& response,
                                                               const std::optional<ProducerStamp>& sent);

/// Result of PUT.
struct CreateResult {
  bool created = false;     ///< 201 (true) or 200 same configuration (false)
  std::string next_offset;  ///< Stream-Next-Offset when sent
};
/// 201/200 -> CreateResult; 409 -> conflict (exists with another configuration);
/// otherwise as classify_append's error cases.
tl::expected<CreateResult, Error> classify_create(const Response& response);

/// Result of a close without body.
struct CloseResult {
  std::string final_offset;  ///< Stream-Next-Offset when sent
};
/// 204/200 -> CloseResult; 409 with producer headers -> sequence_gap; otherwise as
/// classify_append's error cases. `sent`: a sequenced close's epoch and seq, checked
/// against the echo as for a duplicate (an epoch other than the one sent, or a
/// Producer-Seq below it, is protocol_error).
tl::expected<CloseResult, Error> classify_close(const Response& response, const std::optional<ProducerStamp>& sent);

/// Result of HEAD.
struct HeadResult {
  std::string content_type;  ///< Content-Type
  std::string next_offset;   ///< Stream-Next-Offset
  bool closed = false;       ///< Stream-Closed: true
};
/// 200 with Stream-Next-Offset -> HeadResult; 200 without it -> protocol_error; any other
/// status -> the same codes as classify_append's (404 not_found, 408 request_timeout, 5xx
/// unavailable, ...), but a 408 or 5xx is definite: a HEAD changes nothing.
tl::expected<HeadResult, Error> classify_head(const Response& response);

/// Result of a catch-up GET.
struct ReadResult {
  std::string body;         ///< the bytes read (JSON streams: one JSON array)
  std::string next_offset;  ///< Stream-Next-Offset: where the next read starts
  bool up_to_date = false;  ///< Stream-Up-To-Date: true (nothing more right now)
  bool closed = false;      ///< Stream-Closed: true (and up to date: the end)
};
/// 200 with Stream-Next-Offset -> ReadResult; a missing offset or an unrequested
/// Content-Encoding -> protocol_error; any other status -> as classify_head.
tl::expected<ReadResult, Error> classify_read(const Response& response);

/// 204/200 -> success; 404 -> not_found; otherwise as classify_append's error cases.
tl::expected<void, Error> classify_delete(const Response& response);

/// The media type of a Content-Type value: the text before any parameter (`;`), with
/// surrounding whitespace trimmed, case kept (RFC 9110 section 8.3.1). A view into
/// `content_type`.
[[nodiscard]] std::string_view media_type(std::string_view content_type) noexcept;

/// True when `content_type` names JSON: media type `application/json` or any `+json`
/// suffix, ASCII case-insensitive, parameters (`; charset=utf-8`) and surrounding
/// whitespace ignored. What the client conformance suite and the other SDKs frame as JSON
/// (a batch as one array); see stores_json_messages for what the server does with it.
[[nodiscard]] bool is_json_content_type(std::string_view content_type) noexcept;

/// True when the server keeps the stream as JSON messages (PROTOCOL.md section 9.1: it
/// flattens an appended array one level and answers each read as one array): media type
/// exactly `application/json`, ASCII case-insensitive, parameters ignored. A `+json` type
/// is not one: the reference server stores it as sent, as bytes.
[[nodiscard]] bool stores_json_messages(std::string_view content_type) noexcept;

/// Parses a decimal protocol number: digits only, 0..2^53-1 (Producer-Epoch,
/// Producer-Seq, Producer-Expected-Seq, ...). nullopt for anything else.
std::optional<std::uint64_t> parse_protocol_number(std::string_view text) noexcept;

}  // namespace prodsm::ds
