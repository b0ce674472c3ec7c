// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file invariants.hpp
/// Internal: the Producer core's invariants, checked after every input in builds with
/// PRODSM_CHECK_INVARIANTS defined (the CMake option of that name: on in the test,
/// sanitizer and fuzz presets, off by default and in release builds). A broken
/// invariant is a bug in the core: the check aborts, so a fuzzer reports it as a crash
/// (which one broke is in `prodsm_broken_invariant`; first_broken_invariant names it).
/// Positive and negative space both: what must hold (counters match the ring, R1 and R3
/// limits, tickets contiguous in seal order, P3, a terminal error iff failed, E1) and what
/// must never be (a slot outside the ring in use, an open batch that is not the newest, a
/// pending barrier that is already covered, work held by a failed or closed producer).
/// The state changes themselves are checked as they happen (move_to, set_lifecycle).

#include <cstddef>
#include <cstdint>

#include "prodsm/detail/lifecycle.hpp"
#include "prodsm/error.hpp"

namespace prodsm::detail {

/// Aborts on a broken invariant; `what` (which one) is kept in the global
/// `prodsm_broken_invariant` for a debugger or a core dump — the core prints nothing
/// (D1). Defined in core/src/invariants.cpp.
[[noreturn]] void invariant_failed(const char* what) noexcept;

/// The first invariant `impl` (a Producer<Policy>::Impl between inputs) breaks, as one
/// sentence naming it, or nullptr when all hold. Not checked (nullptr) once an
/// allocation failure poisoned the state (D4: the producer failed with `internal`, its
/// bookkeeping abandoned on purpose).
template <class Impl>
const char* first_broken_invariant(const Impl& impl) noexcept {
  using State = typename Impl::BatchState;
  if (impl.failed && impl.failed->code == ErrorCode::internal) return nullptr;
  const auto& ring = impl.ring;
  if (ring.size() > ring.capacity()) return "ring: more batches than slots";
  if (ring.capacity() != impl.config.max_unacked_batches) return "ring: capacity is not max_unacked_batches (R3)";
  if (ring.head() >= ring.capacity()) return "ring: head outside the ring";
  std::uint32_t in_flight = 0;
  std::uint32_t backoff = 0;
  std::uint64_t metered = 0;
  for (std::uint32_t i = 0; i < ring.size(); ++i) {
    const auto& b = impl.at(i);
    if (b.state == State::empty) return "ring: a batch inside the ring is empty";
    if (b.id != impl.at(0).id + i) return "ring: batch ids are not consecutive in seal order";
    if (b.count == 0) return "ring: a batch without records (B5)";
    if (b.count > impl.config.max_batch_records) return "batch: more records than max_batch_records (B1)";
    if (b.body_bytes > impl.config.max_batch_bytes) return "batch: more bytes than max_batch_bytes (B1)";
    if (i + 1 < ring.size()) {
      if (impl.at(i + 1).first_ticket != b.first_ticket + b.count)
        return "ring: tickets are not contiguous in seal order (P3)";
      if (b.state == State::open) return "ring: an open batch that is not the newest";
    }
    if (b.state == State::in_flight) ++in_flight;
    if (b.state == State::backoff) ++backoff;
    metered += b.metered_bytes;
  }
  for (std::uint32_t i = ring.size(); i < ring.capacity(); ++i) {  // at() wraps past the ring's end too
    if (impl.at(i).state != State::empty) return "ring: a slot outside the ring is in use";
  }
  const bool open_newest = ring.size() > 0 && impl.at(ring.size() - 1).state == State::open;
  if (impl.open_ != (open_newest ? &impl.at(ring.size() - 1) : nullptr))
    return "open batch: the pointer does not name the newest, open batch";
  if (in_flight != impl.in_flight) return "in_flight: the counter does not match the batches in flight";
  if (impl.in_flight > impl.config.max_in_flight) return "in_flight: above max_in_flight (R1)";
  if (backoff != impl.backoff_count) return "backoff_count: the counter does not match the batches in backoff";
  if (metered != impl.unacked_bytes) return "unacked_bytes: the counter does not match the batches' bytes (R1)";
  if (impl.unacked_bytes > impl.config.max_unacked_bytes) return "unacked_bytes: above max_unacked_bytes (R1)";
  if (ring.size() > 0) {
    const auto& last = impl.at(ring.size() - 1);
    if (last.first_ticket + last.count != impl.next_ticket) return "tickets: an accepted record is in no batch";
    if (impl.completed_tickets > impl.at(0).first_ticket) return "tickets: a batch in the ring already completed";
  } else if (impl.completed_tickets != impl.next_ticket) {
    return "tickets: an accepted record neither completed nor batched";
  }
  if (impl.sends_handed_out > impl.send_serial) return "sends: more SendBatch actions handed out than emitted (E5)";
  if (impl.barriers.size() > impl.config.max_pending_barriers) return "barriers: above max_pending_barriers (R3)";
  std::uint64_t cutoff = 0;
  for (const auto& barrier : impl.barriers) {
    if (barrier.cutoff < cutoff) return "barriers: cutoffs out of order (P3)";
    if (barrier.cutoff <= impl.completed_tickets) return "barriers: a pending barrier whose records all completed (F1)";
    if (barrier.cutoff > impl.next_ticket) return "barriers: a barrier covers a record never accepted";
    cutoff = barrier.cutoff;
  }
  if (impl.pool.size() > impl.pool.limit()) return "buffer pool: above its limit";
  const bool live = is_live(impl.lifecycle);
  if (!live && (ring.size() > 0 || !impl.barriers.empty())) return "lifecycle: a failed or closed producer holds work";
  if (live && impl.failed) return "lifecycle: a terminal error, yet the producer is live (E1)";
  if (impl.lifecycle == ProducerState::failed && !impl.failed) return "lifecycle: failed without a terminal error (E1)";
  return nullptr;
}

/// Aborts (invariant_failed) when `impl` breaks an invariant.
template <class Impl>
void check_producer_invariants(const Impl& impl) noexcept {
  if (const char* what = first_broken_invariant(impl)) invariant_failed(what);
}

}  // namespace prodsm::detail
