// SPDX-License-Identifier: Apache-2.0
// http::Pool on byte scripts: both connection modes keep requests in enqueue order, a
// dying connection fails its own requests (E2) and moves none, failed connects do not
// loop, close() fails everything, options are validated and the queue is bounded (R3).
// Stall detection is in test_pool_stall.cpp. Virtual time only, no sockets.
#include <gtest/gtest.h>

#include "prodsm/http/pool.hpp"
#include "script.hpp"

namespace prodsm::http::test {
namespace {

using Ids = std::vector<std::uint64_t>;

// ---- pipelined mode ------------------------------------------------------------------------

// Pipelined mode carries every request on one connection, written in enqueue order, answered in order.
TEST(HttpPool, PipelinedModeUsesOneConnectionInEnqueueOrder) {
  PoolScript s;
  for (std::uint64_t id = 1; id <= 3; ++id) s.enqueue(get(id));
  auto c = s.commands();
  EXPECT_EQ(c.connects, Ids{1});
  EXPECT_TRUE(c.writes.empty()) << "nothing to write before the connect";
  s.connect(1);
  EXPECT_EQ(s.commands().writes, Ids{1});
  EXPECT_EQ(s.write_all(1), request_bytes(1) + request_bytes(2) + request_bytes(3));
  s.feed(1, ok("1") + ok("2") + ok("3"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(IsResponse(out[i], i + 1, 200, std::to_string(i + 1)));
  s.enqueue(get(4));
  c = s.commands();
  EXPECT_TRUE(c.connects.empty()) << "the connection is reused";
  EXPECT_EQ(c.writes, Ids{1});
  EXPECT_EQ(s.write_all(1), request_bytes(4));
  EXPECT_EQ(s.pool().stats().connections_opened, 1U);
  EXPECT_EQ(s.pool().stats().requests_written, 4U);
  EXPECT_EQ(s.pool().stats().responses, 3U);
}

// A write that wrote less than it was handed (a full send buffer; EAGAIN is 0 bytes) gets
// no Write command for the rest: a loop that drains commands until none is left and
// writes on each would otherwise spin on EAGAIN without ever reaching its timer. The
// rest is handed out again by the caller's next take_write (when the socket is
// writable), and once a write completes, new bytes bring a Write again.
TEST(HttpPool, AShortWriteGetsNoWriteCommandUntilTheCallerWritesAgain) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  EXPECT_EQ(s.commands().writes, Ids{1});
  WriteView v = s.take(1);
  ASSERT_EQ(v.bytes, request_bytes(1).size());
  s.written(1, 0);  // EAGAIN
  EXPECT_TRUE(s.commands().writes.empty()) << "no Write until the caller writes again";
  s.enqueue(get(2));  // more bytes while the caller waits for POLLOUT
  EXPECT_TRUE(s.commands().writes.empty()) << "still the caller's turn";
  v = s.take(1);  // POLLOUT: the caller writes again
  ASSERT_FALSE(v.empty());
  std::string sent(v.parts[0].data(), 5);
  s.written(1, 5);  // a short write
  EXPECT_TRUE(s.commands().writes.empty());
  sent += s.write_all(1);  // the rest, whole
  EXPECT_EQ(sent, request_bytes(1) + request_bytes(2));
  s.enqueue(get(3));
  EXPECT_EQ(s.commands().writes, Ids{1}) << "a completed write: new bytes bring a Write again";
  EXPECT_EQ(s.write_all(1), request_bytes(3));
}

// Past max_pipelined_requests, requests wait in the pool's queue and go out in order as answers free places.
TEST(HttpPool, PipelinedQueueWaitsForAFreePlace) {
  PoolOptions o = pool_options();
  o.transport.max_pipelined_requests = 2;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 4; ++id) s.enqueue(get(id));
  s.connect(1);
  EXPECT_EQ(s.pool().outstanding(), 4U);
  EXPECT_EQ(s.write_all(1), request_bytes(1) + request_bytes(2));
  s.feed(1, ok());
  EXPECT_EQ(s.write_all(1), request_bytes(3));
  s.feed(1, ok() + ok());
  EXPECT_EQ(s.write_all(1), request_bytes(4));
  s.feed(1, ok());
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 4U);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(IsResponse(out[i], i + 1, 200));
  EXPECT_EQ(s.commands().connects, Ids{1});
}

// ---- pool mode -----------------------------------------------------------------------------

// Pool mode: the queue head goes to the first connection that opens, so requests go out in enqueue order.
TEST(HttpPool, PoolModeKeepsEnqueueOrderAcrossConnections) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 3;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 3; ++id) s.enqueue(get(id));
  EXPECT_EQ(s.commands().connects, (Ids{1, 2, 3}));
  s.connect(3);  // the newest connection opens first: it takes the oldest request
  EXPECT_EQ(s.commands().writes, Ids{3});
  EXPECT_EQ(s.write_all(3), request_bytes(1));
  s.connect(1);
  EXPECT_EQ(s.write_all(1), request_bytes(2));
  s.connect(2);
  EXPECT_EQ(s.write_all(2), request_bytes(3));
  s.feed(2, ok("c"));
  s.feed(3, ok("a"));
  s.feed(1, ok("b"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsResponse(out[0], 3, 200, "c"));
  EXPECT_TRUE(IsResponse(out[1], 1, 200, "a"));
  EXPECT_TRUE(IsResponse(out[2], 2, 200, "b"));
}

