// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the simulated server's answers as the Durable Streams wire carries them
// (docs/conformance.md, "The simulated server on the wire"), so that a target which
// classifies HTTP responses itself — prodsm's ds::ProducerClient — is answered through
// its own classification (S3–S7) rather than with ready-made Error values.

#include <optional>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/http/message.hpp"
#include "sim_server.hpp"

namespace prodsm::conformance::detail {

/// What a harness Response becomes on the wire: an HTTP response, or the transport
/// failure the HTTP connection would report (connection_lost, a client-side
/// request_timeout, protocol_error: no response to classify).
using WireAnswer = tl::expected<http::Response, Error>;

/// The wire form of `response` to `sent` (a batch append, or a stream-close request when
/// sent.stream_close):
///  - ack: 200 with Stream-Next-Offset (204 for a stream close, with Stream-Closed: true);
///    a sequenced batch's ack echoes Producer-Epoch and Producer-Seq; an invalid ack
///    going backwards or overlapping carries its wrong offset;
///  - duplicate (a sequenced batch): 204 with the echo and no offset;
///  - unavailable: 503, with Retry-After in whole seconds (rounded up) when given;
///  - sequence_gap: 409 with Producer-Expected-Seq and Producer-Received-Seq;
///  - stale_epoch: 403 with Producer-Epoch (the server's epoch);
///  - stream_closed: 409 with Stream-Closed: true and Stream-Next-Offset (the final offset);
///  - conflict 409, rejected 400, not_found 404;
///  - connection_lost, request_timeout, protocol_error: the transport failure itself.
/// Nullopt, with `why`, for an answer the wire cannot carry as the core sees it: a code
/// no server sends (aborted, delivery_timeout, S2's condition_failed), or an invalid ack
/// without an offset (wrong_count: a 200 without Stream-Next-Offset is a malformed
/// response, protocol_error by S7, never an acknowledgement).
std::optional<WireAnswer> ds_wire_answer(const Response& response, const PendingSend& sent, std::string* why);

}  // namespace prodsm::conformance::detail
