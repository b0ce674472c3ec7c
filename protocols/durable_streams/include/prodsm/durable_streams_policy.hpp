// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file durable_streams_policy.hpp
/// The Durable Streams protocol policy of the Producer core: how a record is metered,
/// how a batch body is framed (bytes: concatenation; JSON: `[a,b,c]`), and how batches
/// are sequenced by the idempotent producer (producer id, epoch, seq; S2, S5).
/// Source: PROTOCOL.md of durable-streams/durable-streams, "Appending" and
/// "Idempotent producers".

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "prodsm/batch_body.hpp"
#include "prodsm/config.hpp"

namespace prodsm {
namespace ds::detail {
class JsonValidity;  // prodsm/ds/detail/json_validity.hpp
}  // namespace ds::detail

/// How records are framed into one Durable Streams append body.
enum class DurableStreamsBodyFormat : std::uint8_t {
  bytes,  ///< records concatenated as they are (byte streams)
  json,   ///< each record is one JSON value; the body is `[r0,r1,...]` and the server
          ///< flattens that one array level (application/json streams). Each record is
          ///< checked to be exactly one valid JSON value (simdjson; an integer beyond 64
          ///< bits is valid, ds::detail::JsonValidity), not for numbers a
          ///< double cannot hold: a server that stores numbers as doubles keeps
          ///< 9007199254740993 as 9007199254740992 (RFC 8259 section 6). Quote such
          ///< numbers as strings; `prodsm produce --json` refuses them.
};

/// What a duplicate (204) answering a batch's *first* attempt means (S3). Nothing of ours
/// can have reached the server before that attempt, so the server holds those
/// (producer id, epoch, seq) from another incarnation: none of the batch's records were
/// appended by this producer.
enum class FirstAttemptDuplicates : std::uint8_t {
  /// Complete the batch successfully with `Ack::earlier_incarnation` set: resuming an
  /// interrupted run whose batches repeat exactly.
  accept,
  /// Fail the producer (terminal `protocol_error`, definite: nothing of the batch was
  /// appended), and keep one batch in flight until the first one of the epoch is
  /// acknowledged, so a reused (producer id, epoch) fails before anything is appended.
  fail,
};

/// Idempotent producer identity (S2, S5). Seq is per batch (per request).
/// (Declared at namespace scope, not nested, so std::optional of it is usable inside
/// the policy on every compiler.)
struct DurableStreamsIdempotentOptions {
  /// Stable producer id sent as Producer-Id: 1..256 visible ASCII bytes (0x21-0x7e).
  std::string producer_id;
  /// First Producer-Epoch, 0..2^53-1.
  std::uint64_t epoch = 0;
  /// On 403 stale epoch, claim server epoch + 1 and renumber the unacked batches
  /// from seq 0 instead of failing (S5).
  bool auto_claim = false;
  /// A duplicate answering a first attempt: accepted (and flagged) or a failure (S3).
  /// Default accept; the adapters' ProducerOptions::start chooses per start mode.
  FirstAttemptDuplicates first_attempt_duplicates = FirstAttemptDuplicates::accept;
  /// First Producer-Seq of `epoch`, 0..2^53-1 (default 0, a new epoch). Above 0 only to
  /// continue an epoch whose earlier seqs the server already holds (a resumed producer);
  /// an epoch claim (S5) starts again at 0.
  /// (Last member, so positional initializers of the fields above keep their meaning.)
  std::uint64_t seq = 0;
  friend bool operator==(const DurableStreamsIdempotentOptions&, const DurableStreamsIdempotentOptions&) = default;
};

/// The `protocol` part of ProducerConfig<DurableStreamsPolicy>.
struct DurableStreamsOptions {
  /// Body format; must match the stream's content type. Default bytes.
  DurableStreamsBodyFormat body_format = DurableStreamsBodyFormat::bytes;
  /// JSON mode: reject at submit a record that is not exactly one JSON value, so one
  /// bad record can never poison a batch (400). Default true. A number beyond the double
  /// range (1e400) is refused too: a JSON server keeps numbers as doubles (the reference
  /// server would store null). One a double cannot hold exactly (9007199254740993) is
  /// taken, and the server keeps the nearest double; `prodsm produce --json` refuses those.
  bool validate_json = true;
  /// Present: stamp Producer-Id/Epoch/Seq on every batch (S2). Absent: plain appends —
  /// no deduplication, and with max_in_flight > 1 a batch the server refuses (503, 429)
  /// may be appended after the batches pipelined behind it (contract E4): use
  /// max_in_flight = 1 when their order matters.
  std::optional<DurableStreamsIdempotentOptions> idempotent;
  friend bool operator==(const DurableStreamsOptions&, const DurableStreamsOptions&) = default;
};

/// Durable Streams policy for Producer<DurableStreamsPolicy>.
class DurableStreamsPolicy {
 public:
  /// How a batch's records become one body (bytes or a JSON array).
  using BodyFormat = DurableStreamsBodyFormat;
  /// The idempotent producer's id, epoch and auto-claim (S2, S5).
  using IdempotentOptions = DurableStreamsIdempotentOptions;
  /// The policy's options (the core's Config::protocol).
  using Options = DurableStreamsOptions;

