// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer.hpp
/// The sans-IO Producer state machine (the contract's clauses P, B, F, C, E, R, S, D:
/// docs/contract.md).
///
/// A pure, deterministic object. Inputs carry `now`; outputs are polled:
///  - inputs:  submit, submit_many, flush, close, abort, handle_ack, handle_failure,
///             handle_timeout
///  - outputs: poll_action() (SendBatch, TicketsCompleted, BarrierCompleted, Closed,
///             CapacityAvailable) and next_deadline()
/// Drive rule: after every input, drain poll_action() until it returns nullopt, then
/// arm one timer at next_deadline() and call handle_timeout when it fires.
/// It performs no I/O, reads no clock, starts no thread, takes no lock and calls no
/// user code (D1); equal inputs give equal outputs (D2); no exception escapes (D4).
/// Not thread-safe: one driver owns it.
///
/// `Policy` supplies what differs per wire protocol (DurableStreamsPolicy, S2Policy):
/// record metering, body framing, sequencing stamps, ack validation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/action.hpp"
#include "prodsm/config.hpp"
#include "prodsm/error.hpp"
#include "prodsm/ids.hpp"
#include "prodsm/time.hpp"

namespace prodsm {

/// Why a submit or flush was refused synchronously (A4: a refused submit gets no
/// ticket and no completion, P2).
enum class RejectReason : std::uint8_t {
  closed,              ///< close() or abort() was called (C2)
  failed,              ///< the Producer failed; `terminal` holds the sticky error (E1)
  record_too_large,    ///< the record's metered size plus the batch's framing exceeds
                       ///< max_batch_bytes (B4: S2 meters 8 bytes more per record, a JSON
                       ///< batch adds its brackets)
  invalid_record,      ///< the protocol cannot carry the record (empty, invalid JSON)
  would_block,         ///< max_unacked_bytes / max_unacked_batches / max_pending_barriers
                       ///< reached; wait for CapacityAvailable (R1)
  sequence_exhausted,  ///< the record would start a batch the protocol cannot number (S8): the
                       ///< Durable Streams Producer-Seq or S2 match_seq_num space is used up. Every
                       ///< record accepted before completes as usual; nothing more fits this epoch.
};

/// "closed", "failed", "record_too_large", "invalid_record", "would_block", "sequence_exhausted".
std::string_view to_string(RejectReason reason) noexcept;

/// A synchronous refusal.
struct Rejection {
  RejectReason reason = RejectReason::closed;  ///< why the submit or flush was refused
  /// Static text naming what was wrong, e.g. "record exceeds max_batch_bytes".
  std::string_view detail;
  /// The sticky terminal error when reason == failed.
  std::optional<Error> terminal;
  /// One line for people: to_error(*this).describe(), e.g.
  /// "invalid_record (definite): record exceeds max_batch_bytes".
  [[nodiscard]] std::string describe() const;
};

/// The refusal as the error an adapter completes the refused operation with (A4): the
/// sticky terminal error for `failed` (E1); otherwise a local, definite, non-retryable
/// error with `detail` as its message: closed -> closed (C2), would_block ->
/// would_block (R1), record_too_large and invalid_record -> invalid_record (B4, B5),
/// sequence_exhausted -> sequence_exhausted (S8).
Error to_error(const Rejection& rejection);

inline std::string Rejection::describe() const {
  return to_error(*this).describe();
}

/// What Producer::submit_many did with a list of records (P1, P2).
///
/// Records [0, accepted) of the list were accepted, with the contiguous tickets
/// first, first + 1, ..., first + accepted - 1, in list order. When accepted is less
/// than the list's size, `refused` says why the record at index `accepted` was refused
/// and the records after it were not submitted (they got no ticket and will get no
/// completion; submit them again, e.g. after CapacityAvailable for would_block).
struct SubmitManyResult {
  Ticket first;                      ///< the first accepted record's ticket (the next ticket when none was accepted)
  std::size_t accepted = 0;          ///< how many records, a prefix of the list, were accepted
  std::optional<Rejection> refused;  ///< why record `accepted` was refused; nullopt when all were accepted
};

/// Lifecycle of a Producer.
enum class ProducerState : std::uint8_t {
  open,     ///< accepting submits and flushes
  closing,  ///< close() called; draining
  failed,   ///< a terminal error happened; close() or abort() still emits Closed
  closed,   ///< Closed was emitted; nothing more will happen
};

/// Counters since construction (monotonic, never reset).
struct ProducerStats {
  std::uint64_t records_accepted = 0;        ///< submits that got a ticket
  std::uint64_t records_rejected = 0;        ///< submits refused synchronously
  std::uint64_t metered_bytes_accepted = 0;  ///< bytes of accepted records as the policy meters them
                                             ///< (R1; JSON mode counts one framing byte per record)
  std::uint64_t records_succeeded = 0;       ///< tickets completed successfully
  std::uint64_t records_failed = 0;          ///< tickets completed with an error
  std::uint64_t batches_sealed = 0;          ///< batches closed to new records (B1, F1, R2, C1)
  std::uint64_t batches_acked = 0;           ///< batches completed successfully (duplicates included)
  std::uint64_t duplicates = 0;              ///< batches acknowledged as duplicates (S3)
  std::uint64_t duplicate_records = 0;       ///< records in those batches
  /// Records in batches reported duplicate on their first attempt (S3): the server held
  /// those seqs from an earlier session with the same producer id and epoch, so these
  /// records were not appended. Expected when a run resumes; a warning sign otherwise.
  std::uint64_t first_attempt_duplicate_records = 0;
  std::uint64_t sends = 0;  ///< SendBatch actions, first attempts included
  /// Resends after a retryable failure (E4), counted as `sends` is: when the resend's
  /// SendBatch is emitted. A retry a terminal error overtook (the delivery timeout, E6,
  /// before a long Retry-After) never went out and is not counted here.
  std::uint64_t retries = 0;
  /// Retryable failures the producer decided to resend (E4), counted at the failure,
  /// whether or not the resend went out before a terminal error.
  std::uint64_t retries_scheduled = 0;
  std::uint64_t gap_resends = 0;         ///< resends after a sequence gap (S4)
  std::uint64_t epoch_claims = 0;        ///< auto-claims (S5)
  std::uint64_t would_blocks = 0;        ///< refusals with would_block (R1)
  std::uint64_t stale_outcomes = 0;      ///< outcomes for superseded attempts or completed
                                         ///< batches, ignored
  std::uint64_t barriers_accepted = 0;   ///< flushes that got a barrier (F1; a refused flush is not counted)
  std::uint64_t barriers_completed = 0;  ///< BarrierCompleted actions emitted (F1–F5)
};

/// The Producer state machine for one stream. Movable, not copyable.
template <class Policy>
class Producer {
 public:
  using Config = ProducerConfig<Policy>;  ///< validated by create() (B3)
  using Stamp = typename Policy::Stamp;   ///< sequencing stamps of a SendBatch (S1, S2)
  using Ack = typename Policy::Ack;       ///< what the transport reports for an appended batch
  using ActionType = Action<Policy>;      ///< one output of poll_action()

