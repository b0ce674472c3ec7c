// SPDX-License-Identifier: Apache-2.0
// The blocking adapter's transport classification (E2, E4, S7), connection reuse and
// option validation (B3): against a scripted in-process fake server where the transport
// must misbehave on purpose, or with no server at all.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "blocking_test_support.hpp"
#include "liveness.hpp"
#include "prodsm/blocking/producer.hpp"
#include "prodsm/http/request_fields.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

// E2/E4: no server → unavailable, definite, retryable; retried max_attempts times.
TEST(E2, BlockingRefusedConnectionIsUnavailableDefiniteAndRetried) {
  auto options = options_for("http://127.0.0.1:1/nowhere");
  options.producer.retry.max_attempts = 3;
  options.producer.retry.backoff_initial_ns = 10ms;
  options.producer.retry.backoff_max_ns = 20ms;
  auto producer = blocking::Producer::create(options).value();
  auto ticket = producer.submit("x\n").value();
  auto r = ticket.wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_TRUE(r.error().retryable);
  EXPECT_EQ(producer.stats().core.sends, 3U);
}

// E2/E4: the server takes the request and drops the connection → connection_lost,
// indefinite; without idempotence that is terminal (E4), and nothing is resent.
TEST(E2, BlockingDroppedConnectionAfterTheWriteIsConnectionLostIndefinite) {
  FakeServer fake([](int) { return FakeServer::Reply{FakeServer::Action::drop, {}}; });
  auto producer = blocking::Producer::create(options_for(fake.url(), "")).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::connection_lost);
  EXPECT_EQ(r.error().certainty, Certainty::indefinite);
  EXPECT_EQ(fake.requests.load(), 1) << "E4: an indefinite failure of a plain append is not resent";
}

// E2: a server may close an idle keep-alive connection at any time (RFC 9112 section
// 9.3.1). Here its FIN arrives while the I/O thread is busy (the first response's
// handler waits 100 ms) and before the next request is written: the session looks at the
// socket before writing on a connection that awaits no response, so the request, never
// written, goes out on a new connection (the pool queues it again). Written on the
// closed connection, it would be lost and count as possibly applied (indefinite).
TEST(E2, BlockingARequestIsNotWrittenOnAConnectionTheServerClosedWhileIdle) {
  FakeServer fake([](int) {
    return FakeServer::Reply{FakeServer::Action::respond_and_close, FakeServer::ok_plain().bytes};
  });
  auto session = blocking::Session::create(ds::StreamUrl::parse(fake.url()).value()).value();
  expect_no_write_into_a_connection_closed_while_idle(session, fake);
  session->close();
}

// E2: no response within request_timeout_ns → connection_lost, indefinite; the
// idempotent producer resends the same bytes on a new connection (E4).
TEST(E2, BlockingRequestTimeoutIsConnectionLostAndTheIdempotentProducerResends) {
  FakeServer fake([](int n) {
    if (n == 0) return FakeServer::Reply{FakeServer::Action::hang, {}};
    return FakeServer::Reply{FakeServer::Action::respond,
                             // No echo headers: the producer's epoch is fresh per run (an echo
                             // of another epoch would be refused, issue 22).
                             "HTTP/1.1 200 OK\r\nStream-Next-Offset: 0000_0001\r\nContent-Length: 0\r\n\r\n"};
  });
  auto options = options_for(fake.url(), "timeout-test");
  // Long enough for the fake server (one thread) to see the first connection close,
  // accept the next and answer the resend on a loaded machine: a second timeout would
  // add a retry and a connection.
  options.session.request_timeout_ns = 500ms;
  options.producer.retry.backoff_initial_ns = 1ms;
  auto producer = blocking::Producer::create(options).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(producer.stats().core.retries, 1U);
  EXPECT_EQ(producer.stats().session.connections_opened, 2U);
  EXPECT_EQ(fake.requests.load(), 2);
}

// S7 at the transport: a malformed response is a protocol_error (terminal).
TEST(S7, BlockingMalformedResponseIsAProtocolError) {
  FakeServer fake([](int) { return FakeServer::Reply{FakeServer::Action::respond, "HTTP/1.1 abc\r\n\r\n"}; });
  auto producer = blocking::Producer::create(options_for(fake.url(), "")).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::protocol_error);
}

