// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_batches.hpp
/// Internal: Producer<Policy>::Impl (producer_impl.hpp), part of its definition.
/// A batch's life from start to release, and sending: start_batch, seal, release,
/// the send scan (pump, R1, S4, S5) and send. Each state change goes through move_to.

#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {

template <class Policy>
auto Producer<Policy>::Impl::start_batch(Instant now) -> Batch& {
  // S8: the open batch holds no more records than the protocol can still number.
  max_batch_records = std::min(config.max_batch_records, policy.record_room());
  Batch& b = ring.push_back();
  b.id = next_batch_id++;
  b.first_ticket = next_ticket;
  b.count = 0;
  b.body_bytes = policy.batch_overhead_bytes();
  b.metered_bytes = 0;
  b.first_submit = now;
  move_to(b, BatchState::open);
  b.attempt = 0;
  b.superseded_attempt = 0;
  b.retries = 0;
  b.retry_due = false;
  b.ambiguous = false;
  b.sent_with_predecessors = false;
  b.parked = ParkReason::none;
  b.parked_server_epoch = 0;
  b.retry_at = Instant{};
  b.sent_serial = 0;
  b.parked_serial = 0;
  b.stamp = Stamp{};
  b.ack.reset();
  b.buffers = pool.take();
  open_ = &b;
  return b;
}

template <class Policy>
void Producer<Policy>::Impl::seal(Batch& b) {
  if (&b == open_) open_ = nullptr;
  policy.frame_seal(b.buffers.body);
  b.stamp = policy.stamp(b.count);
  move_to(b, BatchState::queued);
  ++stats.batches_sealed;
  note_sendable(index_of(b));
}

template <class Policy>
void Producer<Policy>::Impl::note_sendable(std::uint32_t index) {
  send_scan = std::min(send_scan, index);
}

template <class Policy>
void Producer<Policy>::Impl::release(Batch& b) {
  if (&b == open_) open_ = nullptr;
  unacked_bytes -= b.metered_bytes;
  pool.give(b.buffers);
  b.ack.reset();
  move_to(b, BatchState::empty);
}

template <class Policy>
void Producer<Policy>::Impl::pop_head() {
  ring.pop_front();
  send_scan = send_scan > 0 ? send_scan - 1 : 0;
}

template <class Policy>
void Producer<Policy>::Impl::pump() {
  if (!live()) return;
  const std::uint32_t limit = (claim_pending || probe_pending) ? 1U : config.max_in_flight;
  std::uint32_t i = send_scan;
  while (i < ring.size()) {
    Batch& b = at(i);
    if (b.state == BatchState::parked && i > 0 && gap_resolvable(b, at(i - 1))) {
      b.parked = ParkReason::none;  // S4: queued right behind the batch before it
      move_to(b, BatchState::queued);
      ++stats.gap_resends;
    }
    if (b.state == BatchState::queued) {
      if (in_flight >= limit) break;
      send(b, i);
    } else if (b.state != BatchState::in_flight && b.state != BatchState::acked) {
      break;
    }
    ++i;
  }
  send_scan = i;
}

template <class Policy>
bool Producer<Policy>::Impl::gap_resolvable(const Batch& b, const Batch& before) {
  if (b.parked != ParkReason::sequence_gap) return false;
  return before.state == BatchState::acked ||
         (before.state == BatchState::in_flight && before.sent_serial > b.parked_serial);
}

template <class Policy>
void Producer<Policy>::Impl::send(Batch& b, std::uint32_t index) {
  ++b.attempt;
  b.sent_serial = ++send_serial;
  move_to(b, BatchState::in_flight);
  b.sent_with_predecessors = index > 0;  // S4: an earlier batch is still unacked
  ++in_flight;
  ++stats.sends;
  if (b.retry_due) {  // E4: the retry goes out now
    b.retry_due = false;
    ++stats.retries;
    if (b.id == last_retried_batch) last_retry_sent = true;
  }
  SendBatch<Policy> action;
  action.batch = BatchId{b.id};
  action.attempt = b.attempt;
  action.first_ticket = Ticket{b.first_ticket};
  action.record_count = b.count;
  action.body = std::span<const std::byte>(b.buffers.body);
  if constexpr (Policy::kKeepsRecordEnds) {
    action.record_ends = std::span<const std::uint32_t>(b.buffers.record_ends);
  }
  action.stamp = b.stamp;
  emit(std::move(action));
}

}  // namespace prodsm
