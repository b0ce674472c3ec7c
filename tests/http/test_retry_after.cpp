// SPDX-License-Identifier: Apache-2.0
// http::retry_after (RFC 9110 section 10.2.3), which both codecs' classification uses
// (E4: a retry waits at least that long): delay-seconds capped at 24 h, an IMF-fixdate
// measured from the response's Date, and what is not taken.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "prodsm/http/retry_after.hpp"

namespace prodsm::http {
namespace {

using namespace std::chrono_literals;

Response with(std::vector<std::pair<std::string, std::string>> headers) {
  Response r;
  r.status = 503;
  for (auto& [name, value] : headers) r.headers.push_back({std::move(name), std::move(value)});
  return r;
}

constexpr const char* kDate = "Sun, 06 Dec 2026 10:00:00 GMT";

TEST(HttpRetryAfter, DelaySecondsAreTakenAndCappedAtADay) {
  EXPECT_EQ(retry_after(with({{"Retry-After", "0"}}))->delay_ns, 0s);
  EXPECT_EQ(retry_after(with({{"Retry-After", " 30 "}}))->delay_ns, 30s);
  const auto day = retry_after(with({{"Retry-After", "86400"}}));
  EXPECT_EQ(day->delay_ns, 24h);
  EXPECT_FALSE(day->capped);
  for (const char* longer : {"86401", "100000", "99999999999999999999999999"}) {
    const auto capped = retry_after(with({{"Retry-After", longer}}));
    ASSERT_TRUE(capped.has_value()) << longer;
    EXPECT_EQ(capped->delay_ns, kMaxRetryAfter) << longer;
    EXPECT_TRUE(capped->capped) << longer;
    EXPECT_EQ(describe(*capped), "Retry-After 86400 s (capped: the server asked for longer)");
  }
}

TEST(HttpRetryAfter, AnImfFixdateIsMeasuredFromTheResponsesDate) {
  const auto after = retry_after(with({{"Date", kDate}, {"Retry-After", "Sun, 06 Dec 2026 10:02:05 GMT"}}));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->delay_ns, 125s);
  EXPECT_TRUE(after->from_date);
  EXPECT_EQ(describe(*after), "Retry-After 125 s (an HTTP-date)");
  // Across a leap day and a year's end.
  const auto leap =
      retry_after(with({{"Date", "Thu, 29 Feb 2024 23:59:59 GMT"}, {"Retry-After", "Fri, 01 Mar 2024 00:00:09 GMT"}}));
  ASSERT_TRUE(leap.has_value());
  EXPECT_EQ(leap->delay_ns, 10s);
  const auto new_year =
      retry_after(with({{"Date", "Thu, 31 Dec 2026 23:00:00 GMT"}, {"Retry-After", "Fri, 01 Jan 2027 00:00:00 GMT"}}));
  ASSERT_TRUE(new_year.has_value());
  EXPECT_EQ(new_year->delay_ns, 1h);
  // A date not later than the response's: no wait. Two days later: capped at one.
  EXPECT_EQ(retry_after(with({{"Date", kDate}, {"Retry-After", "Sat, 05 Dec 2026 10:00:00 GMT"}}))->delay_ns, 0s);
  const auto far = retry_after(with({{"Date", kDate}, {"Retry-After", "Tue, 08 Dec 2026 10:00:00 GMT"}}));
  ASSERT_TRUE(far.has_value());
  EXPECT_EQ(far->delay_ns, 24h);
  EXPECT_TRUE(far->capped);
}

TEST(HttpRetryAfter, WhatIsNeitherFormOrCannotBeMeasuredIsNone) {
  EXPECT_FALSE(retry_after(with({})).has_value());
  for (const char* bad :
       {"", "-1", "1.5", "soon", "Sun, 06 Dec 2026 10:02:05 GMT trailing", "Sun, 32 Dec 2026 10:02:05 GMT",
        "Sun, 29 Feb 2026 10:02:05 GMT", "Sun, 06 Dec 2026 24:00:00 GMT", "Xyz, 06 Dec 2026 10:02:05 GMT",
        "Sun, 06 Dek 2026 10:02:05 GMT",
        // The obsolete forms (RFC 850, asctime) are not taken.
        "Sunday, 06-Dec-26 10:02:05 GMT", "Sun Dec  6 10:02:05 2026"}) {
    EXPECT_FALSE(retry_after(with({{"Date", kDate}, {"Retry-After", bad}})).has_value()) << "'" << bad << "'";
  }
  // A date with no Date to measure it from (the client's clock is not the server's).
  EXPECT_FALSE(retry_after(with({{"Retry-After", "Sun, 06 Dec 2026 10:02:05 GMT"}})).has_value());
  EXPECT_FALSE(
      retry_after(with({{"Date", "yesterday"}, {"Retry-After", "Sun, 06 Dec 2026 10:02:05 GMT"}})).has_value());
}

}  // namespace
}  // namespace prodsm::http