// A connection idle for longer than idle_reuse_limit_ns is replaced before reuse; a
// fresher one is reused.
TEST(Connection, BlockingIdleConnectionIsReplacedBeforeReuse) {
  FakeServer fake([](int) { return FakeServer::ok_plain(); });
  auto reuse = blocking::Producer::create(options_for(fake.url(), "")).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reuse.submit("x\n").has_value());
    ASSERT_TRUE(reuse.flush(kWait).has_value());
  }
  EXPECT_EQ(reuse.stats().session.connections_opened, 1U) << "one keep-alive connection";
  ASSERT_TRUE(reuse.close(kWait).has_value());  // the fake server serves one connection at a time
  auto options = options_for(fake.url(), "");
  options.session.idle_reuse_limit_ns = 0ns;
  auto replace = blocking::Producer::create(options).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(replace.submit("x\n").has_value());
    ASSERT_TRUE(replace.flush(kWait).has_value());
    std::this_thread::sleep_for(1ms);  // idle for longer than the limit (0)
  }
  EXPECT_EQ(replace.stats().session.connections_opened, 3U);
}

// B3, C4: a producer attached to a session already closed is refused at attach, naming
// the session; it used to be accepted, take records, and fail them at the first flush.
TEST(B3, BlockingAttachToAClosedSessionIsRefused) {
  auto session = blocking::Session::create(ds::StreamUrl::parse("http://127.0.0.1:9/s").value()).value();
  EXPECT_FALSE(session->closed());
  session->close();
  EXPECT_TRUE(session->closed());
  auto attached = blocking::Producer::attach(session, options_for("http://127.0.0.1:9/s"));
  ASSERT_FALSE(attached.has_value());
  EXPECT_NE(attached.error().find("session: it is closed"), std::string::npos) << attached.error();
}

// B3: options are validated and the error names the option.
TEST(B3, BlockingOptionsAreValidatedWithTheirNames) {
  auto expect_named = [](blocking::ProducerOptions o, std::string_view name) {
    auto r = blocking::Producer::create(std::move(o));
    ASSERT_FALSE(r.has_value()) << name;
    EXPECT_NE(r.error().find(name), std::string::npos) << r.error();
  };
  expect_named(options_for("ftp://x/y"), "url:");
  auto o = options_for("http://127.0.0.1:9/s");
  o.content_type = "application/json";
  expect_named(o, "content_type");
  o = options_for("http://127.0.0.1:9/s");
  o.producer.max_in_flight = 0;
  expect_named(o, "max_in_flight");
  o = options_for("http://127.0.0.1:9/s");
  o.session.request_timeout_ns = 0ns;
  expect_named(o, "session.request_timeout_ns: must be in 1 ms..10 min (got 0 ns)");  // the value given too
  o = options_for("http://127.0.0.1:9/s");
  o.submit_timeout_ns = -1ns;
  expect_named(o, "submit_timeout_ns: must be in 0..10 min (got -1 ns)");
  o = options_for("http://127.0.0.1:9/s");
  o.max_pending_records = 0;
  expect_named(o, "max_pending_records");
  o = options_for("http://127.0.0.1:9/s");
  o.extra_headers.push_back({"X-Evil", "a\r\nInjected: 1"});
  expect_named(o, "extra_headers");
  // R3: bounded as a header provider's are; a head too large was refused by the server
  // (431), or cut off with a reset read as an indefinite failure.
  o = options_for("http://127.0.0.1:9/s");
  o.extra_headers.push_back({"X-Big", std::string(http::kMaxProvidedBytes - 9, 'x')});  // 8192 bytes written
  EXPECT_TRUE(blocking::Producer::create(o).has_value()) << "at the limit";
  o.extra_headers.back().value += 'x';
  expect_named(o, "extra_headers: more than 8192 bytes as written (got 8193)");
  o = options_for("http://127.0.0.1:9/s");
  o.extra_headers.assign(http::kMaxProvidedFields + 1, {"X-A", "1"});
  expect_named(o, "extra_headers: more than 64 headers (got 65)");
  // E4: plain appends with more than one in flight over pooled connections reorder:
  // refused at create and at attach, where the session's mode is the one that runs.
  o = options_for("http://127.0.0.1:9/s");
  o.producer.protocol.idempotent.reset();
  o.session.mode = http::ConnectionMode::pool;
  expect_named(o, "over pooled connections");
  blocking::SessionOptions pool;
  pool.mode = http::ConnectionMode::pool;
  auto session = blocking::Session::create(ds::StreamUrl::parse("http://127.0.0.1:9/s").value(), pool).value();
  o.session.mode = http::ConnectionMode::pipelined;  // the producer's own, ignored when attached
  auto attached = blocking::Producer::attach(session, o);
  ASSERT_FALSE(attached.has_value()) << "attached to pooled connections, plain appends would reorder";
  EXPECT_NE(attached.error().find("over pooled connections"), std::string::npos) << attached.error();
}

}  // namespace
}  // namespace prodsm::test
