// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_outcomes.hpp
/// Internal: Producer<Policy>::Impl (producer_impl.hpp), part of its definition.
/// Outcomes of attempts: acks (E5, S3) and failures, with retry (E4), sequence-gap
/// parking (S4) and the epoch claim (S5).

#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {

template <class Policy>
std::uint32_t Producer<Policy>::Impl::first_backoff() const {
  std::uint32_t i = 0;
  while (i < ring.size() && at(i).state != BatchState::backoff) ++i;
  return i;
}

template <class Policy>
void Producer<Policy>::Impl::park(Batch& b, ParkReason why, std::uint64_t server_epoch) {
  move_to(b, BatchState::parked);
  b.parked = why;
  b.parked_server_epoch = server_epoch;
  b.parked_serial = send_serial;
  note_sendable(index_of(b));
}

template <class Policy>
void Producer<Policy>::Impl::unpark(Batch& b) {
  const ParkReason why = b.parked;
  b.parked = ParkReason::none;
  if (why == ParkReason::stale_epoch) {
    claim_epoch(b.parked_server_epoch);
    return;
  }
  move_to(b, BatchState::queued);  // S4: the lower seqs are acknowledged; resend
  ++stats.gap_resends;
  note_sendable(0);
}

template <class Policy>
void Producer<Policy>::Impl::claim_epoch(std::uint64_t server_epoch) {
  Batch& first = at(0);
  if (auto why = policy.claim_epoch(server_epoch)) {
    Error e = make_error(ErrorCode::stale_epoch, Certainty::definite, false, *why);
    e.server_epoch = server_epoch;
    fail_terminal(std::move(e), &first);
    return;
  }
  ++first.retries;
  ++stats.epoch_claims;
  for (std::uint32_t i = 0; i < ring.size(); ++i) {
    Batch& b = at(i);
    if (b.state == BatchState::open || b.state == BatchState::acked) continue;
    if (b.state == BatchState::in_flight) {
      --in_flight;
      b.superseded_attempt = b.attempt;
    }
    if (b.state == BatchState::backoff) --backoff_count;
    b.parked = ParkReason::none;
    move_to(b, BatchState::queued);
    b.stamp = policy.stamp(b.count);
  }
  claim_pending = true;
  claim_batch_id = first.id;
  send_scan = 0;
}

template <class Policy>
auto Producer<Policy>::Impl::find_outcome_target(BatchId id, std::uint32_t attempt, const char* what,
                                                 bool may_have_applied) -> Batch* {
  if (id.value >= next_batch_id) {
    fail_invalid(std::string(what) + " for batch " + std::to_string(id.value) + ", which was never sent");
    return nullptr;
  }
  if (ring.size() == 0 || id.value < at(0).id) {
    ++stats.stale_outcomes;  // the batch already completed
    return nullptr;
  }
  Batch& b = at(static_cast<std::uint32_t>(id.value - at(0).id));
  if (b.attempt == 0 || attempt == 0 || attempt > b.attempt) {
    fail_invalid(std::string(what) + " for attempt " + std::to_string(attempt) + " of batch " +
                 std::to_string(id.value) + ", which was never sent");
    return nullptr;
  }
  if (attempt == b.attempt && b.sent_serial > sends_handed_out) {  // its SendBatch is still in the queue
    fail_invalid(std::string(what) + " for attempt " + std::to_string(attempt) + " of batch " +
                 std::to_string(id.value) + ", which was never sent: its SendBatch was not polled yet");
    return nullptr;
  }
  if (attempt < b.attempt || (b.state != BatchState::in_flight && attempt == b.superseded_attempt)) {
    ++stats.stale_outcomes;  // superseded by a resend or an epoch claim
    return nullptr;
  }
  if (b.state != BatchState::in_flight) {
    // The two reports contradict each other: when this one says the attempt may have been
    // applied, its records may be in the stream and must not fail definite (E2, C5).
    if (may_have_applied) b.ambiguous = true;
    fail_invalid(std::string("second ") + what + " for attempt " + std::to_string(attempt) + " of batch " +
                 std::to_string(id.value));
    return nullptr;
  }
  return &b;
}

template <class Policy>
void Producer<Policy>::Impl::fail_invalid(std::string message) {
  fail_terminal(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false, std::move(message)), nullptr);
}

