// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_completion.hpp
/// Internal: Producer<Policy>::Impl (producer_impl.hpp), part of its definition.
/// Completion in order (P3, F1–F5): acknowledged batches at the head, barriers, the
/// terminal failure (E1, C5), and close and abort (C1, C2).

#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {

template <class Policy>
void Producer<Policy>::Impl::complete_barriers() {
  while (!barriers.empty() && barriers.front().cutoff <= completed_tickets) {
    const PendingBarrier bar = barriers.front();
    barriers.pop_front();
    emit_barrier(bar.id, bar.cutoff);
  }
}

template <class Policy>
void Producer<Policy>::Impl::emit_barrier(std::uint64_t id, std::uint64_t cutoff) {
  ++stats.barriers_completed;
  if (first_failed_ticket && cutoff > *first_failed_ticket) {
    emit(BarrierCompleted{BarrierId{id}, tl::unexpected(*failed)});
  } else {
    emit(BarrierCompleted{BarrierId{id}, {}});
  }
}

template <class Policy>
void Producer<Policy>::Impl::complete_success(Batch& b) {
  if constexpr (Policy::kChecksOrder) {
    if (!Policy::is_duplicate(*b.ack)) last_completed_ack = *b.ack;  // a duplicate has no position (S3)
  }
  stats.records_succeeded += b.count;
  emit(TicketsCompleted<Policy>{BatchId{b.id}, Ticket{b.first_ticket}, Ticket{b.first_ticket + b.count - 1},
                                std::move(*b.ack)});
}

template <class Policy>
void Producer<Policy>::Impl::advance_head() {
  bool freed = false;
  while (ring.size() > 0 && at(0).state == BatchState::acked) {
    Batch& b = at(0);
    if constexpr (Policy::kChecksOrder) {
      if (last_completed_ack) {
        if (auto why = policy.check_order(*last_completed_ack, *b.ack)) {  // E5
          move_to(b, BatchState::queued);
          b.ambiguous = true;
          fail_terminal(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false,
                                   "batch " + std::to_string(b.id) + ": " + *why),
                        &b);
          return;
        }
      }
    }
    if (claim_pending && b.id == claim_batch_id) claim_pending = false;  // S5
    complete_success(b);
    completed_tickets = b.first_ticket + b.count;
    release(b);
    pop_head();
    freed = true;
    complete_barriers();
  }
  complete_barriers();
  if (ring.size() > 0 && at(0).state == BatchState::parked) unpark(at(0));
  if (freed && capacity_wanted) {  // R1
    capacity_wanted = false;
    emit(CapacityAvailable{});
  }
  maybe_finish_close();
}

template <class Policy>
void Producer<Policy>::Impl::maybe_finish_close() {
  if (lifecycle == ProducerState::closing && ring.empty() && barriers.empty()) finish_close();
}

template <class Policy>
void Producer<Policy>::Impl::finish_close() {
  set_lifecycle(ProducerState::closed);
  if (failed) {
    close_result = tl::expected<void, Error>(tl::unexpected(*failed));
  } else {
    close_result = tl::expected<void, Error>{};
  }
  emit(Closed{*close_result});
}

template <class Policy>
void Producer<Policy>::Impl::fail_terminal(Error cause, const Batch* culprit) {
  if (failed) return;
  Certainty overall = culprit != nullptr ? certainty_of(*culprit) : Certainty::definite;
  for (std::uint32_t i = 0; i < ring.size(); ++i) {
    const Batch& b = at(i);
    if (b.state != BatchState::acked && certainty_of(b) == Certainty::indefinite) {
      overall = Certainty::indefinite;
    }
  }
  cause.certainty = overall;
  failed = cause;
  const bool was_closing = lifecycle == ProducerState::closing;
  set_lifecycle(ProducerState::failed);
  while (ring.size() > 0) {
    Batch& b = at(0);
    if (b.state == BatchState::acked) {
      complete_success(b);
    } else {
      Error range = cause;
      range.certainty = certainty_of(b);
      if (!first_failed_ticket) first_failed_ticket = b.first_ticket;
      stats.records_failed += b.count;
      emit(TicketsCompleted<Policy>{BatchId{b.id}, Ticket{b.first_ticket}, Ticket{b.first_ticket + b.count - 1},
                                    tl::unexpected(std::move(range))});
    }
    completed_tickets = b.first_ticket + b.count;
    release(b);
    pop_head();
    complete_barriers();
  }
  complete_barriers();
  in_flight = 0;
  backoff_count = 0;
  send_scan = 0;
  open_ = nullptr;
  claim_pending = false;
  if (capacity_wanted) {
    capacity_wanted = false;
    emit(CapacityAvailable{});
  }
  if (was_closing) finish_close();  // C1: nothing left to drain
}

template <class Policy>
auto Producer<Policy>::Impl::close(Instant now) -> std::optional<tl::expected<void, Error>> {
  observe(now);
  switch (lifecycle) {
    case ProducerState::closed: return close_result;  // C1: a second close returns the same result
    case ProducerState::closing: return std::nullopt;
    case ProducerState::failed: finish_close(); return std::nullopt;  // nothing left to drain (E1)
    case ProducerState::open: break;
  }
  set_lifecycle(ProducerState::closing);
  if (Batch* open = open_batch()) seal(*open);
  pump();
  maybe_finish_close();
  return std::nullopt;
}

template <class Policy>
void Producer<Policy>::Impl::abort(Instant now) {
  observe(now);
  if (lifecycle == ProducerState::closed) return;
  if (lifecycle != ProducerState::failed) {  // open or closing; fail_terminal closes a closing producer
    // A barrier pending covers a record pending, so an empty ring means nothing was cut short.
    fail_terminal(make_error(ErrorCode::aborted, Certainty::definite, false,
                             ring.empty() ? "the producer was aborted; every record accepted before it had already "
                                            "completed"
                                          : "the producer was aborted before its records completed"),
                  nullptr);
  }
  if (lifecycle == ProducerState::failed) finish_close();
}

}  // namespace prodsm