  /// Checks every field (B2, B3, R1, R3, E6) and the protocol options; the first
  /// invalid field is reported by name. Nothing is clamped.
  [[nodiscard]] static std::optional<ConfigError> validate(const Config& config);

  /// Validates `config` and builds a Producer, or returns the ConfigError.
  [[nodiscard]] static tl::expected<Producer, ConfigError> create(Config config);

  /// Moves the whole state; the moved-from Producer may only be destroyed or assigned.
  Producer(Producer&&) noexcept;
  /// Replaces this state with `other`'s (no action of the replaced one is emitted).
  Producer& operator=(Producer&&) noexcept;
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  /// Frees the state; emits nothing (the caller closes or aborts first, C5).
  ~Producer();

  /// Accepts one record (bytes copied; the caller keeps nothing alive) and returns its
  /// ticket, or refuses it (P1, P2, B1, B4, R1, R2, C2, E1). The ticket completes
  /// exactly once through a TicketsCompleted action.
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(Instant now, std::span<const std::byte> record) {
    // The common case returns a plain ticket number from out of line; only a record that
    // does not simply join the partial batch builds the full result there.
    const std::uint64_t ticket = submit_fast(now, record);
    if (ticket != kNoTicket) [[likely]] {
      return Ticket{ticket};
    }
    return submit_slow(now, record);
  }
  /// Same, for text records.
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(Instant now, std::string_view record) {
    return submit(now, std::as_bytes(std::span<const char>(record.data(), record.size())));
  }

  /// Submits many records in one call, exactly as if submit(now, record) had been
  /// called for each in list order, stopping at the first refusal: the same tickets,
  /// batches, actions and stats (P1, P2, B1, B4, R1, R2, C2, E1). Bytes are copied;
  /// the caller keeps nothing alive. One call amortises the per-call work, which makes
  /// it the fast way to feed many small records (docs/performance.md); like librdkafka's
  /// rd_kafka_produce_batch, a partial acceptance is normal under back-pressure.
  [[nodiscard]] SubmitManyResult submit_many(Instant now, std::span<const std::span<const std::byte>> records);
  /// Same, for text records.
  [[nodiscard]] SubmitManyResult submit_many(Instant now, std::span<const std::string_view> records);

  /// Places a flush barrier after every record submitted so far (F1–F5): seals the
  /// partial batch at once; the BarrierCompleted action arrives when every covered
  /// record completed (at once when none is pending, F3). Refused when closed (C2),
  /// failed (E1), or with max_pending_barriers barriers pending (would_block).
  [[nodiscard]] tl::expected<BarrierId, Rejection> flush(Instant now);

