// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file batch.hpp
/// Internal: one batch's bookkeeping inside the Producer core. Not part of the public API.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "prodsm/batch_body.hpp"
#include "prodsm/time.hpp"

namespace prodsm::detail {

/// Where a batch is in its life. Every change goes through Producer<Policy>::Impl::move_to,
/// which checks it against batch_edge_allowed below (h11 style: the table is the spec).
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

/// Number of BatchState values (the table's side).
inline constexpr std::size_t kBatchStates = 7;

/// The allowed changes of a batch's state, `from` to `to`; everything else is a bug in
/// the core (checked in builds with PRODSM_CHECK_INVARIANTS, invariants.hpp):
///  - empty -> open: a slot starts the partial batch (B1);
///  - open -> queued: sealed (B1, F1, R2, C1);
///  - queued -> in_flight: sent (R1, S5);
///  - in_flight -> acked: acknowledged (P3 then completes it in order);
///  - in_flight -> queued: the attempt failed (E4, S4, S5 decide what follows) or its ack
///    was invalid (E5, terminal);
///  - queued -> backoff -> queued: a retry waits for retry_at (E4);
///  - queued -> parked -> queued: a sequence gap or a stale epoch waits (S4, S5);
///  - queued, backoff, parked -> queued: renumbered by an epoch claim (S5);
///  - acked -> queued: an ack out of order with the one before (E5, terminal);
///  - any but empty -> empty: released, completed or failed (P3, E1).
constexpr bool batch_edge_allowed(BatchState from, BatchState to) noexcept {
  using S = BatchState;
  constexpr bool x = true;
  constexpr bool o = false;
  // clang-format off
  constexpr bool table[kBatchStates][kBatchStates] = {
      //            to: empty open queued in_flight backoff parked acked
      /* empty     */ {o,   x,   o,     o,        o,      o,     o},
      /* open      */ {x,   o,   x,     o,        o,      o,     o},
      /* queued    */ {x,   o,   x,     x,        x,      x,     o},
      /* in_flight */ {x,   o,   x,     o,        o,      o,     x},
      /* backoff   */ {x,   o,   x,     o,        o,      o,     o},
      /* parked    */ {x,   o,   x,     o,        o,      o,     o},
      /* acked     */ {x,   o,   x,     o,        o,      o,     o},
  };
  // clang-format on
  static_assert(static_cast<std::size_t>(S::acked) + 1 == kBatchStates);
  return table[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
}

/// Why a batch is parked.
enum class ParkReason : std::uint8_t { none, sequence_gap, stale_epoch };

/// A batch's owned buffers, recycled through a small pool (no allocation per record in
/// steady state).
struct BatchBuffers {
  BatchBody body;                          ///< the encoded records, appended as they are submitted
  std::vector<std::uint32_t> record_ends;  ///< each record's end offset in body (bytes)
};

/// One batch. Records are tickets [first_ticket, first_ticket + count).
template <class Policy>
struct Batch {
  std::uint64_t id = 0;                     ///< the batch's id (BatchId), unique per producer
  std::uint64_t first_ticket = 0;           ///< the ticket of its first record (P1)
  std::uint32_t count = 0;                  ///< records in it (B4: at most max_batch_records)
  std::uint64_t body_bytes = 0;             ///< metered size of the body, overhead included
  std::uint64_t metered_bytes = 0;          ///< sum of the records' metered bytes (R1 accounting)
  BatchBuffers buffers;                     ///< next to the counters: a submit touches both
  Instant first_submit{};                   ///< submit instant of the first record (B1, E6)
  BatchState state = BatchState::empty;     ///< where it is in its lifecycle (batch_edge_allowed)
  std::uint32_t attempt = 0;                ///< last attempt issued; 0 = never sent
  std::uint32_t superseded_attempt = 0;     ///< an outstanding attempt an epoch claim replaced
  std::uint32_t retries = 0;                ///< failure-driven resends and claims (bounded)
  bool retry_due = false;                   ///< a retry was decided (E4), its resend not sent yet
  bool ambiguous = false;                   ///< some attempt may have been appended (E2)
  bool sent_with_predecessors = false;      ///< last attempt left with earlier batches unacked (S4)
  ParkReason parked = ParkReason::none;     ///< why it waits to be resent (S4 gap, S5 stale epoch)
  std::uint64_t parked_server_epoch = 0;    ///< with stale_epoch: the epoch the server reported (S5)
  std::uint64_t sent_serial = 0;            ///< the producer's send counter at this batch's last send
  std::uint64_t parked_serial = 0;          ///< the send counter when it was parked (S4)
  Instant retry_at{};                       ///< when its backoff ends (E4)
  typename Policy::Stamp stamp{};           ///< sequencing stamps fixed at seal (S2)
  std::optional<typename Policy::Ack> ack;  ///< set once acknowledged (P3: completed in order)
};

}  // namespace prodsm::detail
