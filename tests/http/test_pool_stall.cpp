// SPDX-License-Identifier: Apache-2.0
// http::Pool's stall detection on byte scripts: the stall timeout is twice the longest
// measured head-of-line wait, doubles after stalls and holds the doublings for
// kStallHoldResponses responses, never exceeds the request timeout, and a stall is
// declared only at a second look. Virtual time only, no sockets.
#include <gtest/gtest.h>

#include "prodsm/http/pool.hpp"
#include "script.hpp"

namespace prodsm::http::test {
namespace {

using Ids = std::vector<std::uint64_t>;

/// A pool on connection 1 whose one request (id 1, its outcome not yet taken) waited
/// `wait` for its response: the stall timeout is then 2 x wait (at least stall.min_ns).
PoolScript measured_once(Duration wait) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, wait, ok());
  return s;
}

/// Runs the pool's timer as an event loop would, at each next_deadline(), until an
/// outcome comes (a stall takes two looks: the one that finds it, the one that declares it).
std::vector<Outcome> run_timer_until_outcome(PoolScript& s) {
  for (int looks = 0; looks < 8; ++looks) {
    const auto deadline = s.pool().next_deadline();
    if (!deadline) break;
    s.set_now(std::max(s.now(), *deadline));
    s.tick();
    auto out = s.outcomes();
    if (!out.empty()) return out;
  }
  return {};
}

// Before any measured wait the stall timeout is stall.initial_ns; disabled, it is 0.
TEST(HttpPool, StallTimeoutIsInitialBeforeAnySample) {
  PoolOptions o = pool_options();
  o.transport.stall.initial_ns = 700ms;
  EXPECT_EQ(PoolScript(o).pool().stall_timeout(), Duration{700ms});
  o.transport.stall.enabled = false;
  EXPECT_EQ(PoolScript(o).pool().stall_timeout(), Duration{0});
}

// After measured waits the stall timeout is twice the longest one (at least stall.min_ns).
TEST(HttpPool, StallTimeoutIsTwiceTheLongestMeasuredWait) {
  PoolScript s = measured_once(10ms);
  EXPECT_EQ(s.pool().stall_timeout(), Duration{20ms});
  s.enqueue(get(2));
  s.round_trip(1, 3ms, ok());
  EXPECT_EQ(s.pool().stall_timeout(), Duration{20ms}) << "the longest wait counts";
  s.enqueue(get(3));
  s.round_trip(1, 12ms, ok());
  EXPECT_EQ(s.pool().stall_timeout(), Duration{24ms});
  PoolScript fast;
  fast.enqueue(get(1));
  fast.connect(1);
  fast.round_trip(1, 0ms, ok());
  EXPECT_EQ(fast.pool().stall_timeout(), fast.pool().options().transport.stall.min_ns) << "never below min_ns";
}

// The window of measured waits forgets a long wait after 128 to 256 responses.
TEST(HttpPool, StallWindowForgetsOldWaits) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 30ms, ok());
  for (std::uint64_t id = 2; id <= 255; ++id) {
    s.enqueue(get(id));
    s.round_trip(1, 4ms, ok());
  }
  EXPECT_EQ(s.pool().stall_timeout(), Duration{60ms}) << "remembered for at least 128 responses";
  s.enqueue(get(256));
  s.round_trip(1, 4ms, ok());
  EXPECT_EQ(s.pool().stall_timeout(), Duration{8ms}) << "forgotten after 256";
  EXPECT_EQ(s.outcomes().size(), 256U);
}

