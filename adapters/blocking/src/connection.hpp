// SPDX-License-Identifier: Apache-2.0
#pragma once
// One pipelined keep-alive HTTP/1.1 connection on a nonblocking POSIX socket, driven by
// the blocking producer's I/O thread through poll(2). Not thread-safe: only the I/O
// thread touches it. It parses with the codec's ResponseParser and classifies transport
// failures with the same rules as the Asio session (adapters/asio/src/session.cpp):
//  - nothing of the request written (resolve/connect failed or timed out):
//    `unavailable`, definite, retryable;
//  - some of it written and no complete response (reset, EOF, request timeout):
//    `connection_lost`, indefinite, retryable;
//  - a malformed response: the parser's `protocol_error`.
// Requests not yet written when the connection dies go out on a new connection.

#include <poll.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/blocking/producer.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/ids.hpp"
#include "prodsm/time.hpp"

struct addrinfo;

namespace prodsm::blocking::detail {

struct CloseStreamOp;

/// One request and what its outcome is for: an attempt of a batch (batch, attempt,
/// sequenced) or a close_stream request (close_stream set).
struct Request {
  std::string bytes;  ///< head + body, complete
  BatchId batch{};
  std::uint32_t attempt = 0;
  bool sequenced = false;
  std::shared_ptr<CloseStreamOp> close_stream;
  bool write_started = false;  ///< some bytes may have reached the server
  Instant deadline{};          ///< request timeout, set when the write starts
};

/// A request's outcome: its response or a classified transport failure.
using ExchangeResult = tl::expected<ds::Response, Error>;

/// Connection settings (validated by the producer).
struct ConnectionOptions {
  std::string host;
  std::uint16_t port = 80;
  Duration connect_timeout_ns{};
  Duration request_timeout_ns{};
  Duration idle_reuse_limit_ns{};
  ds::ResponseLimits response_limits{};
};

class Connection {
 public:
  explicit Connection(ConnectionOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Queues a request (written after the ones queued before it).
  void enqueue(Request request, Instant now);
  /// Starts connecting / writes what it can. Call after enqueue and after events.
  void kick(Instant now);
  /// The pollfd to wait on (fd -1 when there is nothing to wait for).
  [[nodiscard]] pollfd poll_entry() const;
  /// Handles poll's revents for poll_entry().fd.
  void on_events(short revents, Instant now);
  /// Fails what timed out (connect or request timeout).
  void on_time(Instant now);
  /// The earliest connect or request deadline, if any.
  [[nodiscard]] std::optional<Instant> deadline() const;
  /// Closes the socket (C4); outstanding requests fail: written `connection_lost`, not
  /// written `closed`.
  void close(const std::string& why);
  /// The outcomes since the last call, in request order.
  std::vector<std::pair<Request, ExchangeResult>> take_outcomes() { return std::exchange(outcomes_, {}); }
  [[nodiscard]] bool has_outstanding() const noexcept { return !pending_.empty(); }
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  [[nodiscard]] const ConnectionStats& stats() const noexcept { return stats_; }

 private:
  enum class State : std::uint8_t { disconnected, connecting, connected };

  void start_connect(Instant now);
  bool try_connect_from(std::size_t index, Instant now);  // false: every address failed
  void on_connected(Instant now);
  void connect_failed(const std::string& why);
  void write_some(Instant now);
  void read_some(Instant now);
  void deliver_front(ds::Response response, Instant now);
  void fail_connection(const std::string& why);
  void reset_socket();
  void finish(Request request, ExchangeResult result) { outcomes_.emplace_back(std::move(request), std::move(result)); }

  ConnectionOptions options_;
  std::shared_ptr<addrinfo> addresses_;  // resolved once, dropped on connect failure
  std::size_t address_index_ = 0;
  int fd_ = -1;
  State state_ = State::disconnected;
  Instant connect_deadline_{};
  Instant last_activity_{};
  ds::ResponseParser parser_;
  std::deque<Request> pending_;
  std::size_t written_ = 0;       // pending_[0, written_) are fully written
  std::size_t write_offset_ = 0;  // bytes of pending_[written_] already written
  std::vector<std::pair<Request, ExchangeResult>> outcomes_;
  ConnectionStats stats_;
  std::array<char, 64 * 1024> read_buffer_{};
};

}  // namespace prodsm::blocking::detail
