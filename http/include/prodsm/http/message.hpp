// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file message.hpp
/// HTTP/1.1 message types shared by the sans-IO client connection (connection.hpp), the
/// response parser (response_parser.hpp) and the protocol codecs built on them.
/// Source: RFC 9110 (semantics) and RFC 9112 (HTTP/1.1 message syntax).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prodsm::http {

/// One HTTP header field as sent or received (names compared case-insensitively,
/// RFC 9110 §5.1).
struct Header {
  std::string name;   ///< field name, as written (no trailing colon)
  std::string value;  ///< field value (in a parsed response: surrounding whitespace removed)
  friend bool operator==(const Header&, const Header&) = default;
};
/// Header fields in order; duplicates are kept.
using Headers = std::vector<Header>;

/// Bounds on what one response may use (R3). Exceeding one is a protocol_error.
struct ResponseLimits {
  std::size_t max_header_bytes = 16 * 1024;          ///< status line + all headers, bytes
  std::size_t max_headers = 64;                      ///< header fields
  std::size_t max_body_bytes = 64ULL * 1024 * 1024;  ///< decoded body, bytes
};

/// One parsed response.
struct Response {
  int status = 0;          ///< HTTP status code, 100..999
  Headers headers;         ///< in arrival order, names as received
  std::string body;        ///< decoded (chunked framing removed)
  bool keep_alive = true;  ///< the connection may carry another request (RFC 9112 §9.3)
  /// The first header named `name` (ASCII case-insensitive), if any.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

/// The standard reason phrase of `status` ("Service Unavailable"), or "<unknown>"
/// (RFC 9110 §15).
[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

}  // namespace prodsm::http