// A stalled retry_safe request fails indefinite, its connection is replaced, and the next request opens a new one.
TEST(HttpPool, StallReplacesTheConnection) {
  PoolScript s = measured_once(10ms);  // stall timeout 20 ms
  s.outcomes();
  s.commands();
  s.enqueue(get(2, true));
  s.write_all(1);
  ASSERT_EQ(s.pool().next_deadline(), s.now() + 20ms);
  s.advance(20ms - 1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "never early";
  s.advance(1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "the first look past the deadline only arms the second";
  ASSERT_EQ(s.pool().next_deadline(), s.now() + Connection::kStallSecondLookNs);
  s.advance(Connection::kStallSecondLookNs - 1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "the second look, never early";
  s.advance(1ns);
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 2, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_EQ(s.commands().closes, Ids{1});
  EXPECT_EQ(s.pool().stats().stalls, 1U);
  s.enqueue(get(3, true));
  EXPECT_EQ(s.commands().connects, Ids{2});
}

// A request that is not retry_safe is never given up by stall detection, only by the request timeout.
TEST(HttpPool, StallDetectionOnlyForRetrySafeRequests) {
  PoolScript s;
  s.enqueue(get(1));
  s.connect(1);
  s.write_all(1);
  EXPECT_EQ(s.pool().next_deadline(), at(10s)) << "the request timeout, not the stall timeout (1 s)";
  s.set_now(at(5s));
  s.tick();
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.pool().stats().stalls, 0U);
}

// Each stall doubles the stall timeout; once responses come, each kStallHoldResponses of
// them in a row without a stall take one doubling off (one fast response ends nothing).
TEST(HttpPool, StallTimeoutDoublingsAreTakenOffOnePerKStallHoldResponses) {
  PoolScript s = measured_once(10ms);
  ASSERT_EQ(s.pool().stall_timeout(), Duration{20ms});
  ASSERT_EQ(s.outcomes().size(), 1U);
  std::uint64_t conn = 1;  // stalls on connection 1, then on its replacement 2
  for (const Duration expected : {Duration{40ms}, Duration{80ms}}) {
    s.enqueue(get(10 + conn, true));
    s.connect(conn);  // a no-op for the already open connection 1
    s.write_all(conn);
    const auto out = run_timer_until_outcome(s);
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 10 + conn, ErrorCode::connection_lost, Certainty::indefinite));
    EXPECT_EQ(s.pool().stall_timeout(), expected);
    ++conn;
  }
  for (std::uint64_t n = 1; n <= 2 * Pool::kStallHoldResponses; ++n) {
    s.enqueue(get(100 + n, true));
    s.connect(conn);  // opens the replacement once, then a no-op
    s.round_trip(conn, 5ms, ok());
    const Duration expected = n < Pool::kStallHoldResponses ? 80ms : n < 2 * Pool::kStallHoldResponses ? 40ms : 20ms;
    EXPECT_EQ(s.pool().stall_timeout(), expected) << "after " << n << " responses";
  }
  EXPECT_EQ(s.pool().stats().stalls, 2U);
}

// Stalls with no response between them double the timeout up to the request timeout (a
// hung server); once a response comes, at most kStallHeldDoublings of them stay, so
// frequent swallowed requests cannot switch stall detection off.
TEST(HttpPool, AtMostKStallHeldDoublingsStayOnceAResponseCame) {
  PoolScript s = measured_once(10ms);  // stall timeout 20 ms
  s.outcomes();
  std::uint64_t conn = 1;
  for (std::uint32_t stall = 1; stall <= Pool::kStallHeldDoublings + 2; ++stall) {
    s.enqueue(get(10 + stall, true));
    s.connect(conn);
    s.write_all(conn);
    ASSERT_EQ(run_timer_until_outcome(s).size(), 1U) << "stall " << stall;
    ++conn;
  }
  EXPECT_EQ(s.pool().stall_timeout(), Duration{20ms * (1 << (Pool::kStallHeldDoublings + 2))})
      << "no response yet: every stall doubles";
  s.enqueue(get(99, true));
  s.connect(conn);
  s.round_trip(conn, 5ms, ok());
  // 20 ms x 2^6 would be 1.28 s: the held doublings stop within kStallHeldTimeoutNs (1 s).
  static_assert(Pool::kStallHeldTimeoutNs == std::chrono::seconds{1} && Pool::kStallHeldDoublings == 6);
  EXPECT_EQ(s.pool().stall_timeout(), Duration{20ms * (1 << 5)});
}

