// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: a loopback HTTP/1.1 server that only receives. The conformance harness puts
// its simulated server behind it (the wire targets: prodsm's adapters, and any SDK over
// its own HTTP client with `--serve`): every complete request is held, unanswered, until
// the harness decides its answer — a response (written in each connection's request
// order, as HTTP/1.1 requires, RFC 9112 section 9.3.2), a reset of the connection (RST,
// SO_LINGER 0), or bytes that are not HTTP. Requests are parsed with libhttp-parser.
//
// One thread runs the sockets (poll(2)); every member function may be called from any
// other thread. Bounded (R3): connections, header and body sizes, requests held.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/http/message.hpp"

namespace prodsm::conformance::detail {

/// One complete request as it arrived.
struct WireRequest {
  std::uint64_t id = 0;          ///< 1, 2, ... in the order requests completed (arrival order)
  std::uint64_t connection = 0;  ///< the connection it came on: 1, 2, ... in accept order
  std::string method;            ///< e.g. "POST"
  std::string target;            ///< the request target (path and query), e.g. "/conformance/1"
  std::vector<std::pair<std::string, std::string>> headers;  ///< as received, in order
  std::string body;                                          ///< the whole body (Content-Length or chunked)
  std::chrono::steady_clock::time_point arrived;             ///< when its last byte was parsed
  /// The kernel's receive time of the read that completed it (ns, CLOCK_REALTIME,
  /// SO_TIMESTAMPNS): orders requests that became readable on several connections at once
  /// in the order they reached the server (the order the client wrote them, on loopback).
  std::int64_t received_ns = 0;

  /// The value of the first header named `name` (ASCII case-insensitive), or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

/// Bounds of a WireServer (R3).
struct WireServerLimits {
  std::size_t max_connections = 256;              ///< more are accepted and closed at once
  std::size_t max_header_bytes = 64 * 1024;       ///< per request (request line and headers)
  std::size_t max_body_bytes = 64 * 1024 * 1024;  ///< per request
  std::size_t max_held_requests = 65536;          ///< requests taken or waiting, unanswered
};

/// What the server saw that was not a request (for the harness's evidence).
struct WireServerStats {
  std::uint64_t connections_accepted = 0;        ///< every accept
  std::uint64_t connections_closed_by_peer = 0;  ///< EOF or error from the client
  std::uint64_t malformed_requests = 0;          ///< requests libhttp-parser refused (the connection was closed)
  std::string last_malformed;                    ///< why the last one was refused
};

class WireServer {
 public:
  /// Listens on 127.0.0.1:`port` (0: any free port) and starts the socket thread; the
  /// error names what failed (socket, bind, listen, thread).
  static tl::expected<std::unique_ptr<WireServer>, std::string> start(std::uint16_t port = 0,
                                                                      WireServerLimits limits = {});
  /// Stops the thread and closes every socket (held requests are dropped).
  ~WireServer();
  WireServer(const WireServer&) = delete;
  WireServer& operator=(const WireServer&) = delete;

  /// The port it listens on.
  [[nodiscard]] std::uint16_t port() const noexcept;

  /// The next request that arrived and was not taken yet (in the order requests reached
  /// the server, across connections), waiting for one until `until`; nullopt when none
  /// came by then.
  std::optional<WireRequest> take(std::chrono::steady_clock::time_point until);
  /// Requests that arrived so far (taken or not).
  [[nodiscard]] std::uint64_t arrived() const;

  /// Answers request `id` with `bytes` (a whole HTTP response, or anything else). Written
  /// once every earlier request of its connection was answered. False when the request
  /// is unknown, already answered, or its connection is gone.
  bool respond(std::uint64_t id, std::string bytes);
  /// Resets the connection request `id` came on (RST): that request and every other
  /// unanswered one on the connection die with it. False when the connection is gone.
  bool reset(std::uint64_t id);

  /// Counters and the last malformed request's reason.
  [[nodiscard]] WireServerStats stats() const;
  /// Connections open now.
  [[nodiscard]] std::size_t open_connections() const;

  struct Impl;  ///< private

 private:
  explicit WireServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// `response` as HTTP/1.1 bytes: the status line with the standard reason phrase, the
/// headers in order, Content-Length (unless the headers have one), the body. 1xx, 204 and
/// 304 responses carry neither Content-Length nor a body (RFC 9110 section 8.6).
std::string http_response_bytes(const http::Response& response);

}  // namespace prodsm::conformance::detail
