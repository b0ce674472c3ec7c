// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file batch.hpp
/// Internal: one batch's bookkeeping inside the Producer core. Not part of the public API.

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
  parked,     ///< S4 gap: waits until the batch before it is acknowledged or sent again;
              ///< S5 stale epoch: waits until every earlier batch completed
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
  std::uint64_t sent_serial = 0;    ///< the producer's send counter at this batch's last send
  std::uint64_t parked_serial = 0;  ///< the send counter when it was parked (S4)
  Instant retry_at{};
  typename Policy::Stamp stamp{};
  std::optional<typename Policy::Ack> ack;
};

}  // namespace prodsm::detail
