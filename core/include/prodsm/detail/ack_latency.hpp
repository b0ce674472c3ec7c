// SPDX-License-Identifier: Apache-2.0
#pragma once
// prodsm::detail::AckLatency: submit-to-acknowledgement latency of accepted records, for
// the producer clients (ds and s2 ProducerClient) that report it through the adapters'
// stats(). Time is a parameter (D1).
//
// Cost: the acceptance instants of consecutive tickets accepted within kCoalesce_ns of the
// first of them share one entry (a tight submit loop pushes one entry per 10 us, not one
// per record), so a record's submit instant is known to within kCoalesce_ns — far below
// any acknowledgement's round trip. Entries are bounded by the records pending.

#include <cstdint>
#include <deque>

#include "prodsm/ids.hpp"
#include "prodsm/latency.hpp"
#include "prodsm/time.hpp"

namespace prodsm::detail {

class AckLatency {
 public:
  /// Consecutive acceptances this close to an entry's instant join it (ns).
  static constexpr Duration kCoalesce_ns = std::chrono::microseconds{10};

  /// Tickets [first, first + count) were accepted at `now`.
  void accepted(Ticket first, std::uint64_t count, Instant now) {
    if (count == 0) return;
    const std::uint64_t last = first.value + count - 1;
    if (!pending_.empty() && pending_.back().last + 1 == first.value &&
        elapsed(pending_.back().at, now) < kCoalesce_ns) {
      pending_.back().last = last;
      return;
    }
    pending_.push_back(Entry{first.value, last, now});
  }

  /// Tickets [first, last] completed at `now`: acknowledged (`ok`, recorded) or failed
  /// (forgotten). Tickets complete in order (P3); earlier unknown tickets are dropped.
  void completed(Ticket first, Ticket last, bool ok, Instant now) {
    while (!pending_.empty() && pending_.front().first <= last.value) {
      Entry& e = pending_.front();
      const std::uint64_t from = e.first < first.value ? first.value : e.first;
      const std::uint64_t to = e.last < last.value ? e.last : last.value;
      if (ok && to >= from) histogram_.add(elapsed(e.at, now), to - from + 1);
      if (e.last <= last.value) {
        pending_.pop_front();
      } else {
        e.first = last.value + 1;
        break;
      }
    }
  }

  /// Percentiles of every acknowledged record's submit-to-ack latency so far.
  [[nodiscard]] LatencySummary summary() const noexcept { return histogram_.summary(); }

 private:
  struct Entry {
    std::uint64_t first;
    std::uint64_t last;
    Instant at;
  };
  std::deque<Entry> pending_;
  LatencyHistogram histogram_;
};

}  // namespace prodsm::detail
