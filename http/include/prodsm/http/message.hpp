// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file message.hpp
/// HTTP/1.1 message types shared by the sans-IO client connection (connection.hpp), the
/// response parser (response_parser.hpp) and the protocol codecs built on them.
/// Source: RFC 9110 (semantics) and RFC 9112 (HTTP/1.1 message syntax).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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

/// Bounds on what one response may use (R3). Exceeding one is a protocol_error. A Pool
/// (PoolOptions::validate) takes each within the k-ranges below and names the field that
/// is not ("response_limits.max_body_bytes: must be in 1024..1073741824 (got 0)"); the
/// parser alone takes any values.
struct ResponseLimits {
  std::size_t max_header_bytes = 16 * 1024;            ///< status line + all headers, bytes; 256..1 MiB
  std::size_t max_headers = 64;                        ///< header fields; 8..1024
  std::size_t max_body_bytes = 64ULL * 1024 * 1024;    ///< decoded body, bytes; 1 KiB..1 GiB (a streamed body: none)
  static constexpr std::size_t kMinHeaderBytes = 256;  ///< smallest max_header_bytes, bytes
  static constexpr std::size_t kMaxHeaderBytes = 1024 * 1024;          ///< largest max_header_bytes, bytes
  static constexpr std::size_t kMinHeaders = 8;                        ///< smallest max_headers
  static constexpr std::size_t kMaxHeaders = 1024;                     ///< largest max_headers
  static constexpr std::size_t kMinBodyBytes = 1024;                   ///< smallest max_body_bytes, bytes
  static constexpr std::size_t kMaxBodyBytes = 1024ULL * 1024 * 1024;  ///< largest max_body_bytes, bytes
};

/// One parsed response.
struct Response {
  int status = 0;          ///< HTTP status code, 100..999
  Headers headers;         ///< in arrival order, names as received
  std::string body;        ///< decoded (chunked framing removed); empty when body_streamed
  bool keep_alive = true;  ///< the connection may carry another request (RFC 9112 §9.3)
  /// The body went to the request's BodySink as it arrived, not into `body`.
  bool body_streamed = false;
  /// Bytes that arrived right behind this response, in the same read, with no request
  /// outstanding for them (bytes; 0 normally). Nonzero means the response's framing is in
  /// doubt — typically a Content-Length shorter than the body the server sent (RFC 9112
  /// §6.3) — so its body may be cut short; the connection was closed. Set by
  /// Connection::on_bytes; a reader that must be exact refuses such a response.
  std::size_t unsolicited_bytes_after = 0;
  /// The first header named `name` (ASCII case-insensitive), if any.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

/// Streamed-body mode: receives a response body as it is decoded instead of collecting
/// it in Response::body, so a body of any size passes through bounded memory. A request
/// carries one in Request::body_sink (connection.hpp); without one a response is collected
/// whole, bounded by ResponseLimits::max_body_bytes (what producers use).
///
/// The connection calls the sink synchronously while it parses bytes (from
/// Connection::on_bytes / on_eof, on whatever thread drives the connection): this is
/// the one piece of code outside the http library it calls. The sink decides what to keep;
/// while it runs, nothing else is read from the connection (TCP flow control is the
/// back-pressure). An exception from it abandons the response, like returning false.
class BodySink {
 public:
  virtual ~BodySink() = default;
  /// The final (non-1xx) response's status line and headers arrived and a body may follow
  /// (not for HEAD, 204 or 304). True: its body goes to on_body as it is decoded
  /// (Response::body stays empty, body_streamed is set, max_body_bytes does not apply);
  /// false: it is collected in Response::body as usual (e.g. an error response's text).
  virtual bool on_head(const Response& head) = 0;
  /// Decoded body bytes (chunked framing removed), in order; valid only during the call.
  /// False abandons the response: its request fails with `cancelled` (not retryable) and
  /// the connection closes without reading the rest.
  virtual bool on_body(std::span<const char> bytes) = 0;
};

/// The standard reason phrase of `status` ("Service Unavailable"), or "<unknown>"
/// (RFC 9110 §15).
[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

}  // namespace prodsm::http
