// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file session.hpp
/// prodsm::blocking::Session: the HTTP/1.1 connections to one server on plain POSIX
/// sockets, for programs without an event loop. One I/O thread runs poll(2) over an
/// eventfd and nonblocking sockets and carries out what the sans-IO prodsm::http::Pool
/// decides (pipelining or pooling, timeouts, stall detection, how each transport failure
/// is classified: E2, E4). It also runs the deadlines of the producers attached to it.
/// A Session is what a Producer owns (created for it, closed by its close: C4) or is
/// attached to (created by the caller, shared, left open by the producer's close: C4).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/pool.hpp"
#include "prodsm/session_options.hpp"
#include "prodsm/time.hpp"

namespace prodsm::blocking {

/// The session's options, counters and request outcome: one type for both adapters
/// (prodsm/session_options.hpp).
using ConnectionMode = prodsm::ConnectionMode;
using SessionOptions = prodsm::SessionOptions;
using SessionStats = prodsm::SessionStats;
using ExchangeResult = prodsm::ExchangeResult;

/// Connections to one host:port, driven by one I/O thread. Create with Session::create;
/// share through std::shared_ptr. Thread-safe.
class Session : public std::enable_shared_from_this<Session> {
 public:
  /// Callback for exchange(); runs on the session's I/O thread. It must not block.
  using ExchangeHandler = std::function<void(ExchangeResult)>;

  /// A session to `host:port` (its I/O thread starts now; no connection is opened
  /// before the first request). Error text names the invalid option ("session.<field>: ...").
  [[nodiscard]] static tl::expected<std::shared_ptr<Session>, std::string> create(std::string host, std::uint16_t port,
                                                                                  SessionOptions options = {});
  /// A session to the server of `url` (its host and port; TLS for https://, with
  /// options.tls: "session.tls.ca_file: ..." when the trust store cannot be loaded).
  [[nodiscard]] static tl::expected<std::shared_ptr<Session>, std::string> create(const ds::StreamUrl& url,
                                                                                  SessionOptions options = {});

  /// Closes (see close()) and joins the I/O thread.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Sends one request (its id is assigned here) and calls `done` on the I/O thread with
  /// its response or a classified failure. Requests are written in call order. After
  /// close(), fails with `closed`, definite — calling `done` at once, on the calling
  /// thread, before exchange() returns (a caller holding a lock `done` takes must not
  /// call it with that lock held; the producers take such outcomes in their drive).
  void exchange(http::Request request, ExchangeHandler done);
  /// Sends one request and waits for its outcome, up to `timeout_ns` (then `cancelled`,
  /// indefinite: the request goes on). From the I/O thread (inside a handler) it does
  /// not wait: `would_block`.
  ExchangeResult exchange_and_wait(http::Request request, std::optional<Duration> timeout_ns = std::nullopt);

  /// Fails every outstanding request (written: connection_lost, indefinite; not written:
  /// closed, definite), closes the connections and stops the I/O thread (joined, unless
  /// called from it). Idempotent. Later exchanges fail with `closed`.
  void close();

  /// True once close() was called (or the Session was destroyed); any thread. A closed
  /// session refuses producers that attach to it.
  [[nodiscard]] bool closed() const;

  /// The host this session talks to.
  [[nodiscard]] const std::string& host() const noexcept;
  /// The TCP port this session connects to (never 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The options the session was created with (validated).
  [[nodiscard]] const SessionOptions& options() const noexcept;
  /// Counters (a snapshot the I/O thread takes after every turn).
  [[nodiscard]] SessionStats stats() const;

  /// The private implementation (src/session_impl.hpp); not for users.
  struct Impl;
  /// The implementation, for the producers attached to this session (not for users).
  [[nodiscard]] const std::shared_ptr<Impl>& impl() const noexcept { return impl_; }

 private:
  explicit Session(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::blocking
