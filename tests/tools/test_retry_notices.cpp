// SPDX-License-Identifier: Apache-2.0
// The lines `prodsm produce` prints while it retries (E4): the first event at once, then
// at most one line per interval, counting the events left out; terminal events are left
// to the run's own error. Virtual time: the caller passes `now`.
#include <gtest/gtest.h>

#include "../../tools/src/retry_notices.hpp"
#include "prodsm/ds/reader.hpp"

namespace prodsm::tools {
namespace {

using namespace std::chrono_literals;

ProducerEvent retry(std::uint64_t count = 1) {
  ProducerEvent e;
  e.kind = EventKind::retry;
  e.level = EventLevel::warning;
  e.message = "batch attempt failed";
  e.count = count;
  return e;
}

TEST(RetryNotices, TheFirstAtOnceThenAtMostOneLinePerIntervalCountingTheRest) {
  RetryNotices n("prodsm produce", 1s);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_EQ(n.line_for(retry(), t0), "prodsm produce: warning retry: batch attempt failed");
  EXPECT_FALSE(n.line_for(retry(), t0 + 10ms));
  EXPECT_FALSE(n.line_for(retry(3), t0 + 999ms)) << "a ProducerEvent may stand for several";
  EXPECT_EQ(n.line_for(retry(), t0 + 1s),
            "prodsm produce: warning retry: batch attempt failed (4 more events since the last line)");
  EXPECT_FALSE(n.line_for(retry(), t0 + 1500ms));
  EXPECT_EQ(n.line_for(retry(), t0 + 2s),
            "prodsm produce: warning retry: batch attempt failed (1 more events since the last line)");
  EXPECT_EQ(n.line_for(retry(), t0 + 5s), "prodsm produce: warning retry: batch attempt failed")
      << "nothing left out since the last line";
}

TEST(RetryNotices, TerminalEventsAreLeftToTheRunsOwnError) {
  RetryNotices n("prodsm produce", 1s);
  ProducerEvent terminal = retry();
  terminal.kind = EventKind::terminal;
  terminal.level = EventLevel::error;
  EXPECT_FALSE(n.line_for(terminal, std::chrono::steady_clock::time_point{}));
  EXPECT_TRUE(n.line_for(retry(), std::chrono::steady_clock::time_point{})) << "and do not count as a line";
}

// A blackhole fails nothing until a request times out (30 s): while records wait with no
// acknowledgement, a line after `after` and then one per `after`; an acknowledgement, or
// nothing waiting, starts over.
TEST(AckWaitNotices, ALineWhenRecordsWaitLongWithNoAcknowledgementThenOnePerInterval) {
  AckWaitNotices n("prodsm produce", 10s);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  const std::string waiting_12s =
      "prodsm produce: warning: no acknowledgement for 12 s while 5 records wait for one; a request is failed after "
      "--request-timeout-ms and resent until --delivery-timeout-ms";
  EXPECT_FALSE(n.line_for(t0, 0, 5)) << "the wait starts";
  EXPECT_FALSE(n.line_for(t0 + 9s, 0, 5));
  EXPECT_EQ(n.line_for(t0 + 12s, 0, 5), waiting_12s);
  EXPECT_FALSE(n.line_for(t0 + 21s, 0, 5)) << "one line per 10 s";
  EXPECT_NE(n.line_for(t0 + 22s, 0, 5), std::nullopt);
  EXPECT_FALSE(n.line_for(t0 + 23s, 3, 2)) << "an acknowledgement starts the wait over";
  EXPECT_FALSE(n.line_for(t0 + 32s, 3, 2));
  EXPECT_NE(n.line_for(t0 + 33s, 3, 2), std::nullopt);
  EXPECT_FALSE(n.line_for(t0 + 34s, 5, 0)) << "nothing waiting";
  EXPECT_FALSE(n.line_for(t0 + 60s, 5, 0));
  EXPECT_FALSE(n.line_for(t0 + 61s, 5, 4)) << "records accepted after a quiet time: a new wait starts";
  EXPECT_FALSE(n.line_for(t0 + 70s, 5, 4));
  EXPECT_NE(n.line_for(t0 + 71s, 5, 4), std::nullopt);
}

// E4: a read's retries (a read-back of --verify/--resume, `prodsm read`) are told as the
// appends' are: what was read, from where, when it goes out again, and why.
TEST(RetryNotices, AReadsRetryIsToldWithItsOffsetWaitAndCause) {
  const Error e = make_error(ErrorCode::unavailable, Certainty::definite, true, "read /s: HTTP 503");
  EXPECT_EQ(read_retry_text("reading the stream back", ds::ReadRetry{e, "0_42", 2, Duration{150ms}}),
            "warning retry: reading the stream back at offset 0_42 failed and is sent again in 150 ms (E4, attempt "
            "2); cause: unavailable (definite, retryable): read /s: HTTP 503");
  EXPECT_NE(read_retry_text("reading", ds::ReadRetry{e, "-1", 1, Duration{0}}).find("sent again at once"),
            std::string::npos);
  RetryNotices n("prodsm read", 1s);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_EQ(n.line_for("warning retry: x", 1, t0), "prodsm read: warning retry: x");
  EXPECT_FALSE(n.line_for("warning retry: x", 1, t0 + 10ms));
  EXPECT_EQ(n.line_for("warning retry: x", 1, t0 + 1s),
            "prodsm read: warning retry: x (1 more events since the last line)");
}

}  // namespace
}  // namespace prodsm::tools
