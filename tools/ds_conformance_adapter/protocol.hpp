// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file protocol.hpp
/// The JSON-lines protocol of the Durable Streams client conformance suite
/// (packages/client-conformance-tests/src/protocol.ts in durable-streams/durable-streams):
/// the standard error codes, error results, the mapping from prodsm's classified errors
/// to those codes, typed access to command fields, and the one-line serialization of
/// results.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"

namespace prodsm::tools::dsconf {

/// Commands and results keep their fields in insertion order, as the TypeScript
/// adapters write them.
using Json = nlohmann::ordered_json;

/// ErrorCodes of protocol.ts.
namespace codes {
inline constexpr std::string_view kNetworkError = "NETWORK_ERROR";
inline constexpr std::string_view kTimeout = "TIMEOUT";
inline constexpr std::string_view kConflict = "CONFLICT";
inline constexpr std::string_view kNotFound = "NOT_FOUND";
inline constexpr std::string_view kSequenceConflict = "SEQUENCE_CONFLICT";
inline constexpr std::string_view kStreamClosed = "STREAM_CLOSED";
inline constexpr std::string_view kInvalidOffset = "INVALID_OFFSET";
inline constexpr std::string_view kUnexpectedStatus = "UNEXPECTED_STATUS";
inline constexpr std::string_view kParseError = "PARSE_ERROR";
inline constexpr std::string_view kInternalError = "INTERNAL_ERROR";
inline constexpr std::string_view kNotSupported = "NOT_SUPPORTED";
inline constexpr std::string_view kInvalidArgument = "INVALID_ARGUMENT";
}  // namespace codes

/// A successful result: `{type, success: true}`, plus `status` when not 0.
Json success(std::string_view type, int status = 0);

/// An ErrorResult: `{type: "error", success: false, commandType, status?, errorCode,
/// message, details?}`. `status` is omitted when 0; `details` when null.
Json error_result(std::string_view command_type, std::string_view error_code, std::string message, int status = 0,
                  Json details = nullptr);

/// What the failed operation was, where the mapping depends on it.
enum class Operation : std::uint8_t { other, read };

/// The ErrorResult for a prodsm Error (see docs/ds-client-conformance.md for the table):
/// stream_closed -> STREAM_CLOSED; sequence_gap -> SEQUENCE_CONFLICT; conflict ->
/// SEQUENCE_CONFLICT when the server said "sequence" (Stream-Seq), else CONFLICT;
/// not_found -> NOT_FOUND; a read's 400 -> INVALID_OFFSET; other refusals, 403 stale
/// epoch and 429/5xx -> UNEXPECTED_STATUS; transport failures -> NETWORK_ERROR (TIMEOUT
/// for a request timeout); malformed responses and invalid acks -> PARSE_ERROR; delivery
/// timeout and capacity waits -> TIMEOUT; refused records -> INVALID_ARGUMENT; the rest
/// (closed producer, abort, internal) -> INTERNAL_ERROR. `status` is the HTTP status when
/// the error came from a response; `details` carries prodsm's code, certainty and the
/// protocol values (producerEpoch, producerExpectedSeq, producerReceivedSeq, finalOffset).
Json error_result(std::string_view command_type, const Error& error, Operation op = Operation::other);

/// A command field of the wrong type, or an invalid value: answered with
/// INVALID_ARGUMENT; the message names the field.
class ArgumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Typed access to command fields; each throws ArgumentError naming the field when it is
/// present with the wrong type or out of range. Absent (or null) optional fields give
/// nullopt.
std::string required_string(const Json& command, std::string_view field);
std::optional<std::string> optional_string(const Json& command, std::string_view field);
std::optional<bool> optional_bool(const Json& command, std::string_view field);
/// The largest integer a JSON number carries exactly (2^53 - 1): the bound of the
/// protocol's integral fields (epochs, sequence numbers, TTLs).
inline constexpr std::int64_t kMaxProtocolNumber = (std::int64_t{1} << 53) - 1;
/// An integral number (an integral double such as 2.0 too) in [min, max].
std::optional<std::int64_t> optional_integer(const Json& command, std::string_view field, std::int64_t min,
                                             std::int64_t max);
/// `headers`: an object of string values (absent: empty).
std::vector<std::pair<std::string, std::string>> string_map(const Json& command, std::string_view field);

/// One result as one line of JSON (no newline): compact, invalid UTF-8 replaced (there
/// should be none), and U+2028/U+2029 escaped as protocol.ts's serializer does.
std::string serialize_line(const Json& result);

/// True when `bytes` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view bytes) noexcept;

using ds::is_json_content_type;  ///< the codec's JSON-mode rule (application/json, +json)

}  // namespace prodsm::tools::dsconf
