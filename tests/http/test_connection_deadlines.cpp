// SPDX-License-Identifier: Apache-2.0
// http::Connection's deadlines on byte scripts (D3: never early): connect and request
// timeouts, stall detection (due only once written and every earlier response
// complete, declared at a second look), the head-of-line wait samples, a clock that
// steps back. Virtual time only, no sockets.
#include <gtest/gtest.h>

#include "prodsm/http/connection.hpp"
#include "script.hpp"

namespace prodsm::http::test {
namespace {

// The connect timeout fails queued requests `unavailable`, definite, at its deadline and not a nanosecond before.
TEST(D3, ConnectTimeoutFiresAtItsDeadlineNotBefore) {
  ConnectionOptions o = connection_options();
  o.connect_timeout_ns = 100ms;
  ConnectionScript s(o);
  s.enqueue(get(1));
  ASSERT_EQ(s.conn().next_deadline(0ns), at(100ms));
  s.set_now(at(100ms) - 1ns);
  s.tick();
  s.tick();
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().state(), Connection::State::connecting);
  s.set_now(at(100ms));
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::unavailable, Certainty::definite));
  EXPECT_NE(error_of(out[0]).message.find("timed out after 100 ms"), std::string::npos) << error_of(out[0]).message;
  EXPECT_FALSE(s.conn().next_deadline(0ns).has_value());
}

// The request timeout runs from the first byte handed out and fails the request indefinite, never early.
TEST(D3, RequestTimeoutFiresAtItsDeadlineNotBefore) {
  ConnectionOptions o = connection_options();
  o.request_timeout_ns = 1s;
  ConnectionScript s(o);
  s.connect();
  s.enqueue(get(1));
  EXPECT_FALSE(s.conn().next_deadline(0ns).has_value()) << "no deadline before a byte is handed out";
  s.advance(10ms);
  s.take();
  s.advance(10ms);
  s.written(request_bytes(1).size());
  ASSERT_EQ(s.conn().next_deadline(0ns), at(1010ms));
  s.set_now(at(1010ms) - 1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty());
  s.set_now(at(1010ms));
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_NE(error_of(out[0]).message.find("timed out after 1000 ms"), std::string::npos) << error_of(out[0]).message;
}

// handle_timeout with no deadline due changes nothing, however often it is called.
TEST(D3, HandleTimeoutBeforeAnyDeadlineIsANoOp) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, true));
  s.write_all();
  const auto deadline = s.conn().next_deadline(50ms);
  ASSERT_EQ(deadline, at(50ms));
  for (int i = 0; i < 3; ++i) {
    s.set_now(*deadline - 1ns);
    s.tick(50ms);
  }
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().state(), Connection::State::open);
  EXPECT_EQ(s.conn().next_deadline(50ms), deadline);
  s.feed(ok());
  ASSERT_EQ(s.outcomes().size(), 1U);
}

// Stall detection: a retry_safe request stalls only once due (written), stall_timeout after that, never early.
TEST(D3, StallFiresOnlyAfterTheRequestIsDueNeverEarly) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, true));
  const WriteView v = s.take();
  s.advance(500ms);
  s.tick(50ms);  // handed out 500 ms ago, but not yet written: not due
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().next_deadline(50ms), at(10s)) << "only the request timeout while not due";
  s.written(v.bytes);  // due from 500 ms
  EXPECT_EQ(s.conn().next_deadline(50ms), at(550ms));
  s.set_now(at(550ms) - 1ns);
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty());
  s.set_now(at(550ms));
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty()) << "the first look past the deadline only arms the second";
  EXPECT_EQ(s.conn().next_deadline(50ms), at(550ms) + Connection::kStallSecondLookNs);
  s.advance(Connection::kStallSecondLookNs - 1ns);
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty()) << "the second look, never early";
  s.advance(1ns);
  s.tick(50ms);
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_TRUE(s.conn().closed_by_stall());
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// Stall detection ignores requests that are not retry_safe: only the request timeout applies to them.
TEST(HttpConnection, StallDetectionIgnoresRequestsNotRetrySafe) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, false));
  s.write_all();
  EXPECT_EQ(s.conn().next_deadline(50ms), at(10s));
  s.set_now(at(10s) - 1ns);
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_FALSE(s.conn().closed_by_stall());
  s.set_now(at(10s));
  s.tick(50ms);
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_FALSE(s.conn().closed_by_stall()) << "closed by the request timeout";
}

