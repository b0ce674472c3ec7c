// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file backoff.hpp
/// Internal: the retry backoff (E4) and its deterministic jitter generator (D2), shared by
/// the Producer core and the sans-IO protocol clients (their stream-close requests).
/// Not part of the public API.

#include <algorithm>
#include <cstdint>

#include "prodsm/config.hpp"
#include "prodsm/error.hpp"
#include "prodsm/time.hpp"

namespace prodsm::detail {

/// SplitMix64: a tiny, well-known deterministic generator for backoff jitter (D2).
class SplitMix64 {
 public:
  /// Seeds the generator (the same seed gives the same sequence, D2).
  explicit SplitMix64(std::uint64_t seed) noexcept : state_{seed} {}
  /// The next 64 uniformly distributed bits.
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound]; bound 0 gives 0.
  std::uint64_t uniform_inclusive(std::uint64_t bound) noexcept {
    if (bound == UINT64_MAX) return next();
    return next() % (bound + 1);
  }

 private:
  std::uint64_t state_;
};

/// True when retry `retry_number` after `failure` goes out at once, without a backoff
/// and without waiting for a timer: the first retry after a lost connection (E4).
inline bool retries_at_once(std::uint32_t retry_number, const Error& failure) noexcept {
  return retry_number == 1 && failure.code == ErrorCode::connection_lost &&
         (!failure.retry_after_ns || failure.retry_after_ns->count() <= 0);
}

/// The wait (ns) before retry `retry_number` (1, 2, ...) after `failure` (E4):
///  - a lost connection (`connection_lost`) is retried at once the first time: the resend
///    goes out on a new connection, and that is the remedy; later retries back off as
///    the retry before them would have for any other failure;
///  - otherwise min(backoff_max_ns, backoff_initial_ns * backoff_multiplier^(k-1)) for the k-th backing-off
///    retry, jittered uniformly into [half, full];
///  - a server's Retry-After raises the wait to at least that long.
inline Duration backoff_delay(const RetryPolicy& policy, std::uint32_t retry_number, const Error& failure,
                              SplitMix64& rng) noexcept {
  const std::uint32_t k = failure.code == ErrorCode::connection_lost ? retry_number - 1 : retry_number;
  std::uint64_t delay = 0;
  if (k > 0) {
    const auto initial = static_cast<std::uint64_t>(std::max<Duration::rep>(policy.backoff_initial_ns.count(), 0));
    const auto cap = static_cast<std::uint64_t>(std::max<Duration::rep>(policy.backoff_max_ns.count(), 0));
    // backoff_multiplier is validated 1.0..16.0; a value outside (a config that was not
    // validated) is taken as 1.0 (never shrinking, never NaN).
    const double multiplier =
        policy.backoff_multiplier >= 1.0 && policy.backoff_multiplier <= 16.0 ? policy.backoff_multiplier : 1.0;
    double grown = static_cast<double>(initial);
    for (std::uint32_t i = 1; i < k && grown < static_cast<double>(cap); ++i) grown *= multiplier;
    const std::uint64_t base = grown >= static_cast<double>(cap) ? cap : static_cast<std::uint64_t>(grown);
    const std::uint64_t half = base / 2;
    delay = half + rng.uniform_inclusive(base - half);
  }
  if (failure.retry_after_ns && failure.retry_after_ns->count() > 0) {
    delay = std::max(delay, static_cast<std::uint64_t>(failure.retry_after_ns->count()));
  }
  return Duration{static_cast<Duration::rep>(std::min<std::uint64_t>(delay, INT64_MAX))};
}

}  // namespace prodsm::detail
