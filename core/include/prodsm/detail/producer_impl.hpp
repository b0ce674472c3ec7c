// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_impl.hpp
/// The definition of Producer<Policy>::Impl. Every state transition of the core lives in
/// this file (h11 style); grep a clause ID to find where it is implemented. The public
/// members forward to it through one guard (producer_api.hpp, included at the end); the
/// configuration checks are in config_validation.hpp, the invariants in invariants.hpp.
/// Included by the .cpp files that instantiate Producer for the shipped policies, and
/// by users who write a policy of their own.

#include <algorithm>
#include <cstring>
#include <deque>
#include <new>
#include <utility>

#include "prodsm/detail/backoff.hpp"
#include "prodsm/detail/batch.hpp"
#include "prodsm/detail/invariants.hpp"
#include "prodsm/producer.hpp"

namespace prodsm {

template <class Policy>
struct alignas(64) Producer<Policy>::Impl {
  using Batch = detail::Batch<Policy>;
  using BatchState = detail::BatchState;
  using ParkReason = detail::ParkReason;

  struct PendingBarrier {
    std::uint64_t id;
    std::uint64_t cutoff;  ///< covers tickets < cutoff (F1, F2)
  };

  explicit Impl(Config c)
      : max_batch_bytes{c.max_batch_bytes},
        max_unacked_bytes{c.max_unacked_bytes},
        max_batch_records{c.max_batch_records},
        config{std::move(c)},
        policy{config.protocol},
        ring(config.max_unacked_batches),
        rng{config.retry.jitter_seed} {
    pool_limit = static_cast<std::size_t>(config.max_in_flight) + 2;
    probe_pending = policy.fails_first_attempt_duplicates();
    pool.reserve(pool_limit);
    actions.reserve(static_cast<std::size_t>(config.max_in_flight) * 2 + 16);
  }

  // ---- state --------------------------------------------------------------------
  // Hot fields first, in one cache line: a submit that joins the partial batch reads
  // only these, the stats line after them, the policy and the batch.
  std::size_t unpolled = 0;  ///< actions.size() - action_read; read inline by Producer::poll_action
  Batch* open_ = nullptr;    ///< the partial batch (always the newest), if any
  std::uint64_t next_ticket = 0;
  std::uint64_t unacked_bytes = 0;  ///< R1
  Instant last_now{};
  std::uint64_t max_batch_bytes;    ///< config.max_batch_bytes, kept here for the fast path
  std::uint64_t max_unacked_bytes;  ///< config.max_unacked_bytes, likewise
  std::uint32_t max_batch_records;  ///< the open batch's record cap: config.max_batch_records, or less
                                    ///< near the protocol's sequence limit (S8)
  bool refusing = false;            ///< closing or failed: every submit takes the slow path
  ProducerStats stats;
  /// The last failure that was retried (E4), named by a later delivery_timeout (E6).
  std::optional<Error> last_retried_failure;
  std::vector<ActionType> actions;  ///< outputs not yet polled
  std::size_t action_read = 0;
  Config config;
  Policy policy;
  std::vector<Batch> ring;      ///< batches in seal order; capacity max_unacked_batches (R3)
  std::uint32_t head = 0;       ///< ring index of the oldest batch
  std::uint32_t size = 0;       ///< batches in the ring
  std::uint32_t send_scan = 0;  ///< batches before this index are in_flight or acked
  std::uint32_t in_flight = 0;
  std::uint32_t backoff_count = 0;
  std::uint64_t next_batch_id = 0;
  std::uint64_t send_serial = 0;        ///< counts sends; orders a resend against a gap report (S4)
  std::uint64_t completed_tickets = 0;  ///< every ticket below this has completed (P3)
  std::vector<detail::BatchBuffers> pool;
  std::size_t pool_limit = 0;
  std::deque<PendingBarrier> barriers;
  std::uint64_t next_barrier_id = 0;
  std::optional<Error> failed;                       ///< sticky terminal error (E1)
  std::optional<std::uint64_t> first_failed_ticket;  ///< for F5
  bool closing = false;
  bool closed = false;
  std::optional<tl::expected<void, Error>> close_result;
  bool capacity_wanted = false;  ///< a would_block was reported (R1)
  bool claim_pending = false;    ///< S5: one batch in flight until the claim is acked
  bool probe_pending = false;    ///< S3: one batch in flight until the epoch's first ack
  std::uint64_t claim_batch_id = 0;
  std::optional<Ack> last_completed_ack;  ///< E5 order check, when the policy has positions
  detail::SplitMix64 rng;

