// SPDX-License-Identifier: Apache-2.0
// The retry backoff and its jitter (core/include/prodsm/detail/backoff.hpp), on their own:
// E4 — the k-th backing-off retry waits min(backoff_max_ns, backoff_initial_ns *
// backoff_multiplier^(k-1)) jittered uniformly into [half, full]; the first retry after a
// lost connection goes out at once and its later retries wait as the retry before them
// would have; a server's Retry-After raises the wait to at least that long (even above
// backoff_max_ns). D2 — the jitter comes from SplitMix64 seeded with retry.jitter_seed, so
// equal seeds give equal waits. The expected waits are computed here in integers, not
// with the header's arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "prodsm/config.hpp"
#include "prodsm/detail/backoff.hpp"
#include "prodsm/error.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;
using detail::backoff_delay;
using detail::retries_at_once;
using detail::SplitMix64;

RetryPolicy retry_policy(Duration initial, Duration max, double multiplier) {
  RetryPolicy p;
  p.backoff_initial_ns = initial;
  p.backoff_max_ns = max;
  p.backoff_multiplier = multiplier;
  return p;
}

Error failure(ErrorCode code, std::optional<Duration> retry_after = std::nullopt) {
  Error e = make_error(code, Certainty::definite, true, "test");
  e.retry_after_ns = retry_after;
  return e;
}

/// The un-jittered wait of the k-th backing-off retry (k >= 1), for a whole multiplier:
/// initial * multiplier^(k-1), capped at max, in integers.
std::int64_t full_wait(Duration initial, Duration max, std::int64_t multiplier, std::uint32_t k) {
  std::int64_t full = std::min(initial.count(), max.count());
  for (std::uint32_t i = 1; i < k && full < max.count(); ++i) {
    full = full > max.count() / multiplier ? max.count() : full * multiplier;
  }
  return std::min(full, max.count());
}

/// One backoff_delay with a fresh generator seeded `seed`.
Duration first_wait(const RetryPolicy& p, std::uint32_t retry, const Error& e, std::uint64_t seed) {
  SplitMix64 rng{seed};
  return backoff_delay(p, retry, e, rng);
}

struct WholeMultiplierCase {
  Duration initial;
  Duration max;
  std::int64_t multiplier;
};

const WholeMultiplierCase kWholeCases[] = {
    {5ms, 10s, 2},             // the defaults
    {1us, 10min, 16},          // the extremes of validation
    {1001ns, 1'000'000ns, 3},  // odd values: half is rounded down
    {100ms, 100ms, 2},         // initial == max: constant
    {3us, 10min, 1},           // multiplier 1.0: constant
    {7'777us, 123'457us, 2},   // the cap is not a power-of-two multiple of initial
};

// E4: for many seeds and every retry, the wait lies in [full / 2, full], where full is
// initial * multiplier^(k-1) capped at backoff_max_ns.
TEST(E4, BackoffIsJitteredIntoHalfToFullOfTheCappedExponential) {
  for (const auto& c : kWholeCases) {
    const RetryPolicy p = retry_policy(c.initial, c.max, static_cast<double>(c.multiplier));
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      SplitMix64 rng{seed * 0x9E3779B97F4A7C15ULL};
      for (std::uint32_t k = 1; k <= 60; ++k) {
        const std::int64_t full = full_wait(c.initial, c.max, c.multiplier, k);
        const Duration d = backoff_delay(p, k, failure(ErrorCode::unavailable), rng);
        ASSERT_GE(d.count(), full / 2) << "retry " << k << " seed " << seed << " multiplier " << c.multiplier;
        ASSERT_LE(d.count(), full) << "retry " << k << " seed " << seed << " multiplier " << c.multiplier;
      }
    }
  }
}