// Pool mode: a request never goes out ahead of an older queued one; an idle connection takes the queue head.
TEST(HttpPool, PoolModeNeverSendsAheadOfAnOlderQueuedRequest) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 4; ++id) s.enqueue(get(id));
  EXPECT_EQ(s.commands().connects, (Ids{1, 2})) << "no more than max_connections";
  s.connect(1);
  EXPECT_EQ(s.write_all(1), request_bytes(1));
  s.feed(1, ok());  // connection 1 idle again: it takes request 2, not a later one
  EXPECT_EQ(s.write_all(1), request_bytes(2));
  s.connect(2);
  EXPECT_EQ(s.write_all(2), request_bytes(3));
  s.feed(2, ok());
  EXPECT_EQ(s.write_all(2), request_bytes(4));
  EXPECT_TRUE(s.take(1).empty()) << "one request outstanding per connection";
  EXPECT_TRUE(s.commands().connects.empty());
}

// Pool mode: an idle open connection is reused rather than a new one opened.
TEST(HttpPool, PoolModeReusesAnIdleConnection) {
  PoolScript s(pool_options(ConnectionMode::pool));
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 1ms, ok());
  s.commands();
  s.enqueue(get(2));
  const auto c = s.commands();
  EXPECT_TRUE(c.connects.empty());
  EXPECT_EQ(c.writes, Ids{1});
}

// ---- faults (E2) ---------------------------------------------------------------------------

// A dying connection fails its own requests (written indefinite, not written definite) and moves none elsewhere.
TEST(E2, PoolConnectionFailureFailsItsRequestsWithoutMovingThem) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  const WriteView v = s.take(1);
  s.enqueue(get(2));  // behind the write in progress
  s.written(1, v.bytes);
  s.commands();
  s.eof(1);
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite));
  const auto c = s.commands();
  EXPECT_EQ(c.closes, Ids{1});
  EXPECT_TRUE(c.connects.empty()) << "request 2 is not resent on a new connection";
  EXPECT_EQ(s.pool().outstanding(), 0U);
  EXPECT_EQ(s.pool().stats().transport_failures, 2U);
  s.enqueue(get(3));  // the caller's retry opens the next connection
  EXPECT_EQ(s.commands().connects, Ids{2});
}

// Pool mode: a reset fails only the request of that connection; the other connection's request is untouched.
TEST(E2, PoolModeResetFailsOnlyThatConnectionsRequest) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.connect(1);
  s.connect(2);
  s.write_all(1);
  s.write_all(2);
  s.error(1);
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  s.feed(2, ok());
  out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 2, 200));
}

// A failed connect with no open connection fails the queued requests (`unavailable`, definite) and does not reconnect.
TEST(E2, FailedConnectWithNoOpenConnectionFailsTheQueue) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 3; ++id) s.enqueue(get(id));
  EXPECT_EQ(s.commands().connects, (Ids{1, 2}));
  s.connect_failed(1, "Connection refused");
  EXPECT_TRUE(s.outcomes().empty()) << "connection 2 is still connecting: the queue waits for it";
  EXPECT_TRUE(s.commands().connects.empty()) << "no new connect after a failure";
  s.connect_failed(2, "Connection refused");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(IsFailure(out[i], i + 1, ErrorCode::unavailable, Certainty::definite));
    EXPECT_TRUE(error_of(out[i]).retryable);
  }
  EXPECT_NE(error_of(out[0]).message.find("Connection refused"), std::string::npos);
  const auto c = s.commands();
  EXPECT_EQ(c.closes, Ids{2});
  EXPECT_TRUE(c.connects.empty()) << "no reconnect loop";
  EXPECT_EQ(s.pool().stats().connect_failures, 2U);
  EXPECT_EQ(s.pool().outstanding(), 0U);
}

