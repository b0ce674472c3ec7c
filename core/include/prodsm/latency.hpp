// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file latency.hpp
/// prodsm::LatencyHistogram: a fixed-size log-linear histogram of durations (HdrHistogram's
/// layout with 4 significant bits: 976 counters, 7.6 KiB, no allocation), and
/// LatencySummary, the percentiles the adapters' stats() report for submit-to-ack latency.
/// Every value is kept within 1/16 (6.25 %) of what was recorded; percentiles report
/// the upper bound of their bucket, so they never understate.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "prodsm/time.hpp"

namespace prodsm {

/// Percentiles of a latency distribution (ns); all zero when count is 0.
struct LatencySummary {
  std::uint64_t count = 0;  ///< values recorded (records, for submit-to-ack)
  Duration p50_ns{};        ///< median (ns)
  Duration p90_ns{};        ///< 90th percentile (ns)
  Duration p99_ns{};        ///< 99th percentile (ns)
  Duration p999_ns{};       ///< 99.9th percentile (ns)
  Duration max_ns{};        ///< the largest value recorded (ns, exact)
};

/// Durations 0 ns .. 2^63 ns, bucketed log-linearly (see the file comment). Not
/// thread-safe; copyable.
class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 4;                                 ///< significant bits kept per value
  static constexpr std::size_t kSub = 1U << kSubBits;                     ///< buckets per power of two
  static constexpr std::size_t kBuckets = kSub + (64 - kSubBits) * kSub;  ///< 976

  /// Records `count` values of `d` (negative durations count as 0).
  void add(Duration d, std::uint64_t count = 1) noexcept {
    if (count == 0) return;
    const auto v = static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count());
    counts_[bucket_of(v)] += count;
    total_ += count;
    if (v > max_) max_ = v;
  }

  /// The values recorded so far.
  [[nodiscard]] std::uint64_t count() const noexcept { return total_; }

  /// The value at quantile `q` (0..1): the upper bound of the bucket holding the
  /// ceil(q * count)-th smallest value, at most the exact maximum; 0 when empty.
  [[nodiscard]] Duration quantile(double q) const noexcept {
    if (total_ == 0) return Duration::zero();
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_) + 0.999999);
    if (rank == 0) rank = 1;
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= rank) {
        const std::uint64_t upper = upper_bound_of(b);
        return Duration{static_cast<Duration::rep>(upper < max_ ? upper : max_)};
      }
    }
    return Duration{static_cast<Duration::rep>(max_)};
  }

  /// p50, p90, p99, p99.9 and the maximum.
  [[nodiscard]] LatencySummary summary() const noexcept {
    return LatencySummary{total_,         quantile(0.5),   quantile(0.9),
                          quantile(0.99), quantile(0.999), Duration{static_cast<Duration::rep>(max_)}};
  }

  /// The bucket of value `v` (ns): exact below 16, then 16 buckets per power of two.
  static constexpr std::size_t bucket_of(std::uint64_t v) noexcept {
    if (v < kSub) return static_cast<std::size_t>(v);
    const unsigned e = 63U - static_cast<unsigned>(std::countl_zero(v));  // kSubBits..63
    const std::uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
    return kSub + (e - kSubBits) * kSub + static_cast<std::size_t>(sub);
  }
  /// The largest value that falls into bucket `b`.
  static constexpr std::uint64_t upper_bound_of(std::size_t b) noexcept {
    if (b < kSub) return b;
    const std::size_t e = (b - kSub) / kSub + kSubBits;
    const std::uint64_t sub = (b - kSub) % kSub;
    const std::uint64_t low = (std::uint64_t{1} << e) | (sub << (e - kSubBits));
    return low + ((std::uint64_t{1} << (e - kSubBits)) - 1);
  }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace prodsm
