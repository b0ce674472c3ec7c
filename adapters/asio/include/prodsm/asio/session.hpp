// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file session.hpp
/// prodsm::asio::Session: HTTP/1.1 connections to one Durable Streams server
/// (host:port) on standalone Asio 1.22, driving the sans-IO codec. A Session is what a
/// Producer owns (created for it, closed by its close: C4) or is attached to (created
/// by the caller, shared, left open by the producer's close: C4).
///
/// Two connection modes (see docs/performance.md for the measurements behind the
/// default):
///  - pipelined: one connection; requests are written back to back and the responses
///    matched in order (HTTP/1.1 pipelining);
///  - pool: up to max_connections connections, one request at a time on each.
///
/// Transport failures are classified for the Producer core (E2, E4):
///  - the request was not written at all (connect refused, connection gone before the
///    write): `unavailable`, definite, retryable;
///  - some of it was written and no complete response came back (reset, EOF, request
///    timeout): `connection_lost`, indefinite, retryable;
///  - the response could not be parsed: `protocol_error`, indefinite.

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/strand.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/time.hpp"

namespace prodsm::asio {

/// How requests share TCP connections.
enum class ConnectionMode : std::uint8_t {
  pipelined,  ///< one connection, requests pipelined (HTTP/1.1), responses in order
  pool,       ///< up to max_connections connections, one request outstanding on each
};

/// Session configuration. Every field is bounded; see validate().
struct SessionOptions {
  /// Connection mode. Default: pipelined — measured faster against the reference server
  /// and it keeps requests in order (see docs/performance.md).
  ConnectionMode mode = ConnectionMode::pipelined;
  /// Pool mode: most connections, 1..64. Default 5 (the producer's max_in_flight).
  std::uint32_t max_connections = 5;
  /// Bound on resolving + connecting (ns), 1 ms..10 min. Default 10 s.
  Duration connect_timeout_ns = std::chrono::seconds{10};
  /// Bound on one request: from the first byte written to the last byte of its
  /// response (ns), 1 ms..10 min. Default 30 s. On expiry the connection is closed and
  /// its requests fail (connection_lost, indefinite).
  Duration request_timeout_ns = std::chrono::seconds{30};
  /// A connection idle for longer than this (ns) is replaced before reuse, so a request
  /// never races the server's keep-alive close (the reference server closes after 5 s).
  /// 0..10 min. Default 4 s.
  Duration idle_reuse_limit_ns = std::chrono::seconds{4};
  /// Bounds on each response (R3).
  ds::ResponseLimits response_limits{};
  /// Most requests queued on the session and not yet on a connection (R3), 1..65536.
  std::uint32_t max_queued_requests = 4096;

  /// The first invalid field ("session.max_connections: ..."), or nullopt.
  [[nodiscard]] std::optional<std::string> validate() const;
};

/// The outcome of one request: its parsed response, or a classified transport error.
using ExchangeResult = tl::expected<ds::Response, Error>;

/// Counters since the session was created.
struct SessionStats {
  std::uint64_t connections_opened = 0;  ///< TCP connections established (reconnects included)
  std::uint64_t requests_written = 0;    ///< requests whose bytes were all written to a socket
  std::uint64_t responses = 0;           ///< complete responses parsed and delivered
  /// Requests failed by a connect failure (unavailable) or a lost or timed-out connection
  /// (connection_lost).
  std::uint64_t transport_failures = 0;
};

/// Connections to one host:port. Create with Session::create; share through
/// std::shared_ptr. Thread-safe: exchange() and close() may be called from any thread;
/// the work runs on the session's strand, and so do the completion callbacks.
class Session : public std::enable_shared_from_this<Session> {
 public:
  /// Callback for exchange(); runs on the session's strand.
  using ExchangeHandler = std::function<void(ExchangeResult)>;

  /// A session to `host:port`. Error text names the invalid option.
  static tl::expected<std::shared_ptr<Session>, std::string> create(::asio::any_io_executor executor, std::string host,
                                                                    std::uint16_t port, SessionOptions options = {});
  /// A session to the server of `url` (its host and port).
  static tl::expected<std::shared_ptr<Session>, std::string> create(::asio::any_io_executor executor,
                                                                    const ds::StreamUrl& url,
                                                                    SessionOptions options = {});

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Sends one complete request (head + body bytes) and calls `done` with its response
  /// or a classified failure. `head_request`: the request is HEAD (no response body).
  /// Requests are written in call order (in pipelined mode the server sees them in
  /// that order). After close(), fails with `closed` at once.
  void exchange(std::string request, bool head_request, ExchangeHandler done);

  /// Same, as an Asio asynchronous operation: signature void(ExchangeResult).
  template <class CompletionToken>
  auto async_exchange(std::string request, bool head_request, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(ExchangeResult)>(
        [self = shared_from_this()](auto handler, std::string req, bool head) {
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          self->exchange(std::move(req), head, [shared](ExchangeResult r) {
            auto ex = ::asio::get_associated_executor(*shared);
            ::asio::dispatch(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
          });
        },
        token, std::move(request), head_request);
  }

  /// Closes every connection; outstanding requests fail (written: connection_lost;
  /// not written: closed). Idempotent. Later exchanges fail with `closed`.
  void close();

  /// The strand every callback of this session runs on.
  [[nodiscard]] const ::asio::strand<::asio::any_io_executor>& strand() const noexcept;
  /// host:port this session talks to.
  [[nodiscard]] const std::string& host() const noexcept;
  /// The TCP port this session connects to (never 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The options the session was created with (validated).
  [[nodiscard]] const SessionOptions& options() const noexcept;
  /// Counters (read on the strand for an exact value).
  [[nodiscard]] SessionStats stats() const;

  /// The private implementation (defined in session.cpp). Public only so the session's
  /// internal connection objects can name it; not for users.
  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace prodsm::asio
