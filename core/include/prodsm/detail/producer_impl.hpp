// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_impl.hpp
/// Producer<Policy>::Impl: the core's state and its member declarations. Every state
/// change goes through two functions here, move_to (a batch, against the table in
/// batch.hpp) and set_lifecycle (the producer, against lifecycle.hpp), h11 style. The
/// members are defined one job per file, included at the end: producer_batches.hpp
/// (a batch's life, sending), producer_completion.hpp (P3, F, E1, C), producer_outcomes.hpp
/// (acks and failures: E4, E5, S3–S5), producer_submit.hpp (submit, flush),
/// producer_timers.hpp (E6, B1, E4 deadlines). The data structures are in batch_ring.hpp
/// and buffer_pool.hpp, the configuration checks in config_validation.hpp, the invariants
/// in invariants.hpp, and the public members forward through one guard (producer_api.hpp).
/// grep a clause ID to find where it is implemented. Included by the .cpp files that
/// instantiate Producer for the shipped policies, and by users who write a policy of
/// their own.

#include <algorithm>
#include <cstring>
#include <deque>
#include <new>
#include <utility>

#include "prodsm/detail/backoff.hpp"
#include "prodsm/detail/batch.hpp"
#include "prodsm/detail/batch_ring.hpp"
#include "prodsm/detail/buffer_pool.hpp"
#include "prodsm/detail/invariants.hpp"
#include "prodsm/detail/lifecycle.hpp"
#include "prodsm/producer.hpp"
#include "prodsm/producer_policy.hpp"

namespace prodsm {

template <class Policy>
struct alignas(64) Producer<Policy>::Impl {
  static_assert(ProducerPolicy<Policy>,
                "Producer<Policy>: Policy must satisfy prodsm::ProducerPolicy (producer_policy.hpp)");
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
        pool(static_cast<std::size_t>(config.max_in_flight) + 2, 2 * config.max_batch_bytes + 64),
        rng{config.retry.jitter_seed} {
    probe_pending = policy.fails_first_attempt_duplicates();
    actions.reserve(static_cast<std::size_t>(config.max_in_flight) * 2 + 16);
  }

  // ---- state --------------------------------------------------------------------
  // Hot fields first, in one cache line: a submit that joins the partial batch reads
  // only these, the stats line after them, the policy and the batch.
  std::size_t unpolled = 0;  ///< actions.size() - action_read; read inline by Producer::poll_action
  Batch* open_ = nullptr;    ///< the partial batch (always the newest), if any
  std::uint64_t next_ticket = 0;
  std::uint64_t unacked_bytes = 0;  ///< R1
  LatestInstant last_now{};
  std::uint64_t max_batch_bytes;    ///< config.max_batch_bytes, kept here for the fast path
  std::uint64_t max_unacked_bytes;  ///< config.max_unacked_bytes, likewise
  std::uint32_t max_batch_records;  ///< the open batch's record cap: config.max_batch_records, or less
                                    ///< near the protocol's sequence limit (S8)
  /// open, closing, failed, closed: changed by set_lifecycle only (lifecycle.hpp). Any
  /// but open refuses submits, so the fast path tests it first.
  ProducerState lifecycle = ProducerState::open;
  ProducerStats stats;
  /// The last failure that was retried (E4), named by a later delivery_timeout (E6).
  std::optional<Error> last_retried_failure;
  std::uint64_t last_retried_batch = 0;  ///< the batch it failed
  bool last_retry_sent = false;          ///< its resend went out (E6 says "retried" only then)
  std::vector<ActionType> actions;       ///< outputs not yet polled
  std::size_t action_read = 0;
  Config config;
  Policy policy;
  detail::BatchRing<Batch> ring;  ///< batches in seal order; capacity max_unacked_batches (R3)
  detail::BufferPool pool;        ///< released batches' buffers, for the next ones
  std::uint32_t send_scan = 0;    ///< batches before this index are in_flight or acked
  std::uint32_t in_flight = 0;
  std::uint32_t backoff_count = 0;
  std::uint64_t next_batch_id = 0;
  std::uint64_t send_serial = 0;  ///< counts sends; orders a resend against a gap report (S4)
  /// SendBatch actions polled: the sends with serials 1..this were handed to the driver
  /// (they are emitted and polled in serial order). An outcome for a later one is for an
  /// attempt never sent (E5).
  std::uint64_t sends_handed_out = 0;
  std::uint64_t completed_tickets = 0;  ///< every ticket below this has completed (P3)
  std::deque<PendingBarrier> barriers;
  std::uint64_t next_barrier_id = 0;
  std::optional<Error> failed;                       ///< the sticky terminal error (E1), once lifecycle left for failed
  std::optional<std::uint64_t> first_failed_ticket;  ///< for F5
  std::optional<tl::expected<void, Error>> close_result;
  bool capacity_wanted = false;  ///< a would_block was reported (R1)
  bool claim_pending = false;    ///< S5: one batch in flight until the claim is acked
  bool probe_pending = false;    ///< S3: one batch in flight until the epoch's first ack
  std::uint64_t claim_batch_id = 0;
  std::optional<Ack> last_completed_ack;  ///< E5 order check, when the policy has positions
  detail::SplitMix64 rng;