// A stall timeout already long undoubled (some answers 300 ms late) is not held doubled
// past kStallHeldTimeoutNs once a response came: a request swallowed every few responses
// would otherwise cost 64 x 600 ms each (a red-team run: 10 s per stall, its delivery
// timeout spent on 12 of them).
TEST(HttpPool, HeldDoublingsKeepTheStallTimeoutWithinKStallHeldTimeoutNs) {
  PoolScript s = measured_once(300ms);  // stall timeout 600 ms
  s.outcomes();
  std::uint64_t conn = 1;
  for (std::uint32_t stall = 1; stall <= 3; ++stall) {  // swallowed requests: 1.2, 2.4, 4.8 s
    s.enqueue(get(10 + stall, true));
    s.connect(conn);
    s.write_all(conn);
    ASSERT_EQ(run_timer_until_outcome(s).size(), 1U) << "stall " << stall;
    ++conn;
  }
  EXPECT_EQ(s.pool().stall_timeout(), Duration{4800ms}) << "no response yet: every stall doubles";
  s.enqueue(get(99, true));
  s.connect(conn);
  s.round_trip(conn, 5ms, ok());
  EXPECT_EQ(s.pool().stall_timeout(), Duration{600ms}) << "1.2 s would pass kStallHeldTimeoutNs";
  s.outcomes();
  s.enqueue(get(100, true));
  s.write_all(conn);
  const auto out = run_timer_until_outcome(s);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 100, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_EQ(s.pool().stats().stalls, 4U);
  EXPECT_EQ(s.pool().stall_timeout(), Duration{1200ms}) << "a stall still doubles it until the next response";
}

// A server that answers every third request 50 ms late, after a window of fast answers
// (stall timeout 5 ms): a few stalls double the timeout past 50 ms, the slow answers are
// then measured, and stalls end. Were the doublings ended by the next fast response, every
// slow request would be cut, never measured, and stall detection would fail every third
// attempt for as long as the server stays so.
TEST(HttpPool, AServerAnsweringSomeRequestsSlowlyIsSoonWaitedForLongEnough) {
  PoolScript s;
  std::uint64_t conn = 1;
  s.enqueue(get(1, true));
  s.connect(conn);
  s.round_trip(conn, 1ms, ok());
  s.outcomes();
  ASSERT_EQ(s.pool().stall_timeout(), Duration{5ms});
  std::uint64_t sends = 0;
  std::uint64_t answered = 0;
  for (std::uint64_t id = 2; answered < 300; ++id) {
    ASSERT_LT(sends, 1000U) << "stalls go on: " << s.pool().stats().stalls;
    s.enqueue(get(id, true));
    for (const std::uint64_t c : s.commands().connects) conn = c;
    s.connect(conn);
    s.write_all(conn);
    const Instant answer_at = s.now() + (++sends % 3 == 0 ? 50ms : 1ms);
    std::vector<Outcome> out;
    while (out.empty()) {  // the loop: the timer, or the response, whichever comes first
      const auto deadline = s.pool().next_deadline();
      if (deadline && *deadline < answer_at) {
        s.set_now(*deadline);
        s.tick();
      } else {
        s.set_now(answer_at);
        s.feed(conn, ok());
      }
      out = s.outcomes();
    }
    if (out[0].result.has_value()) ++answered;  // else stalled: the caller sends again
  }
  EXPECT_LE(s.pool().stats().stalls, 4U) << "5 -> 10 -> 20 -> 40 -> 80 ms";
  EXPECT_GE(s.pool().stall_timeout(), Duration{100ms}) << "the 50 ms answers are measured";
}

// A response that arrived while the caller's loop was away (its timer handled before its
// readable socket) is not taken for a stall: the first look past the deadline arms a
// second one, and the loop reads the socket in between.
TEST(HttpPool, AResponseReadBetweenTheTwoLooksIsNoStall) {
  PoolScript s = measured_once(10ms);  // stall timeout 20 ms
  s.outcomes();
  s.enqueue(get(2, true));
  s.write_all(1);
  s.advance(35ms);  // the loop was busy: its timer comes 15 ms late, the response waits unread
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "the first look";
  s.feed(1, ok());  // the loop's next pass reads the socket
  s.advance(Connection::kStallSecondLookNs);
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 2, 200));
  EXPECT_EQ(s.pool().stats().stalls, 0U);
}