// E4: with a multiplier of at least 2 each wait is at least the one before it until the
// cap, and the largest wait seen for retry k grows by the multiplier; at the cap every
// later retry stays in [max / 2, max].
TEST(E4, TheWaitGrowsWithEachRetryUntilTheCapThenStaysThere) {
  for (const double multiplier : {2.0, 3.0}) {
    const RetryPolicy p = retry_policy(1ms, 5s, multiplier);
    const auto m = static_cast<std::int64_t>(multiplier);
    std::vector<std::int64_t> largest(41, 0);
    for (std::uint64_t seed = 1; seed <= 500; ++seed) {
      SplitMix64 rng{seed};
      Duration previous{0};
      for (std::uint32_t k = 1; k <= 40; ++k) {
        const Duration d = backoff_delay(p, k, failure(ErrorCode::unavailable), rng);
        const bool below_cap = full_wait(1ms, 5s, m, k) < 5'000'000'000;
        if (below_cap) {
          ASSERT_GE(d, previous) << "retry " << k << " seed " << seed << " multiplier " << multiplier;
        } else {
          ASSERT_GE(d, 2500ms) << "retry " << k;
          ASSERT_LE(d, 5s) << "retry " << k;
        }
        largest[k] = std::max(largest[k], d.count());
        previous = d;
      }
    }
    EXPECT_GT(largest[1], 950'000) << "retry 1 reaches near backoff_initial_ns";
    for (std::uint32_t k = 2; k <= 40 && full_wait(1ms, 5s, m, k) < 5'000'000'000; ++k) {
      EXPECT_GT(largest[k], largest[k - 1] * (m - 1)) << "retry " << k << " multiplier " << multiplier;
      EXPECT_GT(largest[k], full_wait(1ms, 5s, m, k) * 95 / 100) << "retry " << k << " multiplier " << multiplier;
    }
    EXPECT_GT(largest[40], 4'900'000'000) << "the capped wait reaches near backoff_max_ns";
  }
}

// E4, R3: whatever valid configuration (fractional multipliers included) and retry up to
// the largest retry.max_attempts, no wait exceeds backoff_max_ns or falls below half of
// backoff_initial_ns.
TEST(E4, TheWaitNeverExceedsBackoffMaxNs) {
  std::mt19937_64 pick(20240611);
  const auto max_ns = Bounds::kMaxBackoff.count();
  const auto min_ns = Bounds::kMinBackoff.count();
  for (int round = 0; round < 2000; ++round) {
    const Duration max{min_ns + static_cast<std::int64_t>(pick() % static_cast<std::uint64_t>(max_ns - min_ns + 1))};
    const Duration initial{min_ns +
                           static_cast<std::int64_t>(pick() % static_cast<std::uint64_t>(max.count() - min_ns + 1))};
    const double multiplier = 1.0 + static_cast<double>(pick() % 15001) / 1000.0;  // 1.000..16.000
    const RetryPolicy p = retry_policy(initial, max, multiplier);
    SplitMix64 rng{pick()};
    for (const std::uint32_t k : {1U, 2U, 3U, 10U, 50U, 200U, 999U}) {
      for (const ErrorCode code : {ErrorCode::unavailable, ErrorCode::connection_lost}) {
        if (code == ErrorCode::connection_lost && k == 1) continue;  // at once, below
        const Duration d = backoff_delay(p, k, failure(code), rng);
        ASSERT_LE(d, max) << "retry " << k << " initial " << initial.count() << " multiplier " << multiplier;
        ASSERT_GE(d.count(), initial.count() / 2) << "retry " << k << " initial " << initial.count();
      }
    }
  }
}

// E4: the jitter covers [half, full], not one point of it: the extremes are reached and
// the mean is the middle (a uniform draw).
TEST(E4, TheJitterSpreadsOverTheWholeRange) {
  const RetryPolicy p = retry_policy(1ms, 1ms, 2.0);
  SplitMix64 rng{42};
  std::int64_t lowest = INT64_MAX;
  std::int64_t highest = 0;
  double sum = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const auto d = backoff_delay(p, 1, failure(ErrorCode::unavailable), rng).count();
    lowest = std::min(lowest, d);
    highest = std::max(highest, d);
    sum += static_cast<double>(d);
  }
  EXPECT_GE(lowest, 500'000);
  EXPECT_LT(lowest, 505'000);
  EXPECT_LE(highest, 1'000'000);
  EXPECT_GT(highest, 995'000);
  EXPECT_NEAR(sum / kDraws, 750'000.0, 7'500.0);
}

// E4: a Retry-After raises the wait to at least its value: above backoff_max_ns it is the
// wait exactly; below the jittered wait it changes nothing; 0 or negative is no
// Retry-After; the largest duration does not overflow.
TEST(E4, ARetryAfterRaisesTheWaitToAtLeastItsValue) {
  const RetryPolicy p = retry_policy(10ms, 80ms, 2.0);
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    for (std::uint32_t k = 1; k <= 6; ++k) {
      const Duration plain = first_wait(p, k, failure(ErrorCode::unavailable), seed);
      EXPECT_EQ(first_wait(p, k, failure(ErrorCode::unavailable, 3s), seed), 3s) << "above the cap";
      EXPECT_EQ(first_wait(p, k, failure(ErrorCode::unavailable, 1ms), seed), plain) << "below the wait";
      EXPECT_EQ(first_wait(p, k, failure(ErrorCode::unavailable, 60ms), seed), std::max<Duration>(plain, 60ms));
      EXPECT_EQ(first_wait(p, k, failure(ErrorCode::unavailable, 0ns), seed), plain) << "0 is no Retry-After";
      EXPECT_EQ(first_wait(p, k, failure(ErrorCode::unavailable, -5s), seed), plain) << "negative is none";
    }
  }
  EXPECT_EQ(first_wait(p, 3, failure(ErrorCode::unavailable, Duration::max()), 1), Duration::max());
  // A lost connection's first retry waits only when the server asked for it.
  EXPECT_EQ(first_wait(p, 1, failure(ErrorCode::connection_lost, 2s), 1), 2s);
}

// E4: the first retry after connection_lost goes out at once (no backoff, no timer);
// not the second, not another code's first, not when a Retry-After asks for a wait.
TEST(E4, OnlyTheFirstRetryAfterALostConnectionGoesOutAtOnce) {
  EXPECT_TRUE(retries_at_once(1, failure(ErrorCode::connection_lost)));
  EXPECT_TRUE(retries_at_once(1, failure(ErrorCode::connection_lost, 0ns)));
  EXPECT_TRUE(retries_at_once(1, failure(ErrorCode::connection_lost, -1s)));
  EXPECT_FALSE(retries_at_once(1, failure(ErrorCode::connection_lost, 1ms)));
  EXPECT_FALSE(retries_at_once(2, failure(ErrorCode::connection_lost)));
  EXPECT_FALSE(retries_at_once(3, failure(ErrorCode::connection_lost)));
  for (const ErrorCode code : {ErrorCode::unavailable, ErrorCode::request_timeout, ErrorCode::header_provider_failed}) {
    EXPECT_FALSE(retries_at_once(1, failure(code))) << to_string(code);
  }
  const RetryPolicy p = retry_policy(10ms, 1s, 2.0);
  EXPECT_EQ(first_wait(p, 1, failure(ErrorCode::connection_lost), 7), 0ns);
  EXPECT_GE(first_wait(p, 1, failure(ErrorCode::unavailable), 7), 5ms);
}

// E4: retry n after a lost connection waits exactly as retry n - 1 after any other
// failure would have, draw for draw.
TEST(E4, ALostConnectionsLaterRetriesWaitAsTheRetryBeforeThem) {
  const RetryPolicy p = retry_policy(2ms, 3s, 2.0);
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    for (std::uint32_t n = 2; n <= 30; ++n) {
      EXPECT_EQ(first_wait(p, n, failure(ErrorCode::connection_lost), seed),
                first_wait(p, n - 1, failure(ErrorCode::unavailable), seed))
          << "retry " << n << " seed " << seed;
    }
  }
}

// E4: a configuration that skipped validation cannot make the wait shrink, explode or go
// negative: a multiplier outside 1.0..16.0 (NaN too) is taken as 1.0, and a negative
// backoff is no wait.
TEST(E4, AnUnvalidatedConfigurationIsTakenSafely) {
  for (const double multiplier : {std::nan(""), 0.5, 0.0, -2.0, 16.5, 1e300, std::numeric_limits<double>::infinity()}) {
    const RetryPolicy odd = retry_policy(4ms, 1s, multiplier);
    const RetryPolicy one = retry_policy(4ms, 1s, 1.0);
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      for (std::uint32_t k = 1; k <= 50; ++k) {
        const Duration d = first_wait(odd, k, failure(ErrorCode::unavailable), seed);
        ASSERT_EQ(d, first_wait(one, k, failure(ErrorCode::unavailable), seed)) << "multiplier " << multiplier;
        ASSERT_GE(d, 2ms);
        ASSERT_LE(d, 4ms);
      }
    }
  }
  const RetryPolicy negative = retry_policy(-5ms, -1ms, 2.0);
  EXPECT_EQ(first_wait(negative, 3, failure(ErrorCode::unavailable), 9), 0ns);
  EXPECT_EQ(first_wait(negative, 3, failure(ErrorCode::unavailable, 7ms), 9), 7ms);
}

/// A mixed run of failures through one generator, as the core uses it.
std::vector<Duration> waits(std::uint64_t seed) {
  const RetryPolicy p = retry_policy(1ms, 2s, 2.0);
  SplitMix64 rng{seed};
  std::vector<Duration> out;
  for (std::uint32_t k = 1; k <= 12; ++k) {
    out.push_back(backoff_delay(p, k, failure(ErrorCode::unavailable), rng));
    out.push_back(backoff_delay(p, k + 1, failure(ErrorCode::connection_lost), rng));
    out.push_back(backoff_delay(p, k, failure(ErrorCode::unavailable, 40ms), rng));
  }
  return out;
}

// D2: equal seeds give equal waits, draw for draw; another seed gives other waits.
TEST(D2, EqualJitterSeedsGiveEqualBackoffSequences) {
  const std::uint64_t seed = RetryPolicy{}.jitter_seed;
  EXPECT_EQ(waits(seed), waits(seed));
  EXPECT_EQ(waits(0), waits(0));
  EXPECT_NE(waits(seed), waits(seed + 1));
  EXPECT_NE(waits(0), waits(1));
}

// D2: SplitMix64 is the published algorithm (Steele, Lea, Flood 2014; Vigna's
// splitmix64.c): its first outputs from seed 0, and from seed 1234567 (the Rosetta Code
// "Pseudo-random numbers/Splitmix64" task).
TEST(D2, SplitMix64MatchesThePublishedReferenceValues) {
  SplitMix64 zero{0};
  EXPECT_EQ(zero.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(zero.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(zero.next(), 0x06C45D188009454FULL);
  SplitMix64 rosetta{1234567};
  EXPECT_EQ(rosetta.next(), 6457827717110365317ULL);
  EXPECT_EQ(rosetta.next(), 3203168211198807973ULL);
  EXPECT_EQ(rosetta.next(), 9817491932198370423ULL);
  EXPECT_EQ(rosetta.next(), 4593380528125082431ULL);
  EXPECT_EQ(rosetta.next(), 16408922859458223821ULL);
}

// D2, E4: uniform_inclusive(bound) stays in [0, bound], reaches both ends, gives 0 for 0
// and the raw output for UINT64_MAX.
TEST(D2, UniformInclusiveStaysWithinItsBound) {
  SplitMix64 rng{5};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rng.uniform_inclusive(0), 0U);
  std::vector<int> seen(10, 0);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t v = rng.uniform_inclusive(9);
    ASSERT_LE(v, 9U);
    ++seen[v];
  }
  for (std::size_t v = 0; v < seen.size(); ++v) EXPECT_GT(seen[v], 100) << "value " << v;
  const std::uint64_t bounds[] = {1, 2, 1000, std::uint64_t{1} << 40, UINT64_MAX - 1};
  for (const std::uint64_t bound : bounds) {
    for (int i = 0; i < 200; ++i) ASSERT_LE(rng.uniform_inclusive(bound), bound);
  }
  SplitMix64 a{77};
  SplitMix64 b{77};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.uniform_inclusive(UINT64_MAX), b.next());
}

}  // namespace
}  // namespace prodsm::test