template <class Policy>
void Producer<Policy>::Impl::on_failure(Instant now, Batch& b, Error e) {
  --in_flight;
  move_to(b, BatchState::queued);  // not in flight any more; the cases below decide
  if (e.certainty == Certainty::indefinite) b.ambiguous = true;
  const std::uint32_t index = index_of(b);
  const bool budget_left = b.retries + 1 < config.retry.max_attempts;
  switch (e.code) {
    case ErrorCode::sequence_gap: {  // S4
      const auto seq = Policy::sequence_of(b.stamp);
      if (seq && e.expected_seq < *seq && b.sent_with_predecessors) {
        if (index == 0) {
          ++stats.gap_resends;  // the lower seqs were acknowledged meanwhile
          note_sendable(0);
        } else {
          park(b, ParkReason::sequence_gap, 0);
        }
        return;
      }
      fail_terminal(std::move(e), &b);
      return;
    }
    case ErrorCode::stale_epoch: {  // S5
      if (policy.can_claim_epoch() && !b.ambiguous && budget_left) {
        if (index == 0) {
          claim_epoch(e.server_epoch);
        } else {
          park(b, ParkReason::stale_epoch, e.server_epoch);
        }
        return;
      }
      if (policy.can_claim_epoch()) {  // say why auto-claim did not claim
        e.message += (e.message.empty() ? "" : "; ") +
                     std::string(b.ambiguous ? "not claimed (S5): an earlier attempt of this batch has an unknown "
                                               "outcome, so it may be in the stream under the old epoch and a claim "
                                               "would append it again"
                                             : "not claimed (S5): the batch's retry budget is spent");
      }
      fail_terminal(std::move(e), &b);
      return;
    }
    default: break;
  }
  // E4: retry what is retryable when a resend is safe; everything else is terminal
  // (E3 condition failures, S6 stream closed, rejections, protocol errors).
  const bool safe =
      e.certainty == Certainty::definite || (config.retry.mode == RetryMode::all && policy.resend_is_safe());
  if (e.retryable && safe && budget_left) {
    ++b.retries;
    ++stats.retries_scheduled;
    b.retry_due = true;  // stats.retries counts it when the resend goes out (send)
    last_retried_failure = e;
    last_retried_batch = b.id;
    last_retry_sent = false;
    if (detail::retries_at_once(b.retries, e)) {  // a lost connection: at once, on a new connection
      note_sendable(index);
      return;
    }
    b.retry_at = saturating_add(now, detail::backoff_delay(config.retry, b.retries, e, rng));
    move_to(b, BatchState::backoff);
    ++backoff_count;
    note_sendable(index);
    return;
  }
  if (e.retryable && safe && !budget_left) {
    e.message +=
        (e.message.empty() ? "" : "; ") + std::string("gave up after ") + std::to_string(b.attempt) + " attempts";
  } else if (e.retryable && !safe) {  // E4: say why a retryable failure was not retried
    e.message += (e.message.empty() ? "" : "; ") +
                 std::string(policy.resend_is_safe()
                                 ? "not resent: the attempt may have been applied, and RetryMode::no_side_effects "
                                   "retries only failures that were not"
                                 : "not resent: the attempt may have been applied and a resend of an unsequenced "
                                   "batch could append it twice (sequencing makes resends safe)");
  }
  fail_terminal(std::move(e), &b);
}

template <class Policy>
void Producer<Policy>::Impl::handle_ack(Instant now, BatchId id, std::uint32_t attempt, Ack ack) {
  observe(now);
  if (!live()) {
    ++stats.stale_outcomes;
    return;
  }
  Batch* b = find_outcome_target(id, attempt, "ack", true);
  if (b == nullptr) return;
  if (auto why = policy.check_ack(b->stamp, b->count, ack)) {  // E5
    --in_flight;
    move_to(*b, BatchState::queued);
    b->ambiguous = true;
    fail_terminal(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false,
                             "batch " + std::to_string(b->id) + ": " + *why),
                  b);
    return;
  }
  --in_flight;
  move_to(*b, BatchState::acked);
  ++stats.batches_acked;
  if (Policy::is_duplicate(ack)) {  // S3
    ++stats.duplicates;
    stats.duplicate_records += b->count;
    // Nothing of ours can have reached the server before: an earlier incarnation with
    // the same producer id and epoch appended these seqs (a resumed run, or an id and
    // epoch reused).
    if (b->attempt == 1 && !b->ambiguous) {
      stats.first_attempt_duplicate_records += b->count;
      if (policy.fails_first_attempt_duplicates()) {
        move_to(*b, BatchState::queued);
        fail_terminal(make_error(ErrorCode::protocol_error, Certainty::definite, false,
                                 "batch " + std::to_string(b->id) +
                                     " was answered as a duplicate on its first attempt: the server already "
                                     "holds its (producer id, epoch, seq) from an earlier incarnation, so none "
                                     "of its records were appended by this producer"),
                      b);
        return;
      }
      Policy::mark_earlier_incarnation(ack);
    }
  }
  probe_pending = false;  // the epoch's first batch is acknowledged: pipeline from now on
  b->ack = std::move(ack);
  advance_head();
  pump();
}

template <class Policy>
void Producer<Policy>::Impl::handle_failure(Instant now, BatchId id, std::uint32_t attempt, Error failure) {
  now = observe(now);
  if (!live()) {
    ++stats.stale_outcomes;
    return;
  }
  Batch* b = find_outcome_target(id, attempt, "failure", failure.certainty == Certainty::indefinite);
  if (b == nullptr) return;
  on_failure(now, *b, std::move(failure));
  pump();
}

}  // namespace prodsm
