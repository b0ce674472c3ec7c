// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file http_codec.hpp
/// The S2 wire codec over HTTP/1.1, sans-IO: unary appends encoded as complete
/// requests (head + protobuf AppendInput body) from the Producer core's batches, and
/// responses classified by status *and* body and headers (S7) into the core's events —
/// an S2Policy::Ack or a classified Error (E2, E3, E4). Also the few requests a client
/// needs around a producer: create a stream, check its tail, read records back.
/// No sockets, no clock, no threads, no callbacks (D1); nothing throws (D4).
/// Sources: s2 `sdk/src/api.rs` (paths, `Content-Type`/`Accept: application/protobuf`,
/// `s2-basin`, `retry-after-ms`), `api/src/mime.rs` (which media types S2 recognises),
/// `api/src/v1/error.rs` (error codes, their statuses, retryable / no side effects),
/// `api/src/v1/stream/mod.rs` (the 412 body `AppendConditionFailed`), `sdk/src/error.rs`
/// (classifying unknown codes), `lite/src/handlers/v1/error.rs` (what s2-lite answers);
/// the TypeScript SDK `dist/esm/endpoints.js`, `lib/stream/transport/fetch/shared.js`.
/// The table as implemented is in docs/s2-protocol.md.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/action.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/connection.hpp"
#include "prodsm/http/message.hpp"
#include "prodsm/s2/messages.hpp"
#include "prodsm/s2_policy.hpp"

namespace prodsm::s2 {

// ---- where requests go -------------------------------------------------------------

/// An S2 basin endpoint: where its requests go and how the basin is named in them.
struct Endpoint {
  std::string host;               ///< host name or IPv4 literal (IPv6 literal without brackets)
  std::uint16_t port = 443;       ///< TCP port
  bool tls = true;                ///< https (informational: TLS is the transport's business)
  std::string base_path = "/v1";  ///< prefix of every request path ("/v1"; no trailing '/')
  std::string basin;              ///< the basin's name
  bool basin_header = false;      ///< send `s2-basin: <basin>` (custom endpoints)

