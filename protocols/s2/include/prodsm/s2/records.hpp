// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file records.hpp
/// S2 records as the producer takes them, sans-IO: S2's metering, the prodsm framed
/// record (headers + body in one byte string, for `S2Policy::RecordFormat::framed`), and
/// the fence and trim command records.
///
/// Framed record layout (prodsm's, never sent as such; the codec turns it into an
/// s2.proto AppendRecord):
///
///     u8 H                      number of headers, 0..255
///     H times:  u8 N, N bytes   header name (N <= 255)
///               u8 V, V bytes   header value (V <= 255)
///     the remaining bytes       body
///
/// It spends 1 byte on the count and 2 per header, so S2's meter of the record it stands
/// for is exactly 7 + its size: what `S2Policy::metered_bytes` charges, with no per-record
/// work in the core.
///
/// Checks and views never allocate or throw; the builders (frame_record, fence_record, ...)
/// allocate their result and let std::bad_alloc propagate, as std::string does.
///
/// Sources: metering — s2 `common/src/record/envelope.rs` (8 + 2 x headers + names +
/// values + body) and `command.rs` (the same formula for commands); command records —
/// s2 `common/src/record/mod.rs` (`Record::try_from_parts`: exactly one header with an
/// empty name is a command, its value `fence` or `trim`) and `command.rs` (fence: UTF-8
/// token of at most 36 bytes, empty clears; trim: 8-byte big-endian seq_num); the
/// TypeScript SDK's `AppendRecord.fence`/`AppendRecord.trim` (`dist/esm/types.js`).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/s2/messages.hpp"

namespace prodsm::s2 {

/// Most headers a framed record can hold.
inline constexpr std::size_t kMaxFramedHeaders = 255;
/// Longest header name or value a framed record can hold, in bytes.
inline constexpr std::size_t kMaxFramedHeaderBytes = 255;
/// Longest fencing token S2 accepts, in bytes (s2 `common/src/record/fencing.rs`).
inline constexpr std::size_t kMaxFencingTokenBytes = 36;
/// S2's limits per append (s2 `common/src/caps.rs`, RECORD_BATCH_MAX): records ...
inline constexpr std::size_t kMaxBatchRecords = 1000;
/// ... and metered bytes (also the largest record's metered size).
inline constexpr std::uint64_t kMaxBatchMeteredBytes = 1024 * 1024;
/// The header value naming a fence command (its name is empty).
inline constexpr std::string_view kFenceCommand = "fence";
/// The header value naming a trim command (its name is empty).
inline constexpr std::string_view kTrimCommand = "trim";

/// S2's metered size of a record: 8 + 2 x headers + header name and value bytes + body
/// bytes (timestamps are not metered).
[[nodiscard]] std::uint64_t metered_size(const AppendRecordView& record) noexcept;

/// A framed record taken apart, as views into its bytes.
class FramedRecord {
 public:
  /// Parses `bytes`; nullopt when the framing is incomplete (a count or length running
  /// past the end). Content rules are check_framed_record's.
  static std::optional<FramedRecord> parse(std::string_view bytes) noexcept;
  /// Number of headers.
  [[nodiscard]] std::size_t header_count() const noexcept { return count_; }
  /// Header `i` (0 <= i < header_count()), found by walking the framing: O(i).
  [[nodiscard]] HeaderView header(std::size_t i) const noexcept;
  /// The body.
  [[nodiscard]] std::string_view body() const noexcept { return body_; }
  /// Calls `visit(HeaderView)` for every header in order, in one pass.
  template <typename Visit>
  void for_each_header(Visit&& visit) const {
    std::size_t pos = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      const auto n = static_cast<std::uint8_t>(headers_[pos]);
      const std::string_view name = headers_.substr(pos + 1, n);
      pos += 1 + n;
      const auto v = static_cast<std::uint8_t>(headers_[pos]);
      const std::string_view value = headers_.substr(pos + 1, v);
      pos += 1 + v;
      visit(HeaderView{name, value});
    }
  }

 private:
  std::size_t count_ = 0;
  std::string_view headers_;  // the header framing, after the count byte
  std::string_view body_;
};

/// Why `bytes` is not a valid framed record, or nothing (static text): incomplete
/// framing; an empty header name outside a command record; a command (exactly one
/// header with an empty name) other than `fence` or `trim`; a fence token that is not
/// UTF-8 or longer than 36 bytes; a trim body that is not 8 bytes. These are the records
/// S2 would refuse with 422 (s2 `Record::try_from_parts`).
[[nodiscard]] std::optional<std::string_view> check_framed_record(std::string_view bytes) noexcept;

/// Frames `headers` and `body` into a framed record. Errors (the text says which): more
/// than 255 headers, a name or value longer than 255 bytes, or a record S2 would refuse
/// (check_framed_record).
tl::expected<std::string, std::string> frame_record(std::span<const HeaderView> headers, std::string_view body);
/// A framed record with no headers: the count byte 0, then `body`.
std::string frame_body(std::string_view body);

/// The fence command record (framed): one header (empty name, value `fence`), the token
/// as body. Appending it sets the stream's fencing token; an empty token clears it. The
/// command applies from the batch after the one that carries it (s2
/// `lite/src/backend/streamer.rs`: the batch's own `fencing_token` is checked first).
/// Errors: a token longer than 36 bytes or not UTF-8.
tl::expected<std::string, std::string> fence_record(std::string_view token);
/// The trim command record (framed): one header (empty name, value `trim`), the
/// 8-byte big-endian `trim_point` as body. Records below the trim point become
/// unreadable (S2 caps it at the command's own seq_num + 1).
std::string trim_record(std::uint64_t trim_point);

/// The fence command as an s2.proto record, for a one-off append (encode_append) outside
/// the producer; its views point into `token` and static storage. Errors as fence_record.
struct CommandRecord {
  HeaderView header;  ///< {"", "fence"} or {"", "trim"}
  std::string body;   ///< the token, or the 8-byte trim point
  /// The record as a view; valid while this object lives.
  [[nodiscard]] AppendRecordView view() const noexcept { return {std::nullopt, {&header, 1}, body}; }
};
/// The fence command (see fence_record).
tl::expected<CommandRecord, std::string> fence_command(std::string_view token);
/// The trim command (see trim_record).
CommandRecord trim_command(std::uint64_t trim_point);

}  // namespace prodsm::s2