// A connect that fails while another connection is open and busy does not start a loop
// of connects: the queue waits for the open one, and the next enqueue may try again.
TEST(HttpPool, FailedConnectBesideABusyConnectionDoesNotLoop) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 3;
  PoolScript s(o);
  s.enqueue(get(1));
  EXPECT_EQ(s.commands().connects, Ids{1});
  s.connect(1);
  (void)s.commands();
  s.write_all(1);  // request 1 is on connection 1, waiting for its response
  s.enqueue(get(2));
  EXPECT_EQ(s.commands().connects, Ids{2});
  s.connect_failed(2, "Connection refused");
  EXPECT_TRUE(s.outcomes().empty()) << "request 2 waits for connection 1";
  EXPECT_TRUE(s.commands().connects.empty()) << "no connect loop";
  s.feed(1, ok());
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200));
  s.write_all(1);  // request 2 goes out on connection 1, now idle
  s.feed(1, ok());
  out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 2, 200));
}

// A request waiting for the open connection (a connect beside it failed) is not left
// behind when that connection ends: the pool connects again for it, once (E2, no
// silent hang; found by the http_transport fuzz target).
TEST(E2, QueueWaitingForAConnectionThatEndsConnectsAgain) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  (void)s.commands();
  s.write_all(1);
  s.enqueue(get(2));
  EXPECT_EQ(s.commands().connects, Ids{2});
  s.connect_failed(2, "Connection refused");
  EXPECT_TRUE(s.commands().connects.empty()) << "request 2 waits for connection 1";
  s.eof(1);  // connection 1 ends before its response
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_EQ(s.commands().connects, Ids{3}) << "request 2 gets a connection of its own";
  EXPECT_EQ(s.pool().outstanding(), 1U);
  s.connect_failed(3, "Connection refused");  // and if that fails too, request 2 fails: no loop
  out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 2, ErrorCode::unavailable, Certainty::definite));
  EXPECT_TRUE(s.commands().connects.empty()) << "no connect loop";
  EXPECT_EQ(s.pool().outstanding(), 0U);
}

// A request refused at enqueue (the queue is full) does not lift the pause after a
// failed connect: only an accepted request may try a connection again (no connect on
// the next timer; found by the http_transport fuzz target).
TEST(E2, RefusedEnqueueDoesNotEndTheConnectPause) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 3;
  o.transport.max_queued_requests = 1;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  (void)s.commands();
  s.write_all(1);
  s.enqueue(get(2));
  EXPECT_EQ(s.commands().connects, Ids{2});
  s.connect_failed(2, "Connection refused");
  s.enqueue(get(3));  // refused: request 2 fills the queue
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 3, ErrorCode::unavailable, Certainty::definite));
  s.advance(1ms);
  s.tick();
  EXPECT_TRUE(s.commands().connects.empty()) << "request 2 still waits for connection 1";
  s.feed(1, ok());
  s.write_all(1);
  s.feed(1, ok());
  out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[1], 2, 200));
}

// Pipelined mode: a failed connect fails the requests on the connection and those queued behind, in order.
TEST(E2, PipelinedConnectFailureFailsConnectionAndQueueInOrder) {
  PoolOptions o = pool_options();
  o.transport.max_pipelined_requests = 1;
  PoolScript s(o);
  s.enqueue(get(1));
  s.enqueue(get(2));  // waits in the pool's queue
  s.connect_failed(1);
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::unavailable, Certainty::definite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::unavailable, Certainty::definite));
  EXPECT_TRUE(s.commands().connects == Ids{1}) << "only the first connect";
}

