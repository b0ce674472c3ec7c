// SPDX-License-Identifier: Apache-2.0
// The lines `prodsm produce` prints while it retries (E4): the first event at once, then
// at most one line per interval, counting the events left out; terminal events are left
// to the run's own error. Virtual time: the caller passes `now`.
#include <gtest/gtest.h>

#include "../../tools/src/retry_notices.hpp"

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

}  // namespace
}  // namespace prodsm::tools