  // ---- helpers ------------------------------------------------------------------
  Batch& at(std::uint32_t index) { return ring.slot(index); }
  const Batch& at(std::uint32_t index) const { return ring.slot(index); }
  std::uint32_t index_of(const Batch& b) const { return static_cast<std::uint32_t>(b.id - at(0).id); }
  Batch* open_batch() { return open_; }
  const Batch* open_batch() const { return open_; }
  /// Open or closing: outcomes and timers still matter.
  bool live() const { return detail::is_live(lifecycle); }

  /// Time never goes backwards inside the core: a smaller `now` is read as the last one.
  Instant observe(Instant now) { return last_now.observe(now); }

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

  // ---- the two transition functions ------------------------------------------------
  /// Every change of a batch's state: checked against batch_edge_allowed (batch.hpp) in
  /// builds with PRODSM_CHECK_INVARIANTS.
  static void move_to(Batch& b, BatchState to) noexcept {
#ifdef PRODSM_CHECK_INVARIANTS
    if (!detail::batch_edge_allowed(b.state, to)) detail::invariant_failed("batch: a state change not in the table");
#endif
    b.state = to;
  }

  /// Every change of the producer's lifecycle: checked against lifecycle_edge_allowed
  /// (lifecycle.hpp) in builds with PRODSM_CHECK_INVARIANTS.
  void set_lifecycle(ProducerState to) noexcept {
#ifdef PRODSM_CHECK_INVARIANTS
    if (!detail::lifecycle_edge_allowed(lifecycle, to)) {
      detail::invariant_failed("lifecycle: a state change not in the table");
    }
#endif
    lifecycle = to;
  }

  // ---- batch lifecycle ------------------------------------------------------------
  Batch& start_batch(Instant now);

  /// B1, S1, S2: the body is completed once and the sequencing stamps are fixed.
  void seal(Batch& b);

  /// The send scan restarts at `index` at the latest (a batch there became sendable).
  void note_sendable(std::uint32_t index);

  /// Frees a batch that completed or failed: its bytes leave R1, its buffers go back to the pool.
  void release(Batch& b);

  /// Removes the oldest batch (already released) from the ring.
  void pop_head();

  // ---- sending (R1, S5) -------------------------------------------------------------
  /// Sends queued batches in order while in-flight slots are free. Never sends past a
  /// batch that waits (open, backoff, parked), so resends keep batch order (E4, S4).
  void pump();

  /// S4: a batch parked on a sequence gap may be resent once the batch before it was
  /// acknowledged (the server then holds every lower seq) or sent again after the gap was
  /// reported (its new attempt reaches the server first, on the same pipelined
  /// connection). Each resend of a gap-parked batch therefore follows a new send or ack
  /// of its predecessor: event-driven and bounded, never a hot loop.
  static bool gap_resolvable(const Batch& b, const Batch& before);

