// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file time.hpp
/// Time as the core sees it (D1, D3): a monotonic instant passed in by the caller.
/// The core never reads a clock; adapters pass `std::chrono::steady_clock::now()`,
/// tests and the conformance harness pass virtual instants.

#include <chrono>
#include <cstdint>

namespace prodsm {

/// A span of time in nanoseconds (ns). Every duration in prodsm's API has this type.
using Duration = std::chrono::nanoseconds;

/// A monotonic instant (ns resolution) on the steady clock's time line.
/// Only differences between instants are meaningful. The core reads no clock (D1):
/// every input carries the caller's `now`.
using Instant = std::chrono::time_point<std::chrono::steady_clock, Duration>;

/// The largest instant; used as "never" internally.
inline constexpr Instant kInstantMax = Instant::max();

/// The smallest instant: what a LatestInstant holds before its first input.
inline constexpr Instant kInstantMin = Instant::min();

/// `at + d`, saturating at kInstantMax instead of overflowing (no UB on huge durations).
/// @param at an instant; @param d a non-negative duration (negative is treated as 0).
constexpr Instant saturating_add(Instant at, Duration d) noexcept {
  if (d.count() <= 0) return at;
  if (at.time_since_epoch().count() > kInstantMax.time_since_epoch().count() - d.count()) {
    return kInstantMax;
  }
  return at + d;
}

/// `to - from`: how long after `from` the instant `to` is; 0 when it is not later, and
/// Duration::max() when the two are further apart than a Duration holds (about 292
/// years: instants on both sides of the epoch, hostile inputs), never an overflow.
constexpr Duration elapsed(Instant from, Instant to) noexcept {
  const auto a = from.time_since_epoch().count();
  const auto b = to.time_since_epoch().count();
  if (b <= a) return Duration{0};
  const auto diff = static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);  // exact: 0 < b - a < 2^64
  if (diff > static_cast<std::uint64_t>(Duration::max().count())) return Duration::max();
  return Duration{static_cast<Duration::rep>(diff)};
}

/// The latest instant a state machine's inputs brought (D3): time never goes backwards
/// for it. observe(now) is `now`, or that latest instant when `now` is earlier (a caller's
/// clock stepped back), and remembers it — so a deadline never fires early and a request
/// never looks older than it is. The first `now` is taken as given, whatever its value (an
/// instant before the clock's epoch too: only differences matter). The core,
/// http::Connection and http::Pool keep one.
class LatestInstant {
 public:
  /// No input yet: the first observe() takes its `now` as given.
  constexpr LatestInstant() noexcept = default;
  /// Starting at `start`.
  constexpr explicit LatestInstant(Instant start) noexcept : latest_{start} {}
  /// `now`, or the latest instant seen when `now` is earlier; remembered.
  constexpr Instant observe(Instant now) noexcept {
    if (now > latest_) latest_ = now;
    return latest_;
  }
  /// The latest instant seen; kInstantMin before the first input.
  [[nodiscard]] constexpr Instant latest() const noexcept { return latest_; }

 private:
  Instant latest_ = kInstantMin;
};

}  // namespace prodsm