  // ---- helpers ------------------------------------------------------------------
  Batch& at(std::uint32_t index) {
    std::size_t slot = static_cast<std::size_t>(head) + index;
    if (slot >= ring.size()) slot -= ring.size();
    return ring[slot];
  }
  const Batch& at(std::uint32_t index) const {
    std::size_t slot = static_cast<std::size_t>(head) + index;
    if (slot >= ring.size()) slot -= ring.size();
    return ring[slot];
  }
  std::uint32_t index_of(const Batch& b) const { return static_cast<std::uint32_t>(b.id - at(0).id); }
  Batch* open_batch() { return open_; }
  const Batch* open_batch() const { return open_; }
  bool live() const { return !failed && !closed; }

  /// Time never goes backwards inside the core: a smaller `now` is read as the last one.
  Instant observe(Instant now) {
    if (now > last_now) last_now = now;
    return last_now;
  }

  void emit(ActionType action) {
    actions.push_back(std::move(action));
    ++unpolled;
  }

  static Certainty certainty_of(const Batch& b) {
    // E2, C5: a batch may have been appended iff an attempt is outstanding or some
    // attempt ended ambiguously.
    return (b.ambiguous || b.state == BatchState::in_flight) ? Certainty::indefinite : Certainty::definite;
  }

  static tl::unexpected<Rejection> reject(RejectReason reason, std::string_view detail) {
    return tl::unexpected(Rejection{reason, detail, std::nullopt});
  }
  /// The refusal of a failed producer, with its terminal error (E1); without it when even
  /// copying the error fails (D4: the guard's fallback never throws).
  tl::unexpected<Rejection> reject_failed() const noexcept {
    constexpr std::string_view what = "the producer failed with a terminal error";
    try {
      return tl::unexpected(Rejection{RejectReason::failed, what, failed});
    } catch (...) {
      return tl::unexpected(Rejection{RejectReason::failed, what, std::nullopt});
    }
  }

  // ---- buffers ------------------------------------------------------------------
  detail::BatchBuffers take_buffers() {
    if (pool.empty()) return {};
    detail::BatchBuffers b = std::move(pool.back());
    pool.pop_back();
    return b;
  }
  void give_buffers(detail::BatchBuffers& b) {
    b.body.clear();
    b.record_ends.clear();
    if (pool.size() < pool_limit && b.body.capacity() <= 2 * config.max_batch_bytes + 64) {
      pool.push_back(std::move(b));
    }
    b = {};
  }

  // ---- batch lifecycle ------------------------------------------------------------
  Batch& start_batch(Instant now) {
    // S8: the open batch holds no more records than the protocol can still number.
    max_batch_records = std::min(config.max_batch_records, policy.record_room());
    Batch& b = at(size);
    b.id = next_batch_id++;
    b.first_ticket = next_ticket;
    b.count = 0;
    b.body_bytes = policy.batch_overhead_bytes();
    b.metered_bytes = 0;
    b.first_submit = now;
    b.state = BatchState::open;
    b.attempt = 0;
    b.superseded_attempt = 0;
    b.retries = 0;
    b.ambiguous = false;
    b.sent_with_predecessors = false;
    b.parked = ParkReason::none;
    b.parked_server_epoch = 0;
    b.retry_at = Instant{};
    b.sent_serial = 0;
    b.parked_serial = 0;
    b.stamp = Stamp{};
    b.ack.reset();
    b.buffers = take_buffers();
    ++size;
    open_ = &b;
    return b;
  }