// D3: a `now` that steps back is read as the latest instant an input brought. A request
// handed out at 10 s and reported written "at 2 s" (the caller's clock stepped back) is
// due from 10 s: no stall at 10.03 s, the stall deadline at 10.05 s (not 2.05 s).
TEST(D3, AClockSteppedBackNeverMakesARequestOlder) {
  ConnectionScript s;
  s.connect();  // at 0 s
  s.set_now(at(10s));
  s.enqueue(get(1, true));
  const WriteView v = s.take();
  s.set_now(at(2s));
  s.written(v.bytes);
  EXPECT_EQ(s.conn().next_deadline(50ms), at(10s + 50ms));
  s.set_now(at(10s + 30ms));
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty()) << "a stall 30 ms after the write";
  EXPECT_FALSE(s.conn().closed_by_stall());
  s.set_now(at(10s + 50ms));
  s.tick(50ms);
  s.advance(Connection::kStallSecondLookNs);
  s.tick(50ms);  // the second look declares it
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_TRUE(s.conn().closed_by_stall());
}

// The second look belongs to the deadline the first one found passed: when the stall
// timeout grows between them (the pool's estimate moved), the later deadline gets a
// first look of its own, never a stall at once.
TEST(HttpConnection, AStallTimeoutChangedBetweenTheLooksStartsTheLooksOver) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, true));
  s.write_all();  // due from 0
  s.set_now(at(50ms));
  s.tick(50ms);  // the first look past 50 ms
  EXPECT_EQ(s.conn().next_deadline(50ms), at(50ms) + Connection::kStallSecondLookNs);
  EXPECT_EQ(s.conn().next_deadline(100ms), at(100ms)) << "a longer timeout: its own deadline";
  s.set_now(at(100ms));
  s.tick(100ms);
  EXPECT_TRUE(s.outcomes().empty()) << "the first look past 100 ms, not a stall";
  EXPECT_EQ(s.conn().next_deadline(100ms), at(100ms) + Connection::kStallSecondLookNs);
  s.advance(Connection::kStallSecondLookNs);
  s.tick(100ms);
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_TRUE(s.conn().closed_by_stall());
}

// A stall timeout of 0 disables stall detection.
TEST(HttpConnection, ZeroStallTimeoutDisablesStallDetection) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, true));
  s.write_all();
  s.advance(5s);
  s.tick(0ns);
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().next_deadline(0ns), at(10s));
}

// A pipelined request is due only once the response before it completed; its first response byte ends stall detection.
TEST(HttpConnection, StallClockStartsAfterThePreviousResponse) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1, true));
  s.enqueue(get(2, true));
  s.write_all();  // both written at 0
  s.set_now(at(40ms));
  const std::string first = ok("slow body");
  s.feed(std::string_view(first).substr(0, 5));  // response 1 starts at 40 ms: no stall for it any more
  s.set_now(at(100ms));
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty()) << "response 1 started: only the request timeout applies to it";
  s.feed(std::string_view(first).substr(5));  // completes at 100 ms: request 2 due from now
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_EQ(s.conn().next_deadline(50ms), at(150ms));
  s.set_now(at(150ms) - 1ns);
  s.tick(50ms);
  EXPECT_TRUE(s.outcomes().empty());
  s.set_now(at(150ms));
  s.tick(50ms);
  s.advance(Connection::kStallSecondLookNs);
  s.tick(50ms);  // the second look declares it
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 2, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(s.conn().closed_by_stall());
}

// The head-of-line wait (due to first response byte) is reported once per response, for the pool's estimate.
TEST(HttpConnection, WaitSampleMeasuresTheHeadOfLineWait) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.advance(10ms);
  s.write_all();  // due at 10 ms
  s.advance(15ms);
  s.feed("HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(s.conn().poll_wait_sample(), Duration{15ms});
  EXPECT_FALSE(s.conn().poll_wait_sample().has_value());
  s.advance(100ms);
  s.feed("Content-Length: 0\r\n\r\n");
  EXPECT_FALSE(s.conn().poll_wait_sample().has_value()) << "one sample per response, at its first byte";
  s.enqueue(get(2));
  const WriteView v = s.take();
  s.feed(ok());  // answered before on_written: not due yet, so no sample
  EXPECT_FALSE(s.conn().poll_wait_sample().has_value());
  s.written(v.bytes);
}

}  // namespace
}  // namespace prodsm::http::test
