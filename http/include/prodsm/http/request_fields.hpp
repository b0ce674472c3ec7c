// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file request_fields.hpp
/// Per-request headers and query parameters, sans-IO: what a header provider (the
/// adapters' HeaderProvider, prodsm/header_provider.hpp) gives for one request attempt,
/// and how it is added to that request's bytes. A retry is a new attempt, so it is asked
/// again: e.g. a bearer token refreshed while a producer runs, a request id, a signed-URL
/// parameter. Everything else about the request — the protocol's own headers
/// (Producer-*, S2's match_seq_num, ...) and the body — was fixed when the batch was
/// sealed (S2) and does not change.
/// Source: issue "Production endpoints" (per-request headers); RFC 9110 §5 (fields),
/// RFC 3986 §3.4 (query).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/http/message.hpp"

namespace prodsm::http {

/// One query parameter added to a request target. Both parts are percent-encoded when
/// written (RFC 3986 unreserved characters are kept).
struct QueryParam {
  std::string name;   ///< non-empty
  std::string value;  ///< may be empty
  friend bool operator==(const QueryParam&, const QueryParam&) = default;
};

/// What a provider adds to one request attempt. At most kMaxProvidedFields headers and
/// as many query parameters, kMaxProvidedBytes bytes in all (R3).
struct RequestFields {
  Headers headers;                       ///< written after the request's own headers
  std::vector<QueryParam> query_params;  ///< appended to the request target (`?` or `&`)
};

/// Most headers, and most query parameters, one provider call may add.
inline constexpr std::size_t kMaxProvidedFields = 64;
/// Most bytes (names and values, as written) one provider call may add.
inline constexpr std::size_t kMaxProvidedBytes = 8 * 1024;

/// The request a provider is asked about: views into the request line, valid during the
/// call only.
struct RequestInfo {
  std::string_view method;  ///< "POST", "GET", "HEAD", ...
  std::string_view target;  ///< the request target as it will be written, e.g. "/stream?offset=-1"
};

/// A protocol's own rule on added headers (names it manages itself), e.g.
/// ds::check_extra_header: why `header` may not be sent, or nullopt.
using HeaderRule = std::optional<std::string> (*)(const Header& header);

/// Adds `fields` to the complete request `bytes` (request line, head, body): query
/// parameters to the request target, headers before the blank line that ends the head.
/// `bytes` is unchanged on error. Errors, naming the field: a header name that is not an
/// HTTP token, a value with a control character (HTAB allowed), a framing or hop-by-hop
/// name (Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE,
/// Trailer, Expect, Proxy-Connection), a name the request already carries, one `rule`
/// refuses; an empty parameter name; more than the limits above; `bytes` not an HTTP
/// request head.
tl::expected<void, std::string> add_request_fields(std::string& bytes, const RequestFields& fields,
                                                   HeaderRule rule = nullptr);

/// Why configured extra headers (a producer's or a read's `extra_headers`, sent on every
/// request) are more than one request may carry: more than kMaxProvidedFields headers, or
/// more than kMaxProvidedBytes bytes as written (`Name: value\r\n`), the header
/// provider's limits (R3). nullopt when within them. Checked where the options are, so a
/// head a server refuses (431) or cuts off (a reset, read as an indefinite failure) is
/// refused at creation instead.
[[nodiscard]] std::optional<std::string> check_extra_header_bounds(const Headers& headers);

}  // namespace prodsm::http