  /// B1, S1, S2: the body is completed once and the sequencing stamps are fixed.
  void seal(Batch& b) {
    if (&b == open_) open_ = nullptr;
    policy.frame_seal(b.buffers.body);
    b.stamp = policy.stamp(b.count);
    b.state = BatchState::queued;
    ++stats.batches_sealed;
    note_sendable(index_of(b));
  }

  void note_sendable(std::uint32_t index) { send_scan = std::min(send_scan, index); }

  void release(Batch& b) {
    if (&b == open_) open_ = nullptr;
    unacked_bytes -= b.metered_bytes;
    give_buffers(b.buffers);
    b.ack.reset();
    b.state = BatchState::empty;
  }

  void pop_head() {
    head = static_cast<std::uint32_t>((static_cast<std::size_t>(head) + 1) % ring.size());
    --size;
    send_scan = send_scan > 0 ? send_scan - 1 : 0;
  }

  // ---- sending (R1, S5) -------------------------------------------------------------
  /// Sends queued batches in order while in-flight slots are free. Never sends past a
  /// batch that waits (open, backoff, parked), so resends keep batch order (E4, S4).
  void pump() {
    if (!live()) return;
    const std::uint32_t limit = (claim_pending || probe_pending) ? 1U : config.max_in_flight;
    std::uint32_t i = send_scan;
    while (i < size) {
      Batch& b = at(i);
      if (b.state == BatchState::parked && i > 0 && gap_resolvable(b, at(i - 1))) {
        b.parked = ParkReason::none;  // S4: queued right behind the batch before it
        b.state = BatchState::queued;
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

  /// S4: a batch parked on a sequence gap may be resent once the batch before it was
  /// acknowledged (the server then holds every lower seq) or sent again after the gap was
  /// reported (its new attempt reaches the server first, on the same pipelined
  /// connection). Each resend of a gap-parked batch therefore follows a new send or ack
  /// of its predecessor: event-driven and bounded, never a hot loop.
  static bool gap_resolvable(const Batch& b, const Batch& before) {
    if (b.parked != ParkReason::sequence_gap) return false;
    return before.state == BatchState::acked ||
           (before.state == BatchState::in_flight && before.sent_serial > b.parked_serial);
  }

  void send(Batch& b, std::uint32_t index) {
    ++b.attempt;
    b.sent_serial = ++send_serial;
    b.state = BatchState::in_flight;
    b.sent_with_predecessors = index > 0;  // S4: an earlier batch is still unacked
    ++in_flight;
    ++stats.sends;
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

  // ---- completion in order (P3, F1–F5, C1) -----------------------------------------
  void complete_barriers() {
    while (!barriers.empty() && barriers.front().cutoff <= completed_tickets) {
      const PendingBarrier bar = barriers.front();
      barriers.pop_front();
      emit_barrier(bar.id, bar.cutoff);
    }
  }

  /// F5: a barrier fails iff a record it covers failed, and then with the sticky error.
  void emit_barrier(std::uint64_t id, std::uint64_t cutoff) {
    ++stats.barriers_completed;
    if (first_failed_ticket && cutoff > *first_failed_ticket) {
      emit(BarrierCompleted{BarrierId{id}, tl::unexpected(*failed)});
    } else {
      emit(BarrierCompleted{BarrierId{id}, {}});
    }
  }

  void complete_success(Batch& b) {
    if constexpr (Policy::kChecksOrder) {
      if (!Policy::is_duplicate(*b.ack)) last_completed_ack = *b.ack;  // a duplicate has no position (S3)
    }
    stats.records_succeeded += b.count;
    emit(TicketsCompleted<Policy>{BatchId{b.id}, Ticket{b.first_ticket}, Ticket{b.first_ticket + b.count - 1},
                                  std::move(*b.ack)});
  }

  /// Completes acknowledged batches at the head, in order, then what that unblocks.
  void advance_head() {
    bool freed = false;
    while (size > 0 && at(0).state == BatchState::acked) {
      Batch& b = at(0);
      if constexpr (Policy::kChecksOrder) {
        if (last_completed_ack) {
          if (auto why = policy.check_order(*last_completed_ack, *b.ack)) {  // E5
            b.state = BatchState::queued;
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
    if (size > 0 && at(0).state == BatchState::parked) unpark(at(0));
    if (freed && capacity_wanted) {  // R1
      capacity_wanted = false;
      emit(CapacityAvailable{});
    }
    maybe_finish_close();
  }

  void maybe_finish_close() {
    if (!closing || closed || size != 0 || !barriers.empty()) return;
    closed = true;  // C1: Closed is the last action, emitted once
    if (failed) {
      close_result = tl::expected<void, Error>(tl::unexpected(*failed));
    } else {
      close_result = tl::expected<void, Error>{};
    }
    emit(Closed{*close_result});
  }

  /// E1, C5: the first terminal error wins; acks already received are applied first;
  /// every other unresolved ticket, barrier and close fails with the same error, each
  /// ticket range marked definite or indefinite.
  void fail_terminal(Error cause, const Batch* culprit) {
    if (failed) return;
    Certainty overall = culprit != nullptr ? certainty_of(*culprit) : Certainty::definite;
    for (std::uint32_t i = 0; i < size; ++i) {
      const Batch& b = at(i);
      if (b.state != BatchState::acked && certainty_of(b) == Certainty::indefinite) {
        overall = Certainty::indefinite;
      }
    }
    cause.certainty = overall;
    failed = cause;
    refusing = true;
    while (size > 0) {
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
    maybe_finish_close();
  }

  // ---- failures: retry (E4), gap (S4), epoch claim (S5) ----------------------------
  /// Index of the oldest batch waiting for a retry (backoff_count > 0).
  std::uint32_t first_backoff() const {
    std::uint32_t i = 0;
    while (i < size && at(i).state != BatchState::backoff) ++i;
    return i;
  }

  void park(Batch& b, ParkReason why, std::uint64_t server_epoch) {
    b.state = BatchState::parked;
    b.parked = why;
    b.parked_server_epoch = server_epoch;
    b.parked_serial = send_serial;
    note_sendable(index_of(b));
  }

  /// A parked batch became the oldest: every earlier batch completed.
  void unpark(Batch& b) {
    const ParkReason why = b.parked;
    b.parked = ParkReason::none;
    if (why == ParkReason::stale_epoch) {
      claim_epoch(b.parked_server_epoch);
      return;
    }
    b.state = BatchState::queued;  // S4: the lower seqs are acknowledged; resend
    ++stats.gap_resends;
    note_sendable(0);
  }

  /// S5: claim server epoch + 1 and renumber every unacked sealed batch, in order, from
  /// seq 0. Attempts still outstanding under the old epoch are superseded; their
  /// outcomes are ignored. One batch is in flight until the claim is acknowledged.
  void claim_epoch(std::uint64_t server_epoch) {
    Batch& first = at(0);
    if (auto why = policy.claim_epoch(server_epoch)) {
      Error e = make_error(ErrorCode::stale_epoch, Certainty::definite, false, *why);
      e.server_epoch = server_epoch;
      fail_terminal(std::move(e), &first);
      return;
    }
    ++first.retries;
    ++stats.epoch_claims;
    for (std::uint32_t i = 0; i < size; ++i) {
      Batch& b = at(i);
      if (b.state == BatchState::open || b.state == BatchState::acked) continue;
      if (b.state == BatchState::in_flight) {
        --in_flight;
        b.superseded_attempt = b.attempt;
      }
      if (b.state == BatchState::backoff) --backoff_count;
      b.parked = ParkReason::none;
      b.state = BatchState::queued;
      b.stamp = policy.stamp(b.count);
    }
    claim_pending = true;
    claim_batch_id = first.id;
    send_scan = 0;
  }

  /// Finds the batch an outcome is for. Returns nullptr when the outcome is stale
  /// (ignored) or invalid (the Producer then failed with invalid_ack, E5).
  Batch* find_outcome_target(BatchId id, std::uint32_t attempt, const char* what) {
    if (id.value >= next_batch_id) {
      fail_invalid(std::string(what) + " for batch " + std::to_string(id.value) + ", which was never sent");
      return nullptr;
    }
    if (size == 0 || id.value < at(0).id) {
      ++stats.stale_outcomes;  // the batch already completed
      return nullptr;
    }
    Batch& b = at(static_cast<std::uint32_t>(id.value - at(0).id));
    if (b.attempt == 0 || attempt == 0 || attempt > b.attempt) {
      fail_invalid(std::string(what) + " for attempt " + std::to_string(attempt) + " of batch " +
                   std::to_string(id.value) + ", which was never sent");
      return nullptr;
    }
    if (attempt < b.attempt || (b.state != BatchState::in_flight && attempt == b.superseded_attempt)) {
      ++stats.stale_outcomes;  // superseded by a resend or an epoch claim
      return nullptr;
    }
    if (b.state != BatchState::in_flight) {
      fail_invalid(std::string("second ") + what + " for attempt " + std::to_string(attempt) + " of batch " +
                   std::to_string(id.value));
      return nullptr;
    }
    return &b;
  }

  void fail_invalid(std::string message) {
    fail_terminal(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false, std::move(message)), nullptr);
  }

  void on_failure(Instant now, Batch& b, Error e) {
    --in_flight;
    b.state = BatchState::queued;  // not in flight any more; the cases below decide
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
      ++stats.retries;
      last_retried_failure = e;
      if (detail::retries_at_once(b.retries, e)) {  // a lost connection: at once, on a new connection
        note_sendable(index);
        return;
      }
      b.retry_at = saturating_add(now, detail::backoff_delay(config.retry, b.retries, e, rng));
      b.state = BatchState::backoff;
      ++backoff_count;
      note_sendable(index);
      return;
    }
    if (e.retryable && safe && !budget_left) {
      e.message +=
          (e.message.empty() ? "" : "; ") + std::string("gave up after ") + std::to_string(b.attempt) + " attempts";
    }
    fail_terminal(std::move(e), &b);
  }

  // ---- inputs -----------------------------------------------------------------------
  tl::expected<Ticket, Rejection> submit(Instant now, std::span<const std::byte> record) {
    auto result = accept(now, record);
    if (!result) ++stats.records_rejected;
    return result;
  }

  static std::span<const std::byte> record_bytes(std::span<const std::byte> record) { return record; }
  static std::span<const std::byte> record_bytes(std::string_view record) {
    return std::as_bytes(std::span<const char>(record.data(), record.size()));
  }

  /// submit() for each record in turn, stopping at the first refusal. `out` is exact
  /// even when an allocation throws half-way (D4): the caller then fails the Producer.
  template <class Record>
  void submit_many(Instant now, std::span<const Record> records, SubmitManyResult& out) {
    out.first = Ticket{next_ticket};
    if (records.empty()) return;  // like no submit at all: not even `now` is observed
    now = observe(now);
    const std::size_t n = records.size();
    std::size_t i = 0;
    while (i < n) {
      if (open_ != nullptr && !refusing) [[likely]] {
        i = fill_open_batch(records, i, out);
        if (i == n) break;
      }
      auto result = accept_slow(now, record_bytes(records[i]));
      if (!result) {
        ++stats.records_rejected;
        out.refused = std::move(result.error());
        return;
      }
      out.accepted = ++i;
    }
  }

  /// The fast path of accept() as a loop: appends records [i, n) to the partial batch
  /// while each fits below its limits and within capacity, and returns the index of the
  /// first record that did not. Counters live in registers and are written back once
  /// (also when framing throws), which is what makes many small records cheap.
  template <class Record>
  std::size_t fill_open_batch(std::span<const Record> records, std::size_t i, SubmitManyResult& out) {
    Batch& target = *open_;
    struct WriteBack {
      Impl& self;
      Batch& target;
      SubmitManyResult& out;
      std::size_t& i;
      std::uint32_t count;
      std::uint64_t body_bytes;
      std::uint64_t metered = 0;
      ~WriteBack() {
        const std::uint32_t added = count - target.count;
        target.count = count;
        target.body_bytes = body_bytes;
        target.metered_bytes += metered;
        self.unacked_bytes += metered;
        self.next_ticket += added;
        self.stats.records_accepted += added;
        self.stats.metered_bytes_accepted += metered;
        out.accepted = i;
      }
    } w{*this, target, out, i, target.count, target.body_bytes};
    const std::uint32_t max_records = max_batch_records;
    const std::uint64_t max_bytes = max_batch_bytes - policy.min_record_bytes();  // >= 0: B2 validation
    const std::uint64_t room = unacked_bytes < max_unacked_bytes ? max_unacked_bytes - unacked_bytes : 0;  // R1
    auto& body = target.buffers.body;
    const std::size_t n = records.size();
    for (; i < n; ++i) {
      const auto record = record_bytes(records[i]);
      const std::uint64_t meter = policy.metered_bytes(record.size());
      if (w.count + 1 >= max_records || w.body_bytes + meter > max_bytes || w.metered + meter > room ||
          policy.check_record(record)) {
        break;
      }
      policy.frame_record(body, record, w.count);
      if constexpr (Policy::kKeepsRecordEnds) {
        target.buffers.record_ends.push_back(static_cast<std::uint32_t>(body.size()));
      }
      ++w.count;
      w.body_bytes += meter;
      w.metered += meter;
    }
    return i;
  }

  /// The common case alone, for Producer::submit's inline part: the record joins the
  /// partial batch (ticket returned), or nothing changes (kNoTicket).
  std::uint64_t accept_fast(Instant now, std::span<const std::byte> record) {
    observe(now);
    Batch* target = open_;
    if (target != nullptr && !refusing) [[likely]] {
      const std::uint64_t meter = policy.metered_bytes(record.size());
      if (target->count + 1 < max_batch_records &&
          target->body_bytes + meter + policy.min_record_bytes() <= max_batch_bytes &&
          unacked_bytes + meter <= max_unacked_bytes && !policy.check_record(record)) {
        append(*target, record, meter);
        return next_ticket++;
      }
    }
    return kNoTicket;
  }

  /// The common case, kept small so it inlines: the record joins the partial batch,
  /// which stays below its limits and within capacity.
  tl::expected<Ticket, Rejection> accept(Instant now, std::span<const std::byte> record) {
    now = observe(now);
    Batch* target = open_;
    if (target != nullptr && !refusing) [[likely]] {
      const std::uint64_t meter = policy.metered_bytes(record.size());
      if (target->count + 1 < max_batch_records &&
          target->body_bytes + meter + policy.min_record_bytes() <= max_batch_bytes &&
          unacked_bytes + meter <= max_unacked_bytes && !policy.check_record(record)) {
        append(*target, record, meter);
        return Ticket{next_ticket++};
      }
    }
    return accept_slow(now, record);
  }

  void append(Batch& target, std::span<const std::byte> record, std::uint64_t meter) {
    policy.frame_record(target.buffers.body, record, target.count);
    if constexpr (Policy::kKeepsRecordEnds) {
      target.buffers.record_ends.push_back(static_cast<std::uint32_t>(target.buffers.body.size()));
    }
    ++target.count;
    target.body_bytes += meter;
    target.metered_bytes += meter;
    unacked_bytes += meter;
    ++stats.records_accepted;
    stats.metered_bytes_accepted += meter;
  }

  /// Every other case: refusals, a new batch, a batch that becomes full.
  [[gnu::noinline]] tl::expected<Ticket, Rejection> accept_slow(Instant now, std::span<const std::byte> record) {
    if (closing || closed) return reject(RejectReason::closed, "the producer is closed");  // C2
    if (failed) return reject_failed();                                                    // E1
    if (auto why = policy.check_record(record)) return reject(RejectReason::invalid_record, *why);
    const std::uint64_t meter = policy.metered_bytes(record.size());
    if (meter + policy.batch_overhead_bytes() > config.max_batch_bytes) {  // B4
      return reject(RejectReason::record_too_large, "record exceeds max_batch_bytes");
    }
    Batch* target = open_;
    const bool fits =
        target != nullptr && target->count < max_batch_records && target->body_bytes + meter <= config.max_batch_bytes;
    const bool bytes_full = unacked_bytes + meter > config.max_unacked_bytes;
    const bool batches_full = !fits && size == ring.size();
    if (bytes_full || batches_full) {  // R1
      if (target != nullptr) {         // R2: linger never holds capacity hostage
        seal(*target);
        pump();
      }
      capacity_wanted = true;
      ++stats.would_blocks;
      return reject(RejectReason::would_block,
                    bytes_full ? "max_unacked_bytes reached" : "max_unacked_batches reached");
    }
    bool sealed = false;
    if (!fits) {  // B1: the record that would overflow starts the next batch
      // S8: no batch could be numbered after the open one: refused, the open batch left as it is.
      if (policy.record_room(target != nullptr ? target->count : 0) == 0) {
        return reject(RejectReason::sequence_exhausted, Policy::kExhausted);
      }
      if (target != nullptr) {
        seal(*target);
        sealed = true;
      }
      target = &start_batch(now);
    }
    append(*target, record, meter);
    const Ticket ticket{next_ticket++};
    if (target->count == max_batch_records ||  // B1: full (S8: or at the protocol's limit)
        target->body_bytes + policy.min_record_bytes() > config.max_batch_bytes) {
      seal(*target);
      sealed = true;
    }
    if (sealed) pump();
    return ticket;
  }

  tl::expected<BarrierId, Rejection> flush(Instant now) {
    observe(now);
    if (closing || closed) return reject(RejectReason::closed, "the producer is closed");  // C2
    if (failed) return reject_failed();                                                    // E1
    if (barriers.size() >= config.max_pending_barriers) {                                  // R3
      capacity_wanted = true;
      ++stats.would_blocks;
      return reject(RejectReason::would_block, "max_pending_barriers reached");
    }
    if (Batch* open = open_batch()) seal(*open);  // F1: no linger wait; B5: no batch spans it
    const std::uint64_t id = next_barrier_id++;
    const std::uint64_t cutoff = next_ticket;  // P1: covers everything submitted before it
    if (cutoff <= completed_tickets) {
      emit_barrier(id, cutoff);  // F3: nothing before it; sends nothing
    } else {
      barriers.push_back(PendingBarrier{id, cutoff});
    }
    pump();
    return BarrierId{id};
  }

  std::optional<tl::expected<void, Error>> close(Instant now) {
    observe(now);
    if (closed) return close_result;  // C1: a second close returns the same result
    if (closing) return std::nullopt;
    closing = true;
    refusing = true;
    if (!failed) {
      if (Batch* open = open_batch()) seal(*open);
      pump();
    }
    maybe_finish_close();
    return std::nullopt;
  }

  void abort(Instant now) {
    observe(now);
    if (closed) return;
    if (!failed) {
      fail_terminal(make_error(ErrorCode::aborted, Certainty::definite, false,
                               "the producer was aborted before its records completed"),
                    nullptr);
    }
    closing = true;
    refusing = true;
    maybe_finish_close();
  }

  void handle_ack(Instant now, BatchId id, std::uint32_t attempt, Ack ack) {
    observe(now);
    if (!live()) {
      ++stats.stale_outcomes;
      return;
    }
    Batch* b = find_outcome_target(id, attempt, "ack");
    if (b == nullptr) return;
    if (auto why = policy.check_ack(b->stamp, b->count, ack)) {  // E5
      --in_flight;
      b->state = BatchState::queued;
      b->ambiguous = true;
      fail_terminal(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false,
                               "batch " + std::to_string(b->id) + ": " + *why),
                    b);
      return;
    }
    --in_flight;
    b->state = BatchState::acked;
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
          b->state = BatchState::queued;
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

  void handle_failure(Instant now, BatchId id, std::uint32_t attempt, Error failure) {
    now = observe(now);
    if (!live()) {
      ++stats.stale_outcomes;
      return;
    }
    Batch* b = find_outcome_target(id, attempt, "failure");
    if (b == nullptr) return;
    on_failure(now, *b, std::move(failure));
    pump();
  }

  void handle_timeout(Instant now) {
    now = observe(now);
    if (!live()) return;
    if (size > 0) {  // E6: the oldest batch has the earliest delivery deadline
      Batch& oldest = at(0);
      if (now >= saturating_add(oldest.first_submit, config.delivery_timeout_ns)) {
        std::string why = "record not acknowledged within delivery_timeout_ns";
        if (last_retried_failure) why += "; the last failure retried: " + last_retried_failure->describe();
        fail_terminal(make_error(ErrorCode::delivery_timeout, Certainty::definite, false, std::move(why)), &oldest);
        return;
      }
    }
    if (Batch* open = open_batch(); open != nullptr && !config.linger.is_disabled() &&
                                    now >= saturating_add(open->first_submit, config.linger.duration_ns())) {
      seal(*open);  // B1: linger elapsed since the first record
    }
    if (backoff_count > 0) {  // E4: backoff over
      // Batches that failed together go back out together, in order: the oldest batch
      // waiting for a retry gates every later one (none can be sent before it), so when
      // its backoff is over they are all released with it, instead of each on its own
      // jittered timer.
      const std::uint32_t first = first_backoff();
      if (now >= at(first).retry_at) {
        for (std::uint32_t i = first; i < size; ++i) {
          Batch& b = at(i);
          if (b.state != BatchState::backoff) continue;
          b.state = BatchState::queued;
          --backoff_count;
          note_sendable(i);
        }
      }
    }
    pump();
  }

  std::optional<Instant> next_deadline() const {
    if (!live()) return std::nullopt;
    Instant when = kInstantMax;
    if (size > 0) {
      when = std::min(when, saturating_add(at(0).first_submit, config.delivery_timeout_ns));
    }
    if (const Batch* open = open_batch(); open != nullptr && !config.linger.is_disabled()) {
      when = std::min(when, saturating_add(open->first_submit, config.linger.duration_ns()));
    }
    if (backoff_count > 0) when = std::min(when, at(first_backoff()).retry_at);  // E4: the gating one
    if (when == kInstantMax) return std::nullopt;
    return when;
  }

  std::optional<ActionType> poll_action() {
    if (action_read >= actions.size()) return std::nullopt;
    std::optional<ActionType> out{std::move(actions[action_read])};
    ++action_read;
    --unpolled;
    if (action_read == actions.size()) {
      actions.clear();
      action_read = 0;
    }
    return out;
  }

  /// Checks every invariant after an input (invariants.hpp) when the build defines
  /// PRODSM_CHECK_INVARIANTS; nothing otherwise.
  void check_invariants() const noexcept {
#ifdef PRODSM_CHECK_INVARIANTS
    detail::check_producer_invariants(*this);
#endif
  }

  /// D4: an exception inside the core (only std::bad_alloc can occur) becomes the
  /// terminal error `internal`; nothing propagates to the caller.
  void on_internal_error() noexcept {
    try {
      fail_terminal(
          make_error(ErrorCode::internal, Certainty::indefinite, false, "allocation failed inside the producer"),
          nullptr);
    } catch (...) {
      if (!failed) failed.emplace();
      refusing = true;
      size = 0;
      in_flight = 0;
      open_ = nullptr;
    }
  }
};

}  // namespace prodsm

#include "prodsm/detail/producer_api.hpp"
