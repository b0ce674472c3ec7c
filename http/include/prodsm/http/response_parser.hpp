// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file response_parser.hpp
/// Incremental HTTP/1.1 response parser over libhttp-parser (RFC 9112 §4–§7), bounded by
/// ResponseLimits (R3), exception-free (D4). Sans-IO: bytes in, a Response out.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "prodsm/error.hpp"
#include "prodsm/http/message.hpp"

namespace prodsm::http {

/// Incremental HTTP/1.1 response parser over libhttp-parser. Content-Length, chunked
/// and EOF-delimited bodies; pipelined responses (feed stops right after one complete
/// response, leaving the next one's bytes unconsumed). Never throws; hostile input gives
/// a protocol_error value.
class ResponseParser {
 public:
  /// Where the parse is.
  enum class State : std::uint8_t { incomplete, complete, failed };

  /// A parser ready for a response to a non-HEAD request, bounded by `limits`.
  explicit ResponseParser(ResponseLimits limits = {});
  ~ResponseParser();                                     ///< out of line: the C parser is private
  ResponseParser(ResponseParser&&) noexcept;             ///< the moved-from parser reads as failed
  ResponseParser& operator=(ResponseParser&&) noexcept;  ///< and consumes nothing; likewise
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  /// Starts a new response; `head_request` = the request was HEAD (no body follows).
  /// `sink`: streamed-body mode for this response (message.hpp, BodySink): the sink is
  /// asked at the end of the header block whether to take the body; it must stay alive
  /// until the next reset. Null: the body is collected in Response::body.
  void reset(bool head_request = false, BodySink* sink = nullptr);
  /// Feeds bytes; returns how many were consumed (fewer than given only once the
  /// response is complete or failed).
  std::size_t feed(std::span<const char> bytes);
  /// The peer closed the connection: completes an EOF-delimited body, or fails a
  /// truncated response ("connection closed before the response completed").
  void finish_eof();
  /// True while the current response's body goes to its sink (the sink took the head).
  [[nodiscard]] bool streaming_body() const noexcept;
  /// incomplete until a whole response was fed; then complete or failed until reset().
  [[nodiscard]] State state() const noexcept;
  /// Bytes of the current response consumed so far (0: nothing of it arrived yet).
  [[nodiscard]] std::uint64_t consumed() const noexcept;
  /// The response; meaningful once state() == complete.
  [[nodiscard]] const Response& response() const noexcept;
  /// Takes the response out (state stays complete until reset).
  Response take_response();
  /// Why parsing failed (code protocol_error, indefinite; `cancelled` when the body sink
  /// abandoned the response; internal when memory ran out or the parser was moved from);
  /// meaningful once failed.
  [[nodiscard]] const Error& error() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prodsm::http