// The connect timeout fails the waiting requests `unavailable`, definite, at its deadline and not before (D3).
TEST(D3, PoolConnectTimeoutFiresAtItsDeadlineNotBefore) {
  PoolScript s(pool_options(ConnectionMode::pool));
  s.enqueue(get(1));
  s.commands();
  ASSERT_EQ(s.pool().next_deadline(), at(1s));
  s.set_now(at(1s) - 1ns);
  s.tick();
  s.tick();
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_TRUE(s.commands().empty()) << "a handle_timeout before a deadline is a no-op";
  s.set_now(at(1s));
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::unavailable, Certainty::definite));
  EXPECT_EQ(s.commands().closes, Ids{1});
  EXPECT_EQ(s.pool().stats().connect_failures, 1U);
  EXPECT_FALSE(s.pool().next_deadline().has_value());
}

// ---- idle reuse ----------------------------------------------------------------------------

// A connection idle for longer than idle_reuse_limit_ns is replaced before reuse; within the limit it is reused.
TEST(HttpPool, IdleReuseLimitReplacesAStaleConnection) {
  PoolOptions o = pool_options();
  o.transport.idle_reuse_limit_ns = 4s;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 1s, ok());  // idle from 1 s
  s.commands();
  s.set_now(at(5s));  // idle exactly the limit: still reused
  s.enqueue(get(2));
  auto c = s.commands();
  EXPECT_TRUE(c.connects.empty());
  s.round_trip(1, 0s, ok());  // idle from 5 s
  s.commands();
  s.set_now(at(9s) + 1ns);
  s.enqueue(get(3));
  c = s.commands();
  EXPECT_EQ(c.closes, Ids{1});
  EXPECT_EQ(c.connects, Ids{2});
  EXPECT_EQ(s.outcomes().size(), 2U) << "replacing an idle connection fails nothing";
  s.connect(2);
  EXPECT_EQ(s.write_all(2), request_bytes(3));
}

// Pool mode: a stale idle connection is replaced, and the request waits for the new one.
TEST(HttpPool, PoolModeReplacesAStaleIdleConnection) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.idle_reuse_limit_ns = 1s;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 0s, ok());
  s.commands();
  s.advance(2s);
  s.enqueue(get(2));
  const auto c = s.commands();
  EXPECT_EQ(c.closes, Ids{1});
  EXPECT_EQ(c.connects, Ids{2});
  EXPECT_FALSE(s.pool().knows(ConnectionId{1}));
}

// ---- close ---------------------------------------------------------------------------------

// close() fails everything (handed out indefinite, the rest `closed` definite), emits Close, refuses later requests.
TEST(HttpPool, CloseFailsEverythingAndClosesEveryConnection) {
  PoolOptions o = pool_options();
  o.transport.max_pipelined_requests = 2;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  const WriteView v = s.take(1);  // request 1 handed out, write in progress
  s.enqueue(get(2));              // on the connection, not handed out
  s.enqueue(get(3));              // in the pool's queue
  s.commands();
  s.close();
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::closed, Certainty::definite));
  EXPECT_TRUE(IsFailure(out[2], 3, ErrorCode::closed, Certainty::definite));
  EXPECT_FALSE(error_of(out[2]).retryable);
  EXPECT_EQ(s.commands().closes, Ids{1});
  EXPECT_TRUE(s.pool().closed());
  EXPECT_EQ(s.pool().outstanding(), 0U);
  s.enqueue(get(4));
  out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 4, ErrorCode::closed, Certainty::definite));
  EXPECT_TRUE(s.commands().empty()) << "a closed pool opens nothing";
  s.close();
  EXPECT_TRUE(s.outcomes().empty()) << "idempotent";
  EXPECT_TRUE(s.commands().empty());
  s.written(1, v.bytes);
  EXPECT_FALSE(s.pool().knows(ConnectionId{1}));
}

// close() also closes connections still connecting (their requests fail `closed`, definite).
TEST(HttpPool, CloseClosesConnectingConnections) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  s.enqueue(get(1));
  s.enqueue(get(2));
  EXPECT_EQ(s.commands().connects, (Ids{1, 2}));
  s.close();
  const auto c = s.commands();
  EXPECT_EQ(c.closes, (Ids{1, 2}));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::closed, Certainty::definite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::closed, Certainty::definite));
  EXPECT_EQ(s.pool().stats().connect_failures, 0U) << "a local close is not a connect failure";
  EXPECT_FALSE(s.pool().next_deadline().has_value());
}

