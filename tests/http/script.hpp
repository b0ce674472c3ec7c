// SPDX-License-Identifier: Apache-2.0
// Script drivers for the http::Connection and http::Pool tests: virtual time, canned
// response bytes, writes "completed" in full or in part by the test. No sockets, no
// sleeps: every test reads as a script of socket events.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "prodsm/http/connection.hpp"
#include "prodsm/http/pool.hpp"

namespace prodsm::http::test {

using namespace std::chrono_literals;

/// The virtual instant `d` after the epoch.
inline Instant at(Duration d) {
  return Instant{} + d;
}

/// The bytes of request `id` (GET or HEAD): unique per id, so a write shows which
/// requests it carries.
inline std::string request_bytes(std::uint64_t id, bool head = false) {
  return std::string(head ? "HEAD" : "GET") + " /r" + std::to_string(id) + " HTTP/1.1\r\nHost: test\r\n\r\n";
}

/// A GET request.
inline Request get(std::uint64_t id, bool retry_safe = false) {
  Request r;
  r.id = RequestId{id};
  r.bytes = request_bytes(id);
  r.retry_safe = retry_safe;
  return r;
}

/// A HEAD request.
inline Request head(std::uint64_t id, bool retry_safe = false) {
  Request r = get(id, retry_safe);
  r.bytes = request_bytes(id, true);
  r.head = true;
  return r;
}

/// A 200 response with a Content-Length body.
inline std::string ok(std::string_view body = "ok") {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

/// A response with `status` and an empty Content-Length body plus extra header lines.
inline std::string status_response(int status, std::string_view extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + std::string(extra_headers) + "Content-Length: 0\r\n\r\n";
}

/// The bytes of a WriteView, concatenated (reading them checks they are still alive).
inline std::string joined(const WriteView& v) {
  std::string out;
  for (const auto part : v.spans()) out.append(part.data(), part.size());
  return out;
}

inline std::span<const char> as_span(std::string_view s) {
  return {s.data(), s.size()};
}

// ---- outcome checks -------------------------------------------------------------------------

/// The outcome is request `id`'s response with `status` (and `body` when given).
inline ::testing::AssertionResult IsResponse(const Outcome& o, std::uint64_t id, int status,
                                             std::optional<std::string_view> body = std::nullopt) {
  if (o.id.value != id) return ::testing::AssertionFailure() << "outcome for request " << o.id.value << ", not " << id;
  if (!o.result) return ::testing::AssertionFailure() << "request " << id << " failed: " << o.result.error().message;
  if (o.result->status != status) return ::testing::AssertionFailure() << "status " << o.result->status;
  if (body && o.result->body != *body) return ::testing::AssertionFailure() << "body '" << o.result->body << "'";
  return ::testing::AssertionSuccess();
}

/// The outcome is request `id`'s failure with `code` and `certainty`.
inline ::testing::AssertionResult IsFailure(const Outcome& o, std::uint64_t id, ErrorCode code, Certainty certainty) {
  if (o.id.value != id) return ::testing::AssertionFailure() << "outcome for request " << o.id.value << ", not " << id;
  if (o.result) return ::testing::AssertionFailure() << "request " << id << " succeeded (" << o.result->status << ")";
  const Error& e = o.result.error();
  if (e.code != code) {
    return ::testing::AssertionFailure() << "request " << id << ": code " << static_cast<int>(e.code) << ", not "
                                         << static_cast<int>(code) << " (" << e.message << ")";
  }
  if (e.certainty != certainty) {
    return ::testing::AssertionFailure() << "request " << id << ": certainty "
                                         << (e.certainty == Certainty::definite ? "definite" : "indefinite") << " ("
                                         << e.message << ")";
  }
  return ::testing::AssertionSuccess();
}

/// The error of a failed outcome (the outcome must be a failure).
inline const Error& error_of(const Outcome& o) {
  return o.result.error();
}

// ---- one connection -------------------------------------------------------------------------

/// Options for a test connection to "test:80".
inline ConnectionOptions connection_options() {
  ConnectionOptions o;
  o.peer = "test:80";
  o.connect_timeout_ns = 1s;
  o.request_timeout_ns = 10s;
  o.max_requests = 32;
  return o;
}

/// One Connection driven by a script, at a virtual `now` the script advances.
class ConnectionScript {
 public:
  explicit ConnectionScript(ConnectionOptions options = connection_options()) : conn_(std::move(options), now_) {}

  Connection& conn() { return conn_; }
  [[nodiscard]] Instant now() const { return now_; }
  void advance(Duration d) { now_ += d; }
  void set_now(Instant t) { now_ = t; }

  void connect() { conn_.on_connected(now_); }
  void connect_failed(std::string_view why) { conn_.on_connect_failed(now_, why); }
  void enqueue(Request r) { conn_.enqueue(now_, std::move(r)); }
  /// take_write: the view (not yet reported written).
  WriteView take() { return conn_.take_write(now_); }
  /// take_write, the bytes handed out (not yet reported written).
  std::string take_bytes() { return joined(take()); }
  /// take_write, then on_written for all of it: the bytes "written".
  std::string write_all() {
    const WriteView v = take();
    std::string bytes = joined(v);
    conn_.on_written(now_, v.bytes);
    return bytes;
  }
  void written(std::size_t bytes) { conn_.on_written(now_, bytes); }
  void feed(std::string_view bytes) { conn_.on_bytes(now_, as_span(bytes)); }
  /// Feeds `bytes` one byte per on_bytes call.
  void feed_bytewise(std::string_view bytes) {
    for (std::size_t i = 0; i < bytes.size(); ++i) conn_.on_bytes(now_, as_span(bytes.substr(i, 1)));
  }
  void eof() { conn_.on_eof(now_); }
  void error(std::string_view why) { conn_.on_error(now_, why); }
  /// handle_timeout at now with stall timeout `stall` (0: stall detection off).
  void tick(Duration stall = Duration{0}) { conn_.handle_timeout(now_, stall); }
  /// Every outcome produced so far (drained).
  std::vector<Outcome> outcomes() {
    std::vector<Outcome> out;
    while (auto o = conn_.poll_outcome()) out.push_back(std::move(*o));
    return out;
  }

 private:
  Instant now_ = at(0ms);
  Connection conn_;
};

// ---- a pool ---------------------------------------------------------------------------------

/// Options for a test pool to "test:80" (validated defaults, short timeouts).
inline PoolOptions pool_options(ConnectionMode mode = ConnectionMode::pipelined) {
  PoolOptions o;
  o.host = "test";
  o.port = 80;
  o.transport.mode = mode;
  o.transport.connect_timeout_ns = 1s;
  o.transport.request_timeout_ns = 10s;
  return o;
}

/// The socket commands of one drain, by kind.
struct Commands {
  std::vector<std::uint64_t> connects;  ///< Connect ids, in order
  std::vector<std::uint64_t> writes;    ///< Write ids, in order
  std::vector<std::uint64_t> closes;    ///< Close ids, in order
  [[nodiscard]] bool empty() const { return connects.empty() && writes.empty() && closes.empty(); }
};

/// One Pool driven by a script, at a virtual `now` the script advances.
class PoolScript {
 public:
  explicit PoolScript(PoolOptions options = pool_options()) : pool_(Pool::create(std::move(options)).value()) {}

  Pool& pool() { return pool_; }
  [[nodiscard]] Instant now() const { return now_; }
  void advance(Duration d) { now_ += d; }
  void set_now(Instant t) { now_ = t; }

  void enqueue(Request r) { pool_.enqueue(now_, std::move(r)); }
  void connect(std::uint64_t id) { pool_.on_connected(ConnectionId{id}, now_); }
  void connect_failed(std::uint64_t id, std::string_view why = "Connection refused") {
    pool_.on_connect_failed(ConnectionId{id}, now_, why);
  }
  WriteView take(std::uint64_t id) { return pool_.take_write(ConnectionId{id}, now_); }
  /// take_write on `id`, then on_written for all of it: the bytes "written".
  std::string write_all(std::uint64_t id) {
    const WriteView v = take(id);
    std::string bytes = joined(v);
    pool_.on_written(ConnectionId{id}, now_, v.bytes);
    return bytes;
  }
  void written(std::uint64_t id, std::size_t bytes) { pool_.on_written(ConnectionId{id}, now_, bytes); }
  void feed(std::uint64_t id, std::string_view bytes) { pool_.on_bytes(ConnectionId{id}, now_, as_span(bytes)); }
  void eof(std::uint64_t id) { pool_.on_eof(ConnectionId{id}, now_); }
  void error(std::uint64_t id, std::string_view why = "Connection reset by peer") {
    pool_.on_error(ConnectionId{id}, now_, why);
  }
  void tick() { pool_.handle_timeout(now_); }
  void close() { pool_.close(now_); }

  /// Every command produced so far (drained), by kind.
  Commands commands() {
    Commands c;
    while (auto cmd = pool_.poll_command()) {
      if (const auto* x = std::get_if<Connect>(&*cmd)) c.connects.push_back(x->id.value);
      if (const auto* x = std::get_if<Write>(&*cmd)) c.writes.push_back(x->id.value);
      if (const auto* x = std::get_if<Close>(&*cmd)) c.closes.push_back(x->id.value);
    }
    return c;
  }
  /// Every outcome produced so far (drained).
  std::vector<Outcome> outcomes() {
    std::vector<Outcome> out;
    while (auto o = pool_.poll_outcome()) out.push_back(std::move(*o));
    return out;
  }

  /// Connects `id`, writes what it has in full, and answers every request written with
  /// `response` (after `wait`): the common "one round trip" step.
  std::string round_trip(std::uint64_t id, Duration wait, std::string_view response) {
    std::string bytes = write_all(id);
    advance(wait);
    feed(id, response);
    return bytes;
  }

 private:
  Instant now_ = at(0ms);
  Pool pool_;
};

/// True when `bytes` carries request `id` (its request line).
inline bool carries(std::string_view bytes, std::uint64_t id) {
  return bytes.find(" /r" + std::to_string(id) + " ") != std::string_view::npos;
}

}  // namespace prodsm::http::test