  /// The S2 cloud: `https://{basin}.b.s2.dev/v1`, the basin in the host name and no
  /// `s2-basin` header (TypeScript SDK `endpoints.js` DEFAULT_BASIN_ENDPOINT; s2
  /// `sdk/src/api.rs` add_basin_header_if_required). Error: an invalid basin name.
  static tl::expected<Endpoint, std::string> cloud(std::string_view basin);
  /// A custom endpoint — s2-lite, a test server: `http://host[:port][/path]` or https;
  /// without a path, or with only '/', the base path is `/v1` (as both SDKs without a
  /// path; the TypeScript SDK would send `http://host/` requests to the root, where no
  /// S2 server answers), with one it is that path (trailing '/' removed). The basin goes in an
  /// `s2-basin` header. Errors name what is wrong (scheme, host, port, query, basin).
  static tl::expected<Endpoint, std::string> custom(std::string_view url, std::string_view basin);
  /// The Host header's value: `host`, or `host:port` when the port is not the scheme's
  /// default (IPv6 hosts in brackets).
  [[nodiscard]] std::string authority() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// What every request carries besides its own headers.
struct RequestOptions {
  std::string access_token;     ///< sent as `Authorization: Bearer <token>`; empty: none (s2-lite ignores it)
  http::Headers extra_headers;  ///< e.g. `s2-encryption-key`; a header check_extra_header refuses is not sent
  bool keep_alive = true;       ///< false: `Connection: close`
};

/// Why a basin name is invalid, or nothing: 8..48 bytes of lowercase letters, digits
/// and hyphens, beginning and ending with a letter or digit (s2 `common/src/basin.rs`).
[[nodiscard]] std::optional<std::string> check_basin_name(std::string_view basin);
/// Why a stream name is invalid, or nothing: 1..512 bytes of UTF-8, not "." or ".."
/// (s2 `common/src/stream.rs`).
[[nodiscard]] std::optional<std::string> check_stream_name(std::string_view stream);
/// Why an access token cannot be sent, or nothing: only visible ASCII (0x21..0x7E) fits
/// in `Authorization: Bearer <token>` (RFC 6750 b64token and more).
[[nodiscard]] std::optional<std::string> check_access_token(std::string_view token);
/// Why `header` cannot be sent as a caller-supplied header, or nothing: an empty or
/// non-token name, a control character in the value (HTAB allowed), or a name the codec
/// manages or that would change the framing, encoding or meaning of a request (Host,
/// Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, Trailer,
/// Expect, Accept-Encoding, Content-Encoding, Content-Type, Accept, Authorization,
/// s2-basin, s2-format). `s2-encryption-key`, `s2-stream-config` and `User-Agent` are
/// allowed.
[[nodiscard]] std::optional<std::string> check_extra_header(const http::Header& header);
/// check_extra_header's rule for the headers a session's header provider adds to one
/// request attempt (prodsm/header_provider.hpp; every S2 request carries it as
/// http::Request::header_rule): the same, except that Authorization is allowed — a
/// per-request bearer token, e.g. from a token file — where the request has none (one
/// the codec wrote from the access token is refused as already set).
[[nodiscard]] std::optional<std::string> check_provided_header(const http::Header& header);
/// All of the above for one producer's requests: the endpoint (host, base path, basin),
/// the stream name, the token and every extra header. The first problem, or nothing.
[[nodiscard]] std::optional<std::string> check_request_target(const Endpoint& endpoint, std::string_view stream,
                                                              const RequestOptions& options);

// ---- requests ----------------------------------------------------------------------
// Every encoder returns a complete http::Request (head and body bytes; id left 0 for the
// caller), or why it cannot: the stream name or token is invalid, a framed record is
// malformed, or memory ran out. Header order: Host, Content-Type, Accept,
// Content-Length, Authorization, s2-basin, Connection, then the extra headers.

/// `POST {base}/streams/{stream, percent-encoded}/records` with `Content-Type` and
/// `Accept: application/protobuf` and the AppendInput `input` as body. `retry_safe` is
/// set when the input carries match_seq_num (a resend cannot append twice).
tl::expected<http::Request, std::string> encode_append(const Endpoint& endpoint, std::string_view stream,
                                                       const AppendInputView& input, const RequestOptions& options);

/// The AppendInput body of one batch the Producer core sealed: `body` holds the records'
/// bytes concatenated and `record_ends[i]` is where record i ends (SendBatch); each
/// record is a body (RecordFormat::body) or a framed record (RecordFormat::framed); the
/// stamp's match_seq_num and fencing token become fields 2 and 3 (S1). Appended to
/// `out`; deterministic, so a resend is byte-identical. Errors: record_ends not
/// increasing or past the body, no record, a malformed framed record.
tl::expected<void, std::string> encode_batch_body(std::span<const std::byte> body,
                                                  std::span<const std::uint32_t> record_ends,
                                                  const S2Policy::Stamp& stamp, S2Policy::RecordFormat format,
                                                  std::string& out);
/// The append request for one batch (encode_append with encode_batch_body's body):
/// `retry_safe` when the stamp has match_seq_num.
tl::expected<http::Request, std::string> encode_batch(const Endpoint& endpoint, std::string_view stream,
                                                      std::span<const std::byte> body,
                                                      std::span<const std::uint32_t> record_ends,
                                                      const S2Policy::Stamp& stamp, S2Policy::RecordFormat format,
                                                      const RequestOptions& options);
/// The append request for a SendBatch action of Producer<S2Policy>.
tl::expected<http::Request, std::string> encode_batch(const Endpoint& endpoint, std::string_view stream,
                                                      const SendBatch<S2Policy>& batch, S2Policy::RecordFormat format,
                                                      const RequestOptions& options);

/// `POST {base}/streams` with the JSON body `{"stream":"<name>"}`: creates the stream with
/// the basin's default configuration (s2 `lite/src/handlers/v1/streams.rs`
/// create_stream; the stream must exist before an append unless the basin has
/// create_stream_on_append).
tl::expected<http::Request, std::string> encode_create_stream(const Endpoint& endpoint, std::string_view stream,
                                                              const RequestOptions& options);
/// `GET {base}/streams/{stream}/records/tail` (JSON answer `{"tail": StreamPosition}`).
tl::expected<http::Request, std::string> encode_check_tail(const Endpoint& endpoint, std::string_view stream,
                                                           const RequestOptions& options);

/// Where a unary read starts and how much it returns (s2 `api/src/v1/stream/mod.rs`
/// ReadStart/ReadEnd; S2 caps a unary read at 1000 records and 1 MiB).
struct ReadRange {
  std::uint64_t seq_num = 0;           ///< first seq_num to read
  std::optional<std::uint64_t> count;  ///< at most this many records
  std::optional<std::uint64_t> bytes;  ///< at most this many metered bytes
  bool clamp = false;                  ///< start at the tail when seq_num is beyond it (else 416)
};
/// `GET {base}/streams/{stream}/records?seq_num=N[&count=C][&bytes=B][&clamp=true]` with
/// `Accept: application/protobuf` (answer: a protobuf ReadBatch).
tl::expected<http::Request, std::string> encode_read(const Endpoint& endpoint, std::string_view stream,
                                                     const ReadRange& range, const RequestOptions& options);

// ---- responses (S7) ----------------------------------------------------------------

/// Classifies an error response of any S2 operation by status, JSON body and headers
/// (S7) — the table in docs/s2-protocol.md:
///  - 412 `{"seq_num_mismatch": N}` / `{"fencing_token_mismatch": "T"}` (any other 412
///    body too): condition_failed, definite, not retryable (E3); N in `expected_seq`, N or
///    T in the message;
///  - `{"code","message"}` with a known code at its own status (s2 `api/src/v1/error.rs`):
///    no side effects and retryable (transaction_conflict 409, rate_limited 429,
///    hot_server 502, server_draining 503) -> unavailable, definite, retryable; retryable
///    with possible side effects (other/storage 500, unavailable 503, upstream_timeout
///    504) -> unavailable, indefinite, retryable, and request_timeout 408 ->
///    request_timeout, indefinite, retryable; stream_not_found,
///    basin_not_found, access_token_not_found, stream/basin_deletion_pending -> not_found,
///    definite; resource_already_exists -> conflict, definite; client_hangup (499) ->
///    connection_lost, indefinite, not retryable; the rest (authn, permission_denied,
///    quota_exhausted, bad_*, invalid, decryption_failed, not_implemented) -> rejected,
///    definite;
///  - a known code at another status: as an unknown code, but never retryable (the Rust
///    SDK "fails closed");
///  - an unknown code, or a body that is not such JSON: 429, 500, 502, 503, 504 ->
///    unavailable, indefinite, retryable, and 408 -> request_timeout, indefinite,
///    retryable (s2 `sdk/src/error.rs`); other 404/410 ->
///    not_found, 409 -> conflict, other 4xx -> rejected, other 5xx -> unavailable, not
///    retryable — all indefinite; other statuses -> protocol_error, indefinite.
/// A retryable error carries `retry_after_ns` from `retry-after-ms` (decimal ms, at most a
/// day; the Rust SDK's header) or else `Retry-After` (delta-seconds, or an IMF-fixdate
/// measured from the response's Date: http::retry_after). `http_status` is
/// set; the message reads "<operation>: HTTP <status> <reason>: <code>: <server message>".
[[nodiscard]] Error classify_error(const http::Response& response, std::string_view operation);

/// Classifies the response to an append: 200 with a protobuf AppendAck (or a JSON one
/// when Content-Type says JSON) -> the ack; a 200 whose body does not decode, an
/// unrequested Content-Encoding, or another 2xx/1xx/3xx -> protocol_error, indefinite
/// (the batch may have been appended); anything else -> classify_error(response,
/// "append"), with one exception that needs the request: `match_seq_num` is the one the
/// append carried (nullopt: none), and a 412 `{"seq_num_mismatch": N}` with N below it —
/// the stream ends before this append's start, so an append sent before it did not land —
/// is `sequence_gap` (S4), definite, not retryable, `expected_seq` = N, `received_seq` =
/// match_seq_num: the producer resends it once the appends before it resolve. N at or
/// above it stays `condition_failed` (E3).
tl::expected<AppendAck, Error> classify_append(const http::Response& response,
                                               std::optional<std::uint64_t> match_seq_num = std::nullopt);
/// The policy's view of an ack: the batch occupies [start.seq_num, end.seq_num) (P4).
[[nodiscard]] constexpr S2Policy::Ack to_policy_ack(const AppendAck& ack) noexcept {
  return S2Policy::Ack{ack.start.seq_num, ack.end.seq_num};
}

/// Result of a unary read.
struct ReadResult {
  ReadBatch batch;                               ///< the records read (empty at the tail)
  std::optional<StreamPosition> unwritten_tail;  ///< 416: seq_num was beyond this tail (nothing read)
};
/// 200 with a protobuf ReadBatch -> its records; 416 with `{"tail": ...}` -> ReadResult
/// with unwritten_tail; anything else -> classify_error(response, "read").
tl::expected<ReadResult, Error> classify_read(const http::Response& response);
/// 200 with `{"tail": {"seq_num", "timestamp"}}` -> the tail; otherwise classify_error.
tl::expected<StreamPosition, Error> classify_check_tail(const http::Response& response);
/// 201 -> true (created); 409 `resource_already_exists` -> false (it exists already);
/// otherwise classify_error(response, "create stream").
tl::expected<bool, Error> classify_create_stream(const http::Response& response);

}  // namespace prodsm::s2