  /// Emits the next attempt of `b`, at ring index `index`, as a SendBatch (S1, S2 stamps).
  void send(Batch& b, std::uint32_t index);

  // ---- completion in order (P3, F1–F5, C1) -----------------------------------------
  /// Completes every pending barrier whose records all completed (F1, F2), in order (P3).
  void complete_barriers();

  /// F5: a barrier fails iff a record it covers failed, and then with the sticky error.
  void emit_barrier(std::uint64_t id, std::uint64_t cutoff);

  /// Emits the success of an acknowledged batch at the head (P3, P4).
  void complete_success(Batch& b);

  /// Completes acknowledged batches at the head, in order, then what that unblocks.
  void advance_head();

  /// C1: a closing producer closes once its last batch and barrier completed.
  void maybe_finish_close();

  /// C1: Closed is the last action, emitted once, with the terminal error if any (E1).
  void finish_close();

  /// E1, C5: the first terminal error wins; acks already received are applied first;
  /// every other unresolved ticket, barrier and close fails with the same error, each
  /// ticket range marked definite or indefinite.
  void fail_terminal(Error cause, const Batch* culprit);

  // ---- failures: retry (E4), gap (S4), epoch claim (S5) ----------------------------
  /// Index of the oldest batch waiting for a retry (backoff_count > 0).
  std::uint32_t first_backoff() const;

  /// Holds a failed batch until the batches before it resolve (S4 gap, S5 stale epoch).
  void park(Batch& b, ParkReason why, std::uint64_t server_epoch);

  /// A parked batch became the oldest: every earlier batch completed.
  void unpark(Batch& b);

  /// S5: claim server epoch + 1 and renumber every unacked sealed batch, in order, from
  /// seq 0. Attempts still outstanding under the old epoch are superseded; their
  /// outcomes are ignored. One batch is in flight until the claim is acknowledged.
  void claim_epoch(std::uint64_t server_epoch);

  /// Finds the batch an outcome is for. Returns nullptr when the outcome is stale
  /// (ignored) or invalid (the Producer then failed with invalid_ack, E5).
  /// `may_have_applied`: the outcome says the attempt may be in the stream (an ack, an
  /// indefinite failure); a second outcome for one attempt that says so leaves its
  /// batch's records indefinite (E2, C5), whatever the first one said.
  Batch* find_outcome_target(BatchId id, std::uint32_t attempt, const char* what, bool may_have_applied);

  /// The producer fails with invalid_ack (E5): an outcome for something never sent.
  void fail_invalid(std::string message);

  /// An attempt of `b` failed with `e`: resend, park, back off or fail (E4, S4, S5).
  void on_failure(Instant now, Batch& b, Error e);

  // ---- inputs -----------------------------------------------------------------------
  /// Producer::submit: accept() plus the refusal counter.
  tl::expected<Ticket, Rejection> submit(Instant now, std::span<const std::byte> record);

  static std::span<const std::byte> record_bytes(std::span<const std::byte> record) {
    return record;
  }
  static std::span<const std::byte> record_bytes(std::string_view record) {
    return std::as_bytes(std::span<const char>(record.data(), record.size()));
  }

  /// submit() for each record in turn, stopping at the first refusal. `out` is exact
  /// even when an allocation throws half-way (D4): the caller then fails the Producer.
  template <class Record>
  void submit_many(Instant now, std::span<const Record> records, SubmitManyResult& out);

  /// The fast path of accept() as a loop: appends records [i, n) to the partial batch
  /// while each fits below its limits and within capacity, and returns the index of the
  /// first record that did not. Counters live in registers and are written back once
  /// (also when framing throws), which is what makes many small records cheap.
  template <class Record>
  std::size_t fill_open_batch(std::span<const Record> records, std::size_t i, SubmitManyResult& out);