// D3: a stall on one connection doubles the stall timeout another was just looked at
// with; that one is looked at again with the new timeout in the same handle_timeout, so
// no deadline is left at or before `now` (found by the http_transport fuzz target: a
// second look belongs to the deadline its first look found passed).
TEST(HttpPool, AStallDoublingTheTimeoutMidTickLeavesNoDeadlineDue) {
  PoolOptions o = pool_options();
  o.transport.mode = ConnectionMode::pool;
  PoolScript s(o);
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 10ms, ok());  // stall timeout 20 ms
  s.outcomes();
  s.commands();
  s.enqueue(get(2, true));  // on connection 1
  s.enqueue(get(3, true));  // on connection 2
  ASSERT_EQ(s.commands().connects, Ids{2});
  s.connect(2);
  const Instant t0 = s.now();
  s.write_all(2);  // request 3 due at t0
  s.advance(1ms);
  s.write_all(1);  // request 2 due at t0 + 1 ms
  s.set_now(t0 + 20ms);
  s.tick();  // the first look at request 3
  ASSERT_TRUE(s.outcomes().empty());
  s.set_now(t0 + 70ms);  // a late timer: request 2 is 69 ms past due
  s.tick();              // request 2's first look (20 ms), request 3's stall: the timeout is now 40 ms
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 3, ErrorCode::connection_lost, Certainty::indefinite));
  ASSERT_EQ(s.pool().stall_timeout(), Duration{40ms});
  const auto next = s.pool().next_deadline();
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, s.now()) << "request 2 was looked at again with 40 ms";
  s.set_now(*next);
  s.tick();  // the second look declares request 2's stall
  const auto second = s.outcomes();
  ASSERT_EQ(second.size(), 1U);
  EXPECT_TRUE(IsFailure(second[0], 2, ErrorCode::connection_lost, Certainty::indefinite));
}

// The doubling after a stall starts from the timeout in use (min_ns), not from a smaller measured base.
TEST(HttpPool, StallTimeoutDoublesFromTheMinimum) {
  PoolScript s;  // stall.min_ns = 5 ms (default)
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 1ms, ok());  // 2 x 1 ms is below the minimum
  s.outcomes();
  ASSERT_EQ(s.pool().stall_timeout(), Duration{5ms});
  s.enqueue(get(2, true));
  s.write_all(1);
  ASSERT_EQ(s.pool().next_deadline(), s.now() + 5ms);
  run_timer_until_outcome(s);
  ASSERT_EQ(s.pool().stats().stalls, 1U);
  EXPECT_EQ(s.pool().stall_timeout(), Duration{10ms}) << "a stall doubles the timeout that stalled";
}

// The stall timeout never exceeds the request timeout, even with stall.min_ns above it.
TEST(HttpPool, StallTimeoutNeverExceedsTheRequestTimeout) {
  PoolOptions o = pool_options();
  o.transport.request_timeout_ns = 1s;
  o.transport.stall.min_ns = 2s;
  o.transport.stall.initial_ns = 2s;
  PoolScript s(o);
  EXPECT_LE(s.pool().stall_timeout(), Duration{1s});
  s.enqueue(get(1));
  s.connect(1);
  s.round_trip(1, 0ms, ok());
  EXPECT_EQ(s.pool().stall_timeout(), Duration{1s});
}

// Every connection replaced by stall detection is counted, also once the doubling reached its cap.
TEST(HttpPool, EveryStallIsCounted) {
  PoolOptions o = pool_options();
  o.transport.request_timeout_ns = 10min;
  o.transport.stall.min_ns = 100us;
  o.transport.stall.initial_ns = 100us;
  PoolScript s(o);
  for (std::uint64_t conn = 1; conn <= 20; ++conn) {
    s.enqueue(get(conn, true));
    s.connect(conn);
    s.write_all(conn);
    ASSERT_EQ(run_timer_until_outcome(s).size(), 1U) << "stall " << conn;
  }
  EXPECT_EQ(s.pool().stats().stalls, 20U);
  EXPECT_LE(s.pool().stall_timeout(), Duration{10min});
}

}  // namespace
}  // namespace prodsm::http::test