  /// Starts close: seals the partial batch, drains every record, then emits Closed
  /// with success or the terminal error (C1, E1). Idempotent: returns the final result
  /// when Closed was already emitted, else nullopt (the Closed action brings it).
  [[nodiscard]] std::optional<tl::expected<void, Error>> close(Instant now);

  /// Seals the partial batch now, without a barrier (R2), so it goes out as capacity
  /// allows. For a layer above the core that refuses a submit for a limit of its own —
  /// the protocol clients' max_pending_records (R3): the records whose completion frees
  /// that room must not wait for a linger (or, with no linger timer, forever), just as
  /// the core's own would_block seals the partial batch. Nothing when no batch is open or
  /// the producer is not open.
  void seal_partial_batch(Instant now);

  /// Fails every unresolved ticket, barrier and close with `aborted` (each ticket range
  /// marked definite if never sent, indefinite if it may have been appended) and emits
  /// Closed (C5). An earlier terminal error stays the reported one (E1).
  void abort(Instant now);

  /// Reports that attempt `attempt` of `batch` was acknowledged (P4, S3). Outcomes for
  /// superseded attempts or completed batches are ignored; an ack that breaks the
  /// protocol fails the Producer with invalid_ack (E5).
  void handle_ack(Instant now, BatchId batch, std::uint32_t attempt, Ack ack);

  /// Reports that attempt `attempt` of `batch` failed, classified by the codec/adapter
  /// (E2–E4, S4–S7). Retries when retryable and safe; parks on a resolvable sequence
  /// gap (S4); claims a new epoch on stale epoch with auto_claim (S5); otherwise fails
  /// the Producer with this error (E1).
  void handle_failure(Instant now, BatchId batch, std::uint32_t attempt, Error failure);

  /// Processes every deadline that is due at `now`: delivery timeout (E6), linger (B1),
  /// backoff (E4). Deadlines never fire early and a spurious call is a no-op (D3).
  void handle_timeout(Instant now);

  /// The next output, or nullopt when there is none. Spans inside a SendBatch stay
  /// valid until that batch's TicketsCompleted was polled. Inline when there is nothing
  /// to poll: the drive rule polls after every submit, and most submits emit nothing.
  [[nodiscard]] std::optional<ActionType> poll_action() {
    if (*unpolled_ == 0) return std::nullopt;
    return poll_action_slow();
  }

  /// The earliest instant handle_timeout has work to do, or nullopt (D3).
  [[nodiscard]] std::optional<Instant> next_deadline() const;

  /// Lifecycle state.
  [[nodiscard]] ProducerState state() const noexcept;
  /// The sticky terminal error, once there is one (E1).
  [[nodiscard]] const std::optional<Error>& terminal_error() const noexcept;
  /// Metered bytes accepted and not yet completed (R1).
  [[nodiscard]] std::uint64_t unacked_bytes() const noexcept;
  /// Batches with an attempt outstanding (R1).
  [[nodiscard]] std::uint32_t in_flight() const noexcept;
  /// Batches accepted and not yet completed, partial batch included (R3).
  [[nodiscard]] std::uint32_t unacked_batches() const noexcept;
  /// Actions waiting to be polled.
  [[nodiscard]] std::size_t pending_actions() const noexcept;
  /// Counters.
  [[nodiscard]] const ProducerStats& stats() const noexcept;
  /// The validated configuration.
  [[nodiscard]] const Config& config() const noexcept;
  /// The protocol policy (current epoch / next match_seq_num, options).
  [[nodiscard]] const Policy& policy() const noexcept;

 private:
  struct Impl;
  explicit Producer(std::unique_ptr<Impl> impl) noexcept;
  [[nodiscard]] std::optional<ActionType> poll_action_slow();
  static constexpr std::uint64_t kNoTicket = UINT64_MAX;  ///< submit_fast: take the slow path
  /// The record joined the partial batch: its ticket; else kNoTicket (nothing changed,
  /// unless an allocation failed, which fails the Producer first: D4).
  std::uint64_t submit_fast(Instant now, std::span<const std::byte> record) noexcept;
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_slow(Instant now, std::span<const std::byte> record);
  /// Both submit_many overloads: Impl::submit_many inside the D4 guard.
  template <class Record>
  [[nodiscard]] SubmitManyResult submit_many_guarded(Instant now, std::span<const Record> records);
  static constexpr std::size_t kNoActions = 0;  ///< what a moved-from Producer reads
  std::unique_ptr<Impl> impl_;                  // a moved-from Producer may only be destroyed or assigned
  const std::size_t* unpolled_;                 ///< Impl::unpolled: actions waiting (never null)
};

/// The index of `ticket` inside a completed range (P4): ticket - first. The record's
/// position on S2 is ack.start_seq_num + index.
template <class Policy>
constexpr std::uint64_t index_in_batch(const TicketsCompleted<Policy>& done, Ticket ticket) noexcept {
  return ticket.value - done.first.value;
}

}  // namespace prodsm
