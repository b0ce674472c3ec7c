// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file batch.hpp
/// Internal: one batch's bookkeeping inside the Producer core, and the deterministic
/// jitter generator. Not part of the public API.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "prodsm/time.hpp"

namespace prodsm::detail {

/// Where a batch is in its life. Transitions live in producer_impl.hpp only (h11 style).
enum class BatchState : std::uint8_t {
  empty,      ///< ring slot not in use
  open,       ///< the partial batch, still taking records (only ever the newest batch)
  queued,     ///< sealed; waits for an in-flight slot (first send or resend)
  in_flight,  ///< an attempt is outstanding
  backoff,    ///< waits for retry_at before being queued again (E4)
  parked,     ///< waits for every earlier batch to complete (S4 gap, S5 stale epoch)
  acked,      ///< acknowledged; waits for earlier batches to complete (P3)
};

/// Why a batch is parked.
enum class ParkReason : std::uint8_t { none, sequence_gap, stale_epoch };

/// A batch's owned buffers, recycled through a small pool (no allocation per record in
/// steady state).
struct BatchBuffers {
  std::vector<std::byte> body;
  std::vector<std::uint32_t> record_ends;
};

/// One batch. Records are tickets [first_ticket, first_ticket + count).
template <class Policy>
struct Batch {
  std::uint64_t id = 0;
  std::uint64_t first_ticket = 0;
  std::uint32_t count = 0;
  std::uint64_t body_bytes = 0;     ///< metered size of the body, overhead included
  std::uint64_t metered_bytes = 0;  ///< sum of the records' metered bytes (R1 accounting)
  BatchBuffers buffers;             ///< next to the counters: a submit touches both
  Instant first_submit{};           ///< submit instant of the first record (B1, E6)
  BatchState state = BatchState::empty;
  std::uint32_t attempt = 0;             ///< last attempt issued; 0 = never sent
  std::uint32_t superseded_attempt = 0;  ///< an outstanding attempt an epoch claim replaced
  std::uint32_t retries = 0;             ///< failure-driven resends and claims (bounded)
  bool ambiguous = false;                ///< some attempt may have been appended (E2)
  bool sent_with_predecessors = false;   ///< last attempt left with earlier batches unacked (S4)
  ParkReason parked = ParkReason::none;
  std::uint64_t parked_server_epoch = 0;
  Instant retry_at{};
  typename Policy::Stamp stamp{};
  std::optional<typename Policy::Ack> ack;
};

/// SplitMix64: a tiny, well-known deterministic generator for backoff jitter (D2).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) noexcept : state_{seed} {}
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

}  // namespace prodsm::detail
