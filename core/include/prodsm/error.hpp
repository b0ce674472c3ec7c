// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file error.hpp
/// Errors as values (D4). One type serves two roles:
///  - the classified outcome of one failed attempt, as reported by a codec or an
///    adapter through `Producer::handle_failure` (E2, E3, E4, S3–S7), and
///  - the sticky terminal error the Producer reports on tickets, barriers and close (E1).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "prodsm/time.hpp"

namespace prodsm {

/// What went wrong. Codes marked "local" are raised by the Producer itself; the others
/// are classified from the remote side (server response or transport) by a codec or an
/// adapter (h11 style: local vs remote).
enum class ErrorCode : std::uint8_t {
  closed,                  ///< local: the Producer is closed (C2).
  aborted,                 ///< local: abort() or destruction without close (C5).
  delivery_timeout,        ///< local: a record was not acknowledged within delivery_timeout_ns (E6).
  invalid_ack,             ///< local: an acknowledgement broke the protocol: wrong count, positions
                           ///< going backwards, unknown batch or attempt (E5).
  internal,                ///< local: an allocation failed or an invariant broke inside the core (D4).
  would_block,             ///< local: no capacity (R1) within the adapter's submit timeout.
  invalid_record,          ///< local: the record was refused at submit (B4, B5), in async APIs.
  cancelled,               ///< local: the caller cancelled a waiting operation (adapters).
  unavailable,             ///< remote: the server could not take the request now (retryable). A refused
                           ///< or failed connect is definite (nothing sent). Durable Streams: 429 and
                           ///< 503 are definite (nothing appended), other 5xx indefinite (the request
                           ///< may have been applied). S2: by the error body's code (no side effects:
                           ///< definite); without one, indefinite (s2/http_codec.hpp, classify_error).
  connection_lost,         ///< remote: transport failure or request timeout after sending; the
                           ///< attempt may have been appended (indefinite, E4).
  condition_failed,        ///< remote: S2 match_seq_num or fencing-token mismatch (E3).
  conflict,                ///< remote: a 409 that is not a sequence gap or a closed stream: Durable
                           ///< Streams content-type or Stream-Seq conflict (E3); S2
                           ///< resource_already_exists or an unknown 409.
  sequence_gap,            ///< remote: Durable Streams 409 with Producer-Expected-Seq, or S2 412
                           ///< seq_num_mismatch below the append's match_seq_num (S4).
  stale_epoch,             ///< remote: Durable Streams 403 with the server's Producer-Epoch (S5).
  stream_closed,           ///< remote: the stream is closed (S6); final_offset set when known.
  not_found,               ///< remote: the stream does not exist (404) or is gone (410).
  rejected,                ///< remote: the request was refused (400, 401, 413, other 4xx).
  protocol_error,          ///< remote: a malformed or unexpected response (S7, E5).
  tls_failed,              ///< remote: the TLS handshake failed or the server's certificate was refused
                           ///< (unknown CA, wrong host, expired, not TLS at all): nothing was sent
                           ///< (definite), not retryable.
  header_provider_failed,  ///< local: the per-request header provider failed, threw, or gave a header or
                           ///< query parameter that cannot be sent (prodsm/http/request_fields.hpp):
                           ///< that attempt was not sent (definite); retryable within the retry policy.
  request_timeout,         ///< remote: HTTP 408, a proxy's or the server's request timeout: the attempt
                           ///< may have been appended (indefinite), retryable (resent only where the
                           ///< protocol makes a resend safe, E4). prodsm's own request deadline (a
                           ///< response that did not come in time) is connection_lost.
  sequence_exhausted,      ///< local: the protocol's sequence space is used up (S8): the next batch's
                           ///< Durable Streams Producer-Seq would pass 2^53-1, or S2's match_seq_num plus
                           ///< its record count would pass 2^64-1. Nothing of it was sent (definite).
};

/// The last ErrorCode value (codes run from 0 to this): for iterating and range checks.
inline constexpr ErrorCode kLastErrorCode = ErrorCode::sequence_exhausted;

/// Whether the records concerned may have been appended (E2).
enum class Certainty : std::uint8_t {
  definite,    ///< nothing was appended: safe to resubmit the records.
  indefinite,  ///< the records may have been appended: resubmitting may duplicate them.
};

/// The stable snake_case name of a code, e.g. "stream_closed". Never empty.
std::string_view to_string(ErrorCode code) noexcept;
/// "definite" or "indefinite".
std::string_view to_string(Certainty certainty) noexcept;

/// An error value. Fields beyond code/certainty/retryable are set only for the codes
/// that document them (each field says which); all others stay at their zero values.
struct Error {
  /// What went wrong.
  ErrorCode code = ErrorCode::internal;
  /// Whether the records concerned may have been appended (E2). On a ticket
  /// completion it is the certainty for that ticket range (C5); on handle_failure it is
  /// the codec's view of that one attempt.
  Certainty certainty = Certainty::definite;
  /// Whether the cause is of a retryable kind (429, 5xx, transport). A terminal error
  /// may still say retryable=true: the retry budget or the delivery deadline ran out.
  bool retryable = false;
  /// Human-readable detail, e.g. "HTTP 503 after 10 attempts". May be empty.
  std::string message;
  /// sequence_gap: the server's Producer-Expected-Seq, or on S2 the stream's next seq_num
  /// (S4); S2 condition_failed (seq_num_mismatch): the stream's next seq_num (E3).
  std::uint64_t expected_seq = 0;
  /// sequence_gap: the server's Producer-Received-Seq, or on S2 the append's match_seq_num (S4).
  std::uint64_t received_seq = 0;
  /// stale_epoch: the server's current Producer-Epoch (S5).
  std::uint64_t server_epoch = 0;
  /// stream_closed: the stream's final offset (opaque, S6); empty when unknown.
  std::string final_offset;
  /// A retryable remote error (unavailable, request_timeout, ...): the wait the server
  /// asked for (ns) — Retry-After, or S2's retry-after-ms —, when it sent one.
  std::optional<Duration> retry_after_ns;
  /// HTTP status when the error came from a response (0 otherwise).
  std::uint16_t http_status = 0;

  /// A one-line description: "<code> (<certainty>[, retryable]): <message>".
  [[nodiscard]] std::string describe() const;

  friend bool operator==(const Error&, const Error&) = default;
};

/// Shorthand constructor for an Error with code, certainty, retryability and message.
Error make_error(ErrorCode code, Certainty certainty, bool retryable, std::string message);

}  // namespace prodsm
