// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file s2_policy.hpp
/// The S2 protocol policy of the Producer core: records metered as S2 meters them
/// (8 bytes + 2 per header + header names and values + body), batches of 1..1000 records
/// and at most 1 MiB, sequenced with `match_seq_num` advancing by the record count and a
/// fixed fencing token (S1).
/// Source: S2 API, "append" (s2.proto AppendInput: records, match_seq_num, fencing_token;
/// AppendAck: start/end seq_num); metering: s2 `common/src/record/envelope.rs`; limits:
/// s2 `common/src/caps.rs`, `common/src/record/fencing.rs`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "prodsm/batch_body.hpp"
#include "prodsm/config.hpp"

namespace prodsm {

/// S2 policy for Producer<S2Policy>. The body is the records' bytes concatenated and
/// record_ends marks where each record ends, from which the S2 codec
/// (prodsm/s2/http_codec.hpp, `s2::encode_batch`) builds the wire message.
class S2Policy {
 public:
  /// Longest fencing token S2 accepts, in bytes (s2 `common/src/record/fencing.rs`).
  static constexpr std::size_t kMaxFencingTokenBytes = 36;

  /// What the bytes of one submitted record are.
  enum class RecordFormat : std::uint8_t {
    /// The bytes are the S2 record body; the record has no headers. Metered 8 + size.
    body,
    /// The bytes are a prodsm framed record (prodsm/s2/records.hpp, `s2::frame_record`):
    /// headers and body. Metered exactly as S2 meters the record it stands for
    /// (7 + size: the framing spends 1 byte on the header count and 2 per header, as S2's
    /// meter does per header). Checked at submit (invalid framing, an empty header name,
    /// a malformed fence or trim command: refused, B4). Needed for headers and for the
    /// fence and trim command records.
    framed,
  };

  /// The `protocol` part of ProducerConfig<S2Policy>.
  struct Options {
    /// Present: stamp match_seq_num on every batch, starting here and advancing by the
    /// batch's record count (S1). Absent: no condition on position.
    std::optional<std::uint64_t> match_seq_num;
    /// Present: the same fencing token on every batch (S1); at most 36 bytes of UTF-8
    /// (s2.proto: `optional string fencing_token`).
    std::optional<std::string> fencing_token;
    /// What a submitted record's bytes are: a body (default) or a framed record with
    /// headers.
    RecordFormat record_format = RecordFormat::body;
    friend bool operator==(const Options&, const Options&) = default;
  };

  /// Sequencing stamps of one batch, fixed at seal (S1).
  struct Stamp {
    std::optional<std::uint64_t> match_seq_num;       ///< the seq_num the batch must start at, when sequenced
    bool fenced = false;                              ///< fencing token present
    std::array<char, kMaxFencingTokenBytes> token{};  ///< fencing token bytes
    std::uint8_t token_size = 0;                      ///< bytes used in `token`
    /// The fencing token as a view into this stamp.
    [[nodiscard]] std::string_view fencing_token() const noexcept { return {token.data(), token_size}; }
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };

  /// An S2 append acknowledgement: the batch occupies seq_nums [start, end) (P4).
  struct Ack {
    std::uint64_t start_seq_num = 0;  ///< seq_num of the batch's first record
    std::uint64_t end_seq_num = 0;    ///< one past the seq_num of its last record
    friend bool operator==(const Ack&, const Ack&) = default;
  };

  static constexpr std::string_view kName = "s2";                     ///< protocol name in traces and errors
  static constexpr std::uint32_t kDefaultMaxBatchRecords = 1000;      ///< records per batch by default
  static constexpr std::uint32_t kMaxBatchRecordsCap = 1000;          ///< S2's limit: records per append
  static constexpr std::uint64_t kDefaultMaxBatchBytes = 1ULL << 20;  ///< metered bytes per batch (1 MiB)
  static constexpr std::uint64_t kMaxBatchBytesCap = 1ULL << 20;      ///< S2's limit: metered bytes per append
  static constexpr std::uint64_t kMinBatchBytes = 8;  ///< smallest max_batch_bytes: one empty record's meter
  static constexpr bool kKeepsRecordEnds = true;      ///< SendBatch carries each record's end offset
  /// Positions must not go backwards from one ack to the next (E5).
  static constexpr bool kChecksOrder = true;

  /// Validates the protocol options; the error names the field (`protocol.fencing_token`:
  /// longer than 36 bytes or not UTF-8).
  static std::optional<ConfigError> validate(const Options& options);

  /// Builds the policy from options that passed validate(); match_seq_num starts at
  /// options.match_seq_num (S1).
  explicit S2Policy(const Options& options);

