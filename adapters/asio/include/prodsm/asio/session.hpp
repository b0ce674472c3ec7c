// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file session.hpp
/// prodsm::asio::Session: the HTTP/1.1 connections to one server on standalone Asio
/// 1.22. The sans-IO prodsm::http::Pool decides everything (which request goes on which
/// connection, pipelining or pooling, timeouts, stall detection, how each transport
/// failure is classified: E2, E4); the session only resolves, connects, writes, reads and
/// runs one timer, all on its strand. A Session is what a Producer owns (created for it,
/// closed by its close: C4) or is attached to (created by the caller, shared, left open
/// by the producer's close: C4).
///
/// Correct on an io_context run by any number of threads: every socket, timer and pool
/// operation runs on the session's strand, and a response that arrives before its
/// request's write completion ran is valid (the pool keeps the request's bytes until
/// both happened).

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/dispatch.hpp>
#include <asio/strand.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/pool.hpp"
#include "prodsm/session_options.hpp"
#include "prodsm/time.hpp"

namespace prodsm::asio {

/// The session's options, counters and request outcome: one type for both adapters
/// (prodsm/session_options.hpp).
using ConnectionMode = prodsm::ConnectionMode;
using SessionOptions = prodsm::SessionOptions;
using SessionStats = prodsm::SessionStats;
using ExchangeResult = prodsm::ExchangeResult;

/// Connections to one host:port. Create with Session::create; share through
/// std::shared_ptr. Thread-safe: exchange() and close() may be called from any thread;
/// the work runs on the session's strand, and so do the completion callbacks.
class Session : public std::enable_shared_from_this<Session> {
 public:
  /// Callback for exchange(); runs on the session's strand.
  using ExchangeHandler = std::function<void(ExchangeResult)>;

  /// A session to `host:port` (plaintext). Error text names the invalid option
  /// ("session.<field>: ...").
  [[nodiscard]] static tl::expected<std::shared_ptr<Session>, std::string> create(::asio::any_io_executor executor,
                                                                                  std::string host, std::uint16_t port,
                                                                                  SessionOptions options = {});
  /// A session to the server of `url` (its host and port; TLS for https://, with
  /// options.tls: "session.tls.ca_file: ..." when the trust store cannot be loaded).
  [[nodiscard]] static tl::expected<std::shared_ptr<Session>, std::string> create(::asio::any_io_executor executor,
                                                                                  const ds::StreamUrl& url,
                                                                                  SessionOptions options = {});

  /// Closes the connections (on the strand): outstanding requests fail as after close().
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Sends one request (its id is assigned here) and calls `done` with its response or a
  /// classified failure (http::Pool). Requests are written in call order. After close(),
  /// fails with `closed`.
  void exchange(http::Request request, ExchangeHandler done);
  /// Same, for a complete request given as bytes; `head_request`: the request is HEAD (no
  /// response body). Not retry_safe: only the request timeout gives up on it.
  void exchange(std::string request, bool head_request, ExchangeHandler done);

  /// exchange() as an Asio asynchronous operation: signature void(ExchangeResult).
  template <class CompletionToken>
  auto async_exchange(http::Request request, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(ExchangeResult)>(
        [self = shared_from_this()](auto handler, http::Request req) {
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          self->exchange(std::move(req), [shared](ExchangeResult r) {
            auto ex = ::asio::get_associated_executor(*shared);
            ::asio::dispatch(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
          });
        },
        token, std::move(request));
  }

  /// Same, for a complete request given as bytes (not retry_safe); `head_request`: HEAD.
  template <class CompletionToken>
  auto async_exchange(std::string request, bool head_request, CompletionToken&& token) {
    http::Request r;
    r.bytes = std::move(request);
    r.head = head_request;
    return async_exchange(std::move(r), std::forward<CompletionToken>(token));
  }

  /// Closes every connection; outstanding requests fail (written: connection_lost,
  /// indefinite; not written: closed, definite). Idempotent. Later exchanges fail with
  /// `closed`.
  void close();

  /// True once close() was called (or the Session was destroyed); any thread. A closed
  /// session refuses producers that attach to it.
  [[nodiscard]] bool closed() const noexcept;

  /// The strand every callback of this session runs on.
  [[nodiscard]] const ::asio::strand<::asio::any_io_executor>& strand() const noexcept;
  /// The host this session talks to.
  [[nodiscard]] const std::string& host() const noexcept;
  /// The TCP port this session connects to (never 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The options the session was created with (validated).
  [[nodiscard]] const SessionOptions& options() const noexcept;
  /// Counters (a snapshot taken on the strand after its last event).
  [[nodiscard]] SessionStats stats() const;

  /// The private implementation (defined in session.cpp); not for users.
  struct Impl;

 private:
  explicit Session(std::shared_ptr<Impl> impl);
  static std::shared_ptr<Session> wrap(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::asio