  /// The common case alone, for Producer::submit's inline part: the record joins the
  /// partial batch (ticket returned), or nothing changes (kNoTicket).
  std::uint64_t accept_fast(Instant now, std::span<const std::byte> record);

  /// accept_fast, else accept_slow: the common case stays small so it inlines.
  tl::expected<Ticket, Rejection> accept(Instant now, std::span<const std::byte> record);

  /// Frames `record` into `target` and counts its `meter` metered bytes (R1).
  void append(Batch& target, std::span<const std::byte> record, std::uint64_t meter);

  /// Every other case: refusals, a new batch, a batch that becomes full.
  [[gnu::noinline]] tl::expected<Ticket, Rejection> accept_slow(Instant now, std::span<const std::byte> record);

  /// Producer::flush: seals the open batch and adds a barrier over every ticket so far (F1–F3, R3).
  tl::expected<BarrierId, Rejection> flush(Instant now);

  /// Producer::close: seals, drains, then Closed (C1, C2); the result once closed.
  std::optional<tl::expected<void, Error>> close(Instant now);

  /// Producer::seal_partial_batch: the open batch sealed and pumped (R2), nothing else.
  void seal_partial_batch(Instant now);

  /// Producer::abort: every unresolved ticket and barrier fails `aborted`, then Closed (C5, C1).
  void abort(Instant now);

  /// An attempt was acknowledged (E5 checks, S3 duplicates), then completion in order (P3).
  void handle_ack(Instant now, BatchId id, std::uint32_t attempt, Ack ack);

  /// An attempt failed (E2 certainty as reported): on_failure, then the send scan.
  void handle_failure(Instant now, BatchId id, std::uint32_t attempt, Error failure);

  /// The timers (quinn style): each kind's expiry follows from the state, deadline_of
  /// computes it in one place, next_deadline() is their minimum and handle_timeout(now)
  /// acts on exactly the expired ones, so no timer fires early (D3).
  enum class Timer : std::uint8_t {
    delivery,  ///< E6: the oldest batch's first record, plus delivery_timeout_ns
    linger,    ///< B1: the open batch's first record, plus the linger
    backoff,   ///< E4: the oldest batch waiting for a retry, at its retry_at
  };
  static constexpr Timer kTimers[] = {Timer::delivery, Timer::linger, Timer::backoff};

  /// When `timer` expires; nullopt while it is not armed.
  std::optional<Instant> deadline_of(Timer timer) const;

  /// Whether `timer` is armed and its deadline is at or before `now`.
  bool expired(Timer timer, Instant now) const;

  /// Acts on every expired timer: delivery first (terminal), then linger, then backoff.
  void handle_timeout(Instant now);

  /// E4: the backoff is over. Batches that failed together go back out together, in
  /// order: the oldest batch waiting for a retry gates every later one (none can be sent
  /// before it), so when its backoff is over they are all released with it, instead of
  /// each on its own jittered timer.
  void end_backoff();

  /// The earliest armed timer; nullopt when none is armed or the producer is not live.
  std::optional<Instant> next_deadline() const;

  std::optional<ActionType> poll_action() {
    if (action_read >= actions.size()) return std::nullopt;
    std::optional<ActionType> out{std::move(actions[action_read])};
    if (std::holds_alternative<SendBatch<Policy>>(*out)) ++sends_handed_out;  // E5
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
      lifecycle = ProducerState::failed;  // poisoned on purpose: no edge check (invariants.hpp)
      ring.abandon();
      in_flight = 0;
      open_ = nullptr;
    }
  }
};

}  // namespace prodsm

// The member definitions, one job per file, then the public members' forwarding.
#include "prodsm/detail/producer_api.hpp"
#include "prodsm/detail/producer_batches.hpp"
#include "prodsm/detail/producer_completion.hpp"
#include "prodsm/detail/producer_outcomes.hpp"
#include "prodsm/detail/producer_submit.hpp"
#include "prodsm/detail/producer_timers.hpp"