  /// Sequencing stamps of one batch, fixed at seal; renumbered only by an epoch claim (S5).
  struct Stamp {
    bool sequenced = false;   ///< false: plain append, no producer headers
    std::uint64_t epoch = 0;  ///< Producer-Epoch
    std::uint64_t seq = 0;    ///< Producer-Seq: +1 per batch within an epoch, from 0
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };

  /// A successful append acknowledgement (P4, S3).
  struct Ack {
    /// Stream-Next-Offset after the batch: opaque text; an idempotent producer's offsets
    /// are compared lexicographically to check their order (check_order, E5).
    /// Empty only on a duplicate (204 on a producer append carries no offset).
    std::string next_offset;
    /// True when the server reported the batch as an already-applied duplicate (S3).
    bool duplicate = false;
    /// With `duplicate`: the batch's first attempt was answered so, so an earlier
    /// incarnation with the same producer id and epoch appended those seqs — not this
    /// producer (set by the core, FirstAttemptDuplicates::accept).
    bool earlier_incarnation = false;
    friend bool operator==(const Ack&, const Ack&) = default;
  };

  /// Short protocol name, used in messages and the conformance table.
  static constexpr std::string_view kName = "durable_streams";
  /// Default and cap of max_batch_records (the protocol itself counts bytes only).
  static constexpr std::uint32_t kDefaultMaxBatchRecords = 100'000;
  static constexpr std::uint32_t kMaxBatchRecordsCap = 1'000'000;
  /// Default (1 MiB, as the TypeScript IdempotentProducer) and cap (64 MiB) of max_batch_bytes.
  static constexpr std::uint64_t kDefaultMaxBatchBytes = 1ULL << 20;
  static constexpr std::uint64_t kMaxBatchBytesCap = 64ULL << 20;
  /// Smallest accepted max_batch_bytes: one 1-byte record in JSON framing, `[0]`.
  static constexpr std::uint64_t kMinBatchBytes = 3;
  /// Durable Streams bodies need no per-record index.
  static constexpr bool kKeepsRecordEnds = false;
  /// Offsets are opaque but lexicographically sortable and strictly increasing
  /// (PROTOCOL.md, "Offsets"): an idempotent producer's batch's next offset is checked
  /// against the previous batch's (E5; see check_order).
  static constexpr bool kChecksOrder = true;
  /// Largest Producer-Epoch / Producer-Seq the protocol allows: 2^53 - 1.
  static constexpr std::uint64_t kMaxSequenceValue = (1ULL << 53) - 1;

  /// Validates the protocol options; the error names the field
  /// ("protocol.idempotent.producer_id", "protocol.idempotent.epoch").
  static std::optional<ConfigError> validate(const Options& options);

  /// Builds the policy from options that passed validate(); starts at options.idempotent's
  /// epoch and seq (S2).
  explicit DurableStreamsPolicy(const Options& options);
  ~DurableStreamsPolicy();                                ///< out of line: the JSON validity's state is private
  DurableStreamsPolicy(DurableStreamsPolicy&&) noexcept;  ///< moves the epoch/seq state too
  DurableStreamsPolicy& operator=(DurableStreamsPolicy&&) noexcept;  ///< likewise

