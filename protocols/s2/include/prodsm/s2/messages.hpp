// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file messages.hpp
/// S2's protobuf messages, encoded and decoded by hand (no protobuf library), sans-IO:
/// AppendInput, AppendRecord and Header are encoded; AppendAck, StreamPosition and
/// ReadBatch (SequencedRecord) are decoded, defensively — bounded sizes and nesting,
/// unknown fields of every wire type skipped, malformed input an Error value
/// (protocol_error, the message naming the message, field and offset), never an exception
/// or undefined behaviour. AppendInput can be decoded too (tests, fuzzing) and AppendAck
/// encoded.
/// Source: s2-specs `s2/v1/s2.proto` (field numbers and types); field order and presence
/// as the official SDKs write them (the TypeScript SDK's generated codec
/// `dist/esm/generated/proto/s2.js`; prost in s2 `api/src/v1/stream/proto/s2.v1.rs`):
/// fields in field-number order, proto3 scalars and bytes omitted when zero or empty,
/// `optional` fields written whenever present, messages written whenever present.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/error.hpp"

namespace prodsm::s2 {

// ---- encoding (views over the caller's bytes) --------------------------------------

/// s2.proto `Header { bytes name = 1; bytes value = 2; }`, as views. Bytes of any value.
struct HeaderView {
  std::string_view name;   ///< header name bytes; empty only in a command record
  std::string_view value;  ///< header value bytes
};

/// s2.proto `AppendRecord { optional uint64 timestamp = 1; repeated Header headers = 2;
/// bytes body = 3; }`, as views.
struct AppendRecordView {
  std::optional<std::uint64_t> timestamp;  ///< ms since the Unix epoch; absent: the server assigns it
  std::span<const HeaderView> headers;     ///< in order
  std::string_view body;                   ///< body bytes
};

/// s2.proto `AppendInput { repeated AppendRecord records = 1; optional uint64
/// match_seq_num = 2; optional string fencing_token = 3; }`, as views.
struct AppendInputView {
  std::span<const AppendRecordView> records;      ///< 1..1000 records for S2 to accept
  std::optional<std::uint64_t> match_seq_num;     ///< the seq_num the first record must get
  std::optional<std::string_view> fencing_token;  ///< UTF-8, at most 36 bytes, for S2 to accept
};

/// Bytes of the encoded AppendRecord message (without its own tag and length).
[[nodiscard]] std::size_t encoded_size(const AppendRecordView& record) noexcept;
/// Bytes of the encoded AppendInput message.
[[nodiscard]] std::size_t encoded_size(const AppendInputView& input) noexcept;
/// Appends the AppendRecord message (without tag and length) to `out`. Deterministic:
/// the same record gives the same bytes. Throws only std::bad_alloc.
void encode(const AppendRecordView& record, std::string& out);
/// Appends the AppendInput message to `out`: every record (field 1), then match_seq_num
/// (2) and fencing_token (3) when present — byte for byte what the official SDKs send.
/// The encoder checks nothing (limits are S2's to enforce; see records.hpp and
/// S2Policy). Throws only std::bad_alloc.
void encode(const AppendInputView& input, std::string& out);

// ---- decoded messages (owned) -----------------------------------------------------

/// s2.proto `StreamPosition { uint64 seq_num = 1; uint64 timestamp = 2; }`.
struct StreamPosition {
  std::uint64_t seq_num = 0;    ///< sequence number
  std::uint64_t timestamp = 0;  ///< ms since the Unix epoch (or the client's timestamp)
  friend bool operator==(const StreamPosition&, const StreamPosition&) = default;
};

/// s2.proto `AppendAck { StreamPosition start = 1; StreamPosition end = 2;
/// StreamPosition tail = 3; }`: the batch occupies seq_nums [start, end).
struct AppendAck {
  StreamPosition start;  ///< first record's position
  StreamPosition end;    ///< last record's seq_num + 1, and its timestamp
  StreamPosition tail;   ///< the stream's next seq_num and last timestamp (>= end when concurrent)
  friend bool operator==(const AppendAck&, const AppendAck&) = default;
};

/// s2.proto `Header`, owned.
struct Header {
  std::string name;   ///< name bytes
  std::string value;  ///< value bytes
  friend bool operator==(const Header&, const Header&) = default;
};

/// s2.proto `AppendRecord`, owned.
struct AppendRecord {
  std::optional<std::uint64_t> timestamp;  ///< ms since the Unix epoch, when given
  std::vector<Header> headers;             ///< in order
  std::string body;                        ///< body bytes
  friend bool operator==(const AppendRecord&, const AppendRecord&) = default;
};

/// s2.proto `AppendInput`, owned.
struct AppendInput {
  std::vector<AppendRecord> records;           ///< in order
  std::optional<std::uint64_t> match_seq_num;  ///< when given
  std::optional<std::string> fencing_token;    ///< when given (UTF-8)
  friend bool operator==(const AppendInput&, const AppendInput&) = default;
};

/// s2.proto `SequencedRecord { uint64 seq_num = 1; uint64 timestamp = 2; repeated Header
/// headers = 3; bytes body = 4; }`.
struct SequencedRecord {
  std::uint64_t seq_num = 0;    ///< its position
  std::uint64_t timestamp = 0;  ///< ms since the Unix epoch
  std::vector<Header> headers;  ///< in order (a command record: one header, empty name)
  std::string body;             ///< body bytes
  friend bool operator==(const SequencedRecord&, const SequencedRecord&) = default;
};

/// s2.proto `ReadBatch { repeated SequencedRecord records = 1; optional StreamPosition
/// tail = 2; }`.
struct ReadBatch {
  std::vector<SequencedRecord> records;  ///< in seq_num order
  std::optional<StreamPosition> tail;    ///< the stream's tail, when the server sent it
  friend bool operator==(const ReadBatch&, const ReadBatch&) = default;
};

/// Bounds on what one decoded message may hold (R3). Exceeding one is a protocol_error.
struct DecodeLimits {
  std::size_t max_message_bytes = 16ULL * 1024 * 1024;  ///< whole message, bytes
  std::uint32_t max_group_depth = 8;                    ///< nesting of (unknown) groups
  std::size_t max_records = 1000;                       ///< records per AppendInput/ReadBatch (S2: 1000)
  std::size_t max_headers = 65536;                      ///< headers in one message, all records together
};

/// Decodes an AppendAck. `start` and `end` are required (as the TypeScript SDK requires
/// them); an absent `tail` is taken as `end` (as the SDK does). Repeated scalar fields:
/// the last wins; repeated embedded positions merge (protobuf rules); unknown fields are
/// skipped. Errors: protocol_error (indefinite — a 200 was answered, the batch may have
/// been appended — not retryable), message "AppendAck.<field>: <why> at offset <n>".
tl::expected<AppendAck, Error> decode_append_ack(std::string_view bytes, const DecodeLimits& limits = {}) noexcept;
/// Decodes a ReadBatch (records and the optional tail), with the same rules; errors name
/// "ReadBatch.records[i].<field>".
tl::expected<ReadBatch, Error> decode_read_batch(std::string_view bytes, const DecodeLimits& limits = {}) noexcept;
/// Decodes an AppendInput (what a server receives; for tests and fuzzing), with the same
/// rules; `fencing_token` must be UTF-8 (protobuf `string`).
tl::expected<AppendInput, Error> decode_append_input(std::string_view bytes, const DecodeLimits& limits = {}) noexcept;

/// Appends an encoded AppendAck (start, end, tail; each position's zero fields omitted,
/// every position written) — what S2 answers, for tests and test servers.
void encode(const AppendAck& ack, std::string& out);

}  // namespace prodsm::s2
