// SPDX-License-Identifier: Apache-2.0
// prodsm::LatencyHistogram and prodsm::detail::AckLatency (prodsm/latency.hpp,
// prodsm/detail/ack_latency.hpp): the bucket bounds, the quantiles and the per-ticket
// bookkeeping behind the adapters' submit-to-ack percentiles. Virtual time only.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "prodsm/detail/ack_latency.hpp"
#include "prodsm/latency.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;
using H = LatencyHistogram;

// Every value lies in its bucket, and the bucket's upper bound is within 1/16 above it.
TEST(Latency, EveryValueIsWithinOneSixteenthOfItsBucketsUpperBound) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const int shift = static_cast<int>(rng() % 63);
    const std::uint64_t v = rng() >> shift;
    const std::size_t b = H::bucket_of(v);
    ASSERT_LT(b, H::kBuckets);
    const std::uint64_t upper = H::upper_bound_of(b);
    ASSERT_GE(upper, v);
    ASSERT_LE(upper - v, v / 16) << v;
    if (b > 0) {
      ASSERT_LT(H::upper_bound_of(b - 1), v) << "buckets do not overlap: " << v;
    }
  }
  for (std::uint64_t v = 0; v < 16; ++v) EXPECT_EQ(H::upper_bound_of(H::bucket_of(v)), v) << "exact below 16";
  EXPECT_EQ(H::bucket_of(~std::uint64_t{0}), H::kBuckets - 1);
}

TEST(Latency, QuantilesOfAKnownDistribution) {
  H h;
  EXPECT_EQ(h.summary().count, 0U);
  EXPECT_EQ(h.quantile(0.5), Duration::zero());
  for (int ms = 1; ms <= 1000; ++ms) h.add(std::chrono::milliseconds{ms});
  const auto s = h.summary();
  EXPECT_EQ(s.count, 1000U);
  EXPECT_EQ(s.max_ns, 1000ms);
  const auto near = [](Duration got, Duration want) {
    EXPECT_GE(got, want);
    EXPECT_LE(got, want + want / 16);
  };
  near(s.p50_ns, 500ms);
  near(s.p90_ns, 900ms);
  near(s.p99_ns, 990ms);
  near(s.p999_ns, 999ms);
  h.add(-5ms);  // negative durations count as 0
  EXPECT_EQ(h.quantile(0), Duration::zero());
  h.add(3ms, 0);  // a count of 0 records nothing
  EXPECT_EQ(h.count(), 1001U);
}

// Tickets are matched to their submit instants across batch boundaries (a submit_many
// range split over two batches), and failures are not counted.
TEST(Latency, AckLatencyMatchesTicketsToTheirSubmits) {
  detail::AckLatency a;
  const Instant t0 = Instant{} + 1s;
  a.accepted(Ticket{0}, 10, t0);                         // tickets 0..9
  a.accepted(Ticket{10}, 5, t0 + 1ms);                   // 10..14
  a.completed(Ticket{0}, Ticket{3}, true, t0 + 20ms);    // 4 records, 20 ms
  a.completed(Ticket{4}, Ticket{11}, false, t0 + 30ms);  // failed: not counted
  a.completed(Ticket{12}, Ticket{14}, true, t0 + 41ms);  // 3 records, 40 ms
  const auto s = a.summary();
  EXPECT_EQ(s.count, 7U);
  EXPECT_EQ(s.max_ns, 40ms);
  EXPECT_GE(s.p50_ns, 20ms);
  EXPECT_LE(s.p50_ns, 20ms + 20ms / 16);
}

// Acceptances within kCoalesce_ns share an entry: their latency is the first one's.
TEST(Latency, CloseAcceptancesCoalesceWithinTheStatedBound) {
  detail::AckLatency a;
  const Instant t0 = Instant{} + 1s;
  for (std::uint64_t i = 0; i < 100; ++i) a.accepted(Ticket{i}, 1, t0 + std::chrono::nanoseconds{i * 50});
  a.completed(Ticket{0}, Ticket{99}, true, t0 + 1ms);
  const auto s = a.summary();
  EXPECT_EQ(s.count, 100U);
  EXPECT_LE(s.max_ns, 1ms);
  EXPECT_GE(s.p50_ns, 1ms - detail::AckLatency::kCoalesce_ns);
}

}  // namespace
}  // namespace prodsm::test