  /// RecordFormat::body: S2 accepts any record body (an empty body is metered 8 bytes),
  /// so nothing is refused. RecordFormat::framed: why the bytes are not a valid framed
  /// record (check_framed_record), or nothing.
  [[nodiscard]] std::optional<std::string_view> check_record(std::span<const std::byte> record) const noexcept {
    if (options_.record_format == RecordFormat::body) return std::nullopt;
    return check_framed_record(record);
  }
  /// Why `record` is not a valid framed record (prodsm/s2/records.hpp), or nothing: the
  /// framing must be complete; a header name must not be empty unless the record is a
  /// command (exactly one header, empty name, value `fence` or `trim`); a fence token is
  /// UTF-8 of at most 36 bytes; a trim body is 8 bytes (s2 `common/src/record/mod.rs`,
  /// `command.rs`). The text is static.
  [[nodiscard]] static std::optional<std::string_view> check_framed_record(std::span<const std::byte> record) noexcept;
  /// S2 metering of one record of `record_size` bytes: 8 + body for RecordFormat::body;
  /// 7 + size for RecordFormat::framed, which is S2's 8 + 2 x headers + names + values +
  /// body (a size below 1, never valid, is metered 8).
  [[nodiscard]] std::uint64_t metered_bytes(std::size_t record_size) const noexcept {
    if (options_.record_format == RecordFormat::body || record_size == 0) return 8 + record_size;
    return 7 + static_cast<std::uint64_t>(record_size);
  }
  /// A batch has no framing beyond its records: 0 bytes.
  [[nodiscard]] static std::uint64_t batch_overhead_bytes() noexcept { return 0; }
  /// Metered bytes of the smallest record (an empty body; framed: no header, empty body): 8.
  [[nodiscard]] static std::uint64_t min_record_bytes() noexcept { return 8; }
  /// Appends the record's bytes to the body; record_ends marks the boundaries.
  static void frame_record(BatchBody& body, std::span<const std::byte> record, std::uint32_t index) {
    (void)index;
    body.append(record);
  }
  /// Nothing to close: the body is complete after the last record.
  static void frame_seal(BatchBody& body) { (void)body; }
  /// Stamps match_seq_num (then advances it by record_count) and the token (S1).
  /// Precondition: record_count <= record_room() (the core caps the open batch, S8).
  Stamp stamp(std::uint32_t record_count);
  /// How many records a new batch may hold and still be stamped within the protocol's
  /// limits (S8), once the open batch of `open_records` records (0: none open) is sealed:
  /// with match_seq_num, 2^64-1 minus the new batch's match_seq_num (its end seq_num must
  /// fit in a u64), at most UINT32_MAX; without it unbounded (the server numbers records,
  /// and an ack whose range wraps is invalid, E5). The open batch itself never holds more
  /// than record_room(0) allowed when it was opened.
  [[nodiscard]] std::uint32_t record_room(std::uint32_t open_records = 0) const noexcept {
    if (!next_match_) return UINT32_MAX;
    const std::uint64_t room = UINT64_MAX - *next_match_ - open_records;
    return room >= UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(room);
  }
  /// Why record_room() is 0 (static text, S8).
  static constexpr std::string_view kExhausted =
      "match_seq_num would pass 2^64-1: no more records can be appended under it";
  /// A resend is safe only with match_seq_num: a duplicate would fail its condition.
  [[nodiscard]] bool resend_is_safe() const noexcept { return next_match_.has_value(); }
  /// S2 has no epochs.
  [[nodiscard]] static bool can_claim_epoch() noexcept { return false; }
  /// Always an error: S2 has no producer epochs to claim (S5 does not apply).
  static std::optional<std::string> claim_epoch(std::uint64_t server_epoch) {
    (void)server_epoch;
    return std::string{"S2 has no producer epochs"};
  }
  /// The batch's match_seq_num (nullopt without one), which a `sequence_gap` compares with
  /// the stream's next seq_num (S4: s2::classify_append gives a seq_num_mismatch below the
  /// batch's start as a gap).
  [[nodiscard]] static std::optional<std::uint64_t> sequence_of(const Stamp& stamp) noexcept {
    return stamp.match_seq_num;
  }
  /// Count and position checks (E5): end - start == record_count; start ==
  /// match_seq_num when stamped.
  [[nodiscard]] static std::optional<std::string> check_ack(const Stamp& stamp, std::uint32_t record_count,
                                                            const Ack& ack);
  /// Positions never go backwards (E5): next.start >= previous.end.
  [[nodiscard]] static std::optional<std::string> check_order(const Ack& previous, const Ack& next);
  /// Never: S2 reports no duplicates (a resend with match_seq_num fails its condition).
  [[nodiscard]] static bool is_duplicate(const Ack& ack) noexcept {
    (void)ack;
    return false;
  }
  /// S2 has no duplicates (is_duplicate is false): nothing to mark.
  static void mark_earlier_incarnation(Ack& ack) noexcept { (void)ack; }
  /// S2 has no duplicates: never.
  [[nodiscard]] static bool fails_first_attempt_duplicates() noexcept { return false; }
  /// The options the policy was built from.
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// The match_seq_num the next sealed batch gets, when sequenced.
  [[nodiscard]] std::optional<std::uint64_t> next_match_seq_num() const noexcept { return next_match_; }

 private:
  Options options_;
  std::optional<std::uint64_t> next_match_;
};

}  // namespace prodsm