// A closed connection with a write in progress keeps its bytes (and its id) until on_written reports the end.
TEST(HttpPool, ClosedConnectionKeepsWriteBytesUntilOnWritten) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  const WriteView v = s.take(1);
  s.feed(1, status_response(200, "Connection: close\r\n"));  // answered and closed before the write ended
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_EQ(s.commands().closes, Ids{1});
  EXPECT_TRUE(s.pool().knows(ConnectionId{1}));
  s.enqueue(get(2));  // goes to a new connection; connection 1 still holds its write
  EXPECT_EQ(s.commands().connects, Ids{2});
  EXPECT_EQ(joined(v), request_bytes(1)) << "the bytes of the write in progress are intact";
  s.written(1, v.bytes);
  EXPECT_FALSE(s.pool().knows(ConnectionId{1}));
  EXPECT_EQ(s.pool().stats().requests_written, 1U) << "a dropped connection's counters are kept";
  EXPECT_EQ(s.pool().stats().responses, 1U);
}

// Events for an unknown or already closed connection id are ignored.
TEST(HttpPool, EventsForUnknownOrClosedIdsAreIgnored) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 0ms, ok());
  s.eof(1);  // the server closes the idle connection
  EXPECT_EQ(s.outcomes().size(), 1U);
  EXPECT_EQ(s.commands().closes, Ids{1});
  EXPECT_FALSE(s.pool().knows(ConnectionId{1}));
  for (const std::uint64_t id : {1U, 99U}) {
    s.connect(id);
    s.connect_failed(id);
    EXPECT_TRUE(s.take(id).empty());
    s.written(id, 10);
    s.feed(id, ok());
    s.eof(id);
    s.error(id);
  }
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_TRUE(s.commands().empty());
  EXPECT_EQ(s.pool().stats().connections_opened, 1U);
  EXPECT_EQ(s.pool().stats().connect_failures, 0U);
}

// ---- options and bounds --------------------------------------------------------------------

// validate() names the first bad field; create() refuses invalid options with that text.
TEST(HttpPool, ValidateNamesTheBadField) {
  const auto bad = [](auto mutate) {
    PoolOptions o = pool_options();
    mutate(o);
    return o.validate().value_or("");
  };
  EXPECT_EQ(pool_options().validate(), std::nullopt);
  EXPECT_EQ(bad([](PoolOptions& o) { o.host.clear(); }), "host: must not be empty");
  EXPECT_EQ(bad([](PoolOptions& o) { o.port = 0; }), "port: must be in 1..65535 (got 0)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.max_connections = 0; }), "max_connections: must be in 1..64 (got 0)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.max_connections = 65; }),
            "max_connections: must be in 1..64 (got 65)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.max_pipelined_requests = 1025; }),
            "max_pipelined_requests: must be in 1..1024 (got 1025)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.connect_timeout_ns = 0ms; }).rfind("connect_timeout_ns: ", 0), 0U);
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.request_timeout_ns = 11min; }).rfind("request_timeout_ns: ", 0), 0U);
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.idle_reuse_limit_ns = -1ns; }).rfind("idle_reuse_limit_ns: ", 0), 0U);
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.stall.min_ns = 50us; }).rfind("stall.min_ns: ", 0), 0U);
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.stall.initial_ns = 1ms; }).rfind("stall.initial_ns: ", 0), 0U);
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.response_limits.max_header_bytes = 10; }),
            "response_limits.max_header_bytes: must be in 256..1048576 (got 10)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.response_limits.max_headers = 1025; }),
            "response_limits.max_headers: must be in 8..1024 (got 1025)");
  EXPECT_EQ(bad([](PoolOptions& o) {
              o.transport.response_limits.max_body_bytes = SIZE_MAX;
            }).rfind("response_limits.max_body_bytes: must be in 1024..1073741824 (got ", 0),
            0U);
  EXPECT_EQ(bad([](PoolOptions& o) {
              o.transport.response_limits.max_header_bytes = ResponseLimits::kMaxHeaderBytes;
              o.transport.response_limits.max_headers = ResponseLimits::kMinHeaders;
              o.transport.response_limits.max_body_bytes = ResponseLimits::kMaxBodyBytes;
            }),
            "")
      << "the ends of the ranges are valid";
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.max_queued_requests = 0; }),
            "max_queued_requests: must be in 1..65536 (got 0)");
  EXPECT_EQ(bad([](PoolOptions& o) { o.transport.mode = static_cast<ConnectionMode>(7); }).rfind("mode: ", 0), 0U);
  PoolOptions o = pool_options();
  o.port = 0;
  const auto created = Pool::create(o);
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error(), "port: must be in 1..65535 (got 0)");
}