  /// Why `record` cannot be accepted (empty record; invalid JSON in JSON mode), or
  /// nullopt when it can. The text is static.
  [[nodiscard]] std::optional<std::string_view> check_record(std::span<const std::byte> record) const {
    if (record.empty()) return "empty record: Durable Streams cannot append zero bytes";
    if (json() && options_.validate_json) return check_json(record);
    return std::nullopt;
  }
  /// Bytes the record adds to a batch body: its size, +1 in JSON mode for `,` or `]`.
  [[nodiscard]] std::uint64_t metered_bytes(std::size_t record_size) const noexcept {
    return record_size + (json() ? 1 : 0);
  }
  /// Bytes a batch body has beyond its records' metered bytes: 1 (`[`) in JSON mode.
  [[nodiscard]] std::uint64_t batch_overhead_bytes() const noexcept { return json() ? 1 : 0; }
  /// Metered bytes of the smallest acceptable record (decides when a batch is full).
  [[nodiscard]] std::uint64_t min_record_bytes() const noexcept { return json() ? 2 : 1; }
  /// Appends `record` to the body being framed; `index` is its index in the batch.
  void frame_record(BatchBody& body, std::span<const std::byte> record, std::uint32_t index) const {
    if (json()) body.push_back(index == 0 ? std::byte{'['} : std::byte{','});
    body.append(record);
  }
  /// Completes the body at seal (`]` in JSON mode).
  void frame_seal(BatchBody& body) const;
  /// Stamps a batch at seal: the next seq of the current epoch (S2). Precondition:
  /// record_room() > 0 (the core never opens a batch it cannot stamp, S8).
  Stamp stamp(std::uint32_t record_count);
  /// How many records a new batch may hold and still be stamped within the protocol's
  /// limits (S8), once the open batch of `open_records` records (0: none open) is sealed:
  /// unbounded (UINT32_MAX) while that batch's Producer-Seq would be at most 2^53-1 or the
  /// producer is not idempotent, else 0 — Durable Streams numbers batches, not records.
  [[nodiscard]] std::uint32_t record_room(std::uint32_t open_records = 0) const noexcept {
    const std::uint64_t seq = next_seq_ + (open_records > 0 ? 1 : 0);
    return !options_.idempotent || seq <= kMaxSequenceValue ? UINT32_MAX : 0;
  }
  /// Why record_room() is 0 (static text, S8).
  static constexpr std::string_view kExhausted =
      "Producer-Seq would pass 2^53-1: no more batches can be numbered in this epoch";
  /// True when an indefinite failure may be resent without duplicating (idempotent).
  [[nodiscard]] bool resend_is_safe() const noexcept { return options_.idempotent.has_value(); }
  /// True when a 403 stale epoch may be answered with an epoch claim (S5).
  [[nodiscard]] bool can_claim_epoch() const noexcept {
    return options_.idempotent.has_value() && options_.idempotent->auto_claim;
  }
  /// Starts epoch server_epoch + 1 at seq 0 (S5); a server epoch equal to ours (a 403
  /// for our own epoch) is claimed too. Error text when the claim is impossible: not an
  /// idempotent producer, the server epoch is below ours, or the new epoch passes 2^53 - 1.
  std::optional<std::string> claim_epoch(std::uint64_t server_epoch);
  /// The batch's sequence number when sequenced, for the S4 gap rule.
  [[nodiscard]] static std::optional<std::uint64_t> sequence_of(const Stamp& stamp) noexcept {
    if (!stamp.sequenced) return std::nullopt;
    return stamp.seq;
  }
  /// Why `ack` cannot acknowledge a batch stamped `stamp` with `record_count` records
  /// (E5), or nullopt when it can.
  [[nodiscard]] std::optional<std::string> check_ack(const Stamp& stamp, std::uint32_t record_count,
                                                     const Ack& ack) const;
  /// Why `next` cannot follow `previous`, the acks of two batches completed one after
  /// the other (E5). Idempotent producer only: the server appends its batches in seq
  /// order, so the next offset after a later batch must be lexicographically greater
  /// (PROTOCOL.md: offsets assigned to appended data are strictly increasing). Plain
  /// appends on several connections may be appended out of batch order, so their offsets
  /// are not compared. A duplicate carries no offset and is never compared (the core
  /// skips it as `previous`).
  [[nodiscard]] std::optional<std::string> check_order(const Ack& previous, const Ack& next) const {
    if (!options_.idempotent || next.duplicate || previous.duplicate || next.next_offset > previous.next_offset) {
      return std::nullopt;
    }
    return "offsets went backwards: Stream-Next-Offset " + next.next_offset + " is not above the previous batch's " +
           previous.next_offset;
  }
  /// True when the ack reports a duplicate (S3).
  [[nodiscard]] static bool is_duplicate(const Ack& ack) noexcept { return ack.duplicate; }
  /// Marks a duplicate that answered a first attempt (S3: not appended by us).
  static void mark_earlier_incarnation(Ack& ack) noexcept { ack.earlier_incarnation = true; }
  /// True when a duplicate answering a first attempt fails the producer (S3).
  [[nodiscard]] bool fails_first_attempt_duplicates() const noexcept {
    return options_.idempotent && options_.idempotent->first_attempt_duplicates == FirstAttemptDuplicates::fail;
  }

  /// The current Producer-Epoch (S2; after a claim, the claimed one: S5).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// The Producer-Seq the next sealed batch gets (S1; after a claim, 0 again: S5).
  [[nodiscard]] std::uint64_t next_seq() const noexcept { return next_seq_; }
  /// The options the policy was built from.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

 private:
  [[nodiscard]] bool json() const noexcept { return options_.body_format == BodyFormat::json; }
  /// check_record's JSON step (ds::detail::JsonValidity): nullopt when `record` is exactly
  /// one JSON value, else a static reason.
  [[nodiscard]] std::optional<std::string_view> check_json(std::span<const std::byte> record) const;
  Options options_;
  /// JSON mode with validate_json only. Reused by every check (no allocation per record
  /// once warm), so a const check changes it.
  std::unique_ptr<ds::detail::JsonValidity> json_validity_;
  std::uint64_t epoch_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace prodsm