// max_queued_requests bounds the pool's queue: one more fails at once (`unavailable`, definite).
TEST(R3, MaxQueuedRequestsBoundsThePoolQueue) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 1;
  o.transport.max_queued_requests = 2;
  PoolScript s(o);
  s.enqueue(get(1));
  s.enqueue(get(2));
  EXPECT_TRUE(s.outcomes().empty());
  s.enqueue(get(3));
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 3, ErrorCode::unavailable, Certainty::definite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_NE(error_of(out[0]).message.find("max_queued_requests"), std::string::npos);
  s.connect(1);  // request 1 leaves the queue for the connection: a place is free again
  s.enqueue(get(4));
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.pool().outstanding(), 3U);
}

// Pool mode opens no more than max_connections connections, however many requests wait.
TEST(R3, PoolModeOpensAtMostMaxConnections) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 3;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 10; ++id) s.enqueue(get(id));
  EXPECT_EQ(s.commands().connects, (Ids{1, 2, 3}));
  EXPECT_EQ(s.pool().outstanding(), 10U);
}

// D3: the pool reads a `now` that steps back as the latest instant an input brought: a
// run whose clock steps back from 10 s to 2 s has the deadlines of one whose clock stayed.
TEST(D3, PoolReadsAClockSteppedBackAsTheLatestInstant) {
  auto run = [](Instant step_back_to) {
    PoolScript s;
    s.enqueue(get(1, true));
    s.commands();
    s.connect(1);  // at 0 s
    s.set_now(at(10s));
    s.tick();  // an input at 10 s
    s.set_now(step_back_to);
    s.write_all(1);
    return s.pool().next_deadline();
  };
  const auto steady = run(at(10s));
  ASSERT_TRUE(steady.has_value());
  EXPECT_GT(*steady, at(10s));
  EXPECT_EQ(run(at(2s)), steady);
}

// D3: only differences between instants matter: a pool whose first input comes before the
// clock's epoch takes it as given. The connect timeout and the request timeout run from
// that instant, not from the epoch.
TEST(D3, PoolTakesAnInstantBeforeTheClocksEpochAsGiven) {
  PoolScript s;
  s.set_now(at(-100s));
  s.enqueue(get(1));
  EXPECT_EQ(s.commands().connects, Ids{1});
  EXPECT_EQ(s.pool().next_deadline(), at(-100s) + 1s) << "connect_timeout_ns from the enqueue";
  s.connect(1);
  EXPECT_EQ(s.write_all(1), request_bytes(1));
  EXPECT_EQ(s.pool().next_deadline(), at(-100s) + 10s) << "request_timeout_ns from the write";
  s.set_now(at(-90s) - 1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "never early";
  s.set_now(at(-90s));
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
}

// E2 + P1: requests behind a response that closes the connection, none of them written
// yet, were not processed: they go out again on the next connection, first and in order,
// ahead of a request enqueued after them, and their caller sees no failure.
TEST(E2, PoolSendsUnwrittenRequestsBehindAClosingResponseAgainFirstAndInOrder) {
  PoolScript s;
  s.enqueue(get(1));
  EXPECT_EQ(s.commands().connects, (Ids{1}));
  s.connect(1);
  EXPECT_EQ(s.write_all(1), request_bytes(1));
  s.enqueue(get(2));  // on the connection, not yet written
  s.enqueue(get(3));
  s.feed(1, status_response(200, "Connection: close\r\n"));
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U) << "2 and 3 are not failed: they go out again";
  EXPECT_TRUE(IsResponse(out[0], 1, 200));
  const Commands c = s.commands();
  EXPECT_EQ(c.closes, (Ids{1}));
  EXPECT_EQ(c.connects, (Ids{2}));
  s.enqueue(get(4));  // made after the close: behind them
  s.connect(2);
  EXPECT_EQ(s.write_all(2), request_bytes(2) + request_bytes(3) + request_bytes(4));
  s.feed(2, ok() + ok() + ok());
  out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsResponse(out[0], 2, 200));
  EXPECT_TRUE(IsResponse(out[1], 3, 200));
  EXPECT_TRUE(IsResponse(out[2], 4, 200));
  EXPECT_EQ(s.pool().stats().requeued, 2U);
}

// E2: a request never written when its connection ended (the server closed it idle) goes
// out again, at most Pool::kMaxRequeues times; then it fails definite, so a server that
// closes every connection before a request is written is no loop.
TEST(E2, PoolSendsAnUnwrittenRequestAgainAtMostKMaxRequeuesTimes) {
  PoolScript s;
  s.enqueue(get(1));
  for (std::uint64_t conn = 1; conn <= Pool::kMaxRequeues + 1; ++conn) {
    EXPECT_EQ(s.commands().connects, (Ids{conn}));
    s.connect(conn);
    s.eof(conn);  // before anything was written
    const auto out = s.outcomes();
    if (conn <= Pool::kMaxRequeues) {
      EXPECT_TRUE(out.empty()) << "queued again, time " << conn;
      continue;
    }
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::definite));
    EXPECT_NE(error_of(out[0]).message.find("closed before the request was sent"), std::string::npos);
  }
  EXPECT_EQ(s.pool().stats().requeued, Pool::kMaxRequeues);
}

// E2: a request written when its connection was lost may have been processed: it fails
// indefinite, and those behind it fail with it (definite) rather than go out again ahead
// of its resend — the caller resends them all in its own order.
TEST(E2, PoolFailsTheRequestsBehindOneThatMayHaveBeenProcessed) {
  PoolScript s;
  s.enqueue(get(1));
  s.commands();
  s.connect(1);
  s.write_all(1);
  s.enqueue(get(2));
  s.enqueue(get(3));
  s.eof(1);
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_TRUE(IsFailure(out[2], 3, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_EQ(s.pool().stats().requeued, 0U);
}

// awaiting_response: only while a request handed to a write has no response — what tells
// an adapter that an end of file in the socket is no answer (the server closed it idle).
TEST(HttpPool, AwaitingResponseOnlyWhileAHandedOutRequestIsUnanswered) {
  PoolScript s;
  EXPECT_FALSE(s.pool().awaiting_response(ConnectionId{1})) << "unknown connection";
  s.enqueue(get(1));
  s.commands();
  s.connect(1);
  EXPECT_FALSE(s.pool().awaiting_response(ConnectionId{1})) << "queued, nothing handed out";
  const WriteView v = s.take(1);
  EXPECT_TRUE(s.pool().awaiting_response(ConnectionId{1})) << "handed to a write";
  s.written(1, v.bytes);
  EXPECT_TRUE(s.pool().awaiting_response(ConnectionId{1}));
  s.feed(1, ok());
  EXPECT_FALSE(s.pool().awaiting_response(ConnectionId{1})) << "answered";
  s.enqueue(get(2));
  EXPECT_FALSE(s.pool().awaiting_response(ConnectionId{1})) << "the next request is not handed out yet";
}

// A spurious or repeated handle_timeout on a busy pool produces no command and no outcome.
TEST(D3, PoolHandleTimeoutBeforeADeadlineIsANoOp) {
  PoolOptions o = pool_options(ConnectionMode::pool);
  o.transport.max_connections = 2;
  PoolScript s(o);
  for (std::uint64_t id = 1; id <= 3; ++id) s.enqueue(get(id, true));
  s.connect(1);
  s.write_all(1);
  s.commands();
  const auto deadline = s.pool().next_deadline();
  ASSERT_EQ(deadline, at(1s)) << "connection 2's connect deadline and request 1's stall deadline";
  for (int i = 0; i < 3; ++i) {
    s.set_now(*deadline - 1ns);
    s.tick();
  }
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_TRUE(s.commands().empty());
  EXPECT_EQ(s.pool().next_deadline(), deadline);
}

}  // namespace
}  // namespace prodsm::http::test

namespace prodsm::http::test {
namespace {

// An empty request is refused at once (it could never be sent), in enqueue order.
TEST(HttpPool, EmptyRequestIsRefusedAtOnce) {
  PoolScript s;
  Request empty;
  empty.id = RequestId{7};
  s.enqueue(std::move(empty));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 7, ErrorCode::unavailable, Certainty::definite));
  EXPECT_TRUE(s.commands().connects.empty());
}

// Connects the adapter was not yet asked to make are withdrawn by close(): nothing
// connects only to be closed.
TEST(HttpPool, CloseWithdrawsConnectsNotYetTaken) {
  PoolScript s;
  s.enqueue(get(1));  // a Connect is queued, not yet polled
  s.close();
  const auto c = s.commands();
  EXPECT_TRUE(c.connects.empty());
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::closed, Certainty::definite));
}

}  // namespace
}  // namespace prodsm::http::test
