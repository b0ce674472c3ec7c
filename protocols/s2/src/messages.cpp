// SPDX-License-Identifier: Apache-2.0
// S2's protobuf messages (s2-specs s2/v1/s2.proto): encoders for AppendInput and
// AppendAck, defensive decoders for AppendAck, ReadBatch and AppendInput.
#include "prodsm/s2/messages.hpp"

#include "prodsm/s2/detail/protobuf.hpp"

namespace prodsm::s2 {
namespace {

using detail::Field;
using detail::Reader;
using detail::WireType;

// Field numbers (s2.proto).
constexpr std::uint32_t kPositionSeqNum = 1, kPositionTimestamp = 2;
constexpr std::uint32_t kHeaderName = 1, kHeaderValue = 2;
constexpr std::uint32_t kRecordTimestamp = 1, kRecordHeaders = 2, kRecordBody = 3;
constexpr std::uint32_t kInputRecords = 1, kInputMatchSeqNum = 2, kInputFencingToken = 3;
constexpr std::uint32_t kAckStart = 1, kAckEnd = 2, kAckTail = 3;
constexpr std::uint32_t kSequencedSeqNum = 1, kSequencedTimestamp = 2, kSequencedHeaders = 3, kSequencedBody = 4;
constexpr std::uint32_t kBatchRecords = 1, kBatchTail = 2;

std::size_t encoded_size(const HeaderView& h) noexcept {
  std::size_t n = 0;
  if (!h.name.empty()) n += detail::length_field_size(kHeaderName, h.name.size());
  if (!h.value.empty()) n += detail::length_field_size(kHeaderValue, h.value.size());
  return n;
}

std::size_t position_size(const StreamPosition& p) noexcept {
  std::size_t n = 0;
  if (p.seq_num != 0) n += detail::varint_field_size(kPositionSeqNum, p.seq_num);
  if (p.timestamp != 0) n += detail::varint_field_size(kPositionTimestamp, p.timestamp);
  return n;
}

void encode_position(std::uint32_t field, const StreamPosition& p, std::string& out) {
  detail::append_length_prefix(out, field, position_size(p));
  if (p.seq_num != 0) detail::append_varint_field(out, kPositionSeqNum, p.seq_num);
  if (p.timestamp != 0) detail::append_varint_field(out, kPositionTimestamp, p.timestamp);
}

// ---- decoding ------------------------------------------------------------------------

/// Decoding state shared by the nested decoders; the failure is described on the way
/// out (the innermost decoder names its field, each outer one prefixes its own).
struct Ctx {
  Ctx(std::string_view bytes, const DecodeLimits& bounds) noexcept : root{bytes}, limits{bounds} {}
  std::string_view root;
  const DecodeLimits& limits;
  std::size_t headers = 0;
  std::string path;           // e.g. "records[3].headers[0].name"
  const char* why = nullptr;  // static text
  std::size_t offset = 0;     // in root

  bool fail(std::string_view field, const char* reason, std::size_t at) {
    path.assign(field);
    why = reason;
    offset = at;
    return false;
  }
  std::size_t offset_of(std::string_view part, std::size_t local) const noexcept {
    return static_cast<std::size_t>(part.data() - root.data()) + local;
  }
  bool reader_failed(std::string_view field, const Reader& r, std::string_view part) {
    return fail(field, r.error(), offset_of(part, r.error_offset()));
  }
  /// Prefixes the failure's path with `outer` ("records[3]" + "." + path).
  bool wrap(std::string_view outer) {
    std::string p{outer};
    if (!path.empty()) {
      p += '.';
      p += path;
    }
    path = std::move(p);
    return false;
  }
};

std::string indexed(std::string_view name, std::size_t i) {
  std::string s{name};
  s += '[';
  s += std::to_string(i);
  s += ']';
  return s;
}

const char* expected_wire(WireType expected) noexcept {
  switch (expected) {
    case WireType::varint: return "wrong wire type (expected varint)";
    case WireType::length: return "wrong wire type (expected length-delimited)";
    default: return "wrong wire type";
  }
}

/// Checks a known field's wire type.
bool typed(Ctx& ctx, const Field& f, WireType expected, std::string_view name, std::string_view part, std::size_t at) {
  if (f.type == expected) return true;
  return ctx.fail(name, expected_wire(expected), ctx.offset_of(part, at));
}

bool decode_position(Ctx& ctx, std::string_view part, StreamPosition& into) {
  Reader r(part, ctx.limits.max_group_depth);
  Field f;
  std::size_t at = r.position();
  while (r.next(f)) {
    if (f.number == kPositionSeqNum) {
      if (!typed(ctx, f, WireType::varint, "seq_num", part, at)) return false;
      into.seq_num = f.value;
    } else if (f.number == kPositionTimestamp) {
      if (!typed(ctx, f, WireType::varint, "timestamp", part, at)) return false;
      into.timestamp = f.value;
    }  // other fields: unknown, skipped
    at = r.position();
  }
  if (r.error() != nullptr) return ctx.reader_failed("", r, part);
  return true;
}

bool decode_header(Ctx& ctx, std::string_view part, Header& into) {
  Reader r(part, ctx.limits.max_group_depth);
  Field f;
  std::size_t at = r.position();
  while (r.next(f)) {
    if (f.number == kHeaderName) {
      if (!typed(ctx, f, WireType::length, "name", part, at)) return false;
      into.name.assign(f.payload);
    } else if (f.number == kHeaderValue) {
      if (!typed(ctx, f, WireType::length, "value", part, at)) return false;
      into.value.assign(f.payload);
    }
    at = r.position();
  }
  if (r.error() != nullptr) return ctx.reader_failed("", r, part);
  return true;
}

/// A repeated Header field of a record: counted against max_headers, decoded, appended.
bool add_header(Ctx& ctx, std::string_view payload, std::vector<Header>& headers, std::string_view field_name) {
  const std::size_t i = headers.size();
  if (ctx.headers >= ctx.limits.max_headers) {
    return ctx.fail(indexed(field_name, i), "more headers than the limit", ctx.offset_of(payload, 0));
  }
  ++ctx.headers;
  Header h;
  if (!decode_header(ctx, payload, h)) return ctx.wrap(indexed(field_name, i));
  headers.push_back(std::move(h));
  return true;
}

bool decode_append_record(Ctx& ctx, std::string_view part, AppendRecord& into) {
  Reader r(part, ctx.limits.max_group_depth);
  Field f;
  std::size_t at = r.position();
  while (r.next(f)) {
    switch (f.number) {
      case kRecordTimestamp:
        if (!typed(ctx, f, WireType::varint, "timestamp", part, at)) return false;
        into.timestamp = f.value;
        break;
      case kRecordHeaders:
        if (!typed(ctx, f, WireType::length, "headers", part, at)) return false;
        if (!add_header(ctx, f.payload, into.headers, "headers")) return false;
        break;
      case kRecordBody:
        if (!typed(ctx, f, WireType::length, "body", part, at)) return false;
        into.body.assign(f.payload);
        break;
      default: break;
    }
    at = r.position();
  }
  if (r.error() != nullptr) return ctx.reader_failed("", r, part);
  return true;
}

bool decode_sequenced_record(Ctx& ctx, std::string_view part, SequencedRecord& into) {
  Reader r(part, ctx.limits.max_group_depth);
  Field f;
  std::size_t at = r.position();
  while (r.next(f)) {
    switch (f.number) {
      case kSequencedSeqNum:
        if (!typed(ctx, f, WireType::varint, "seq_num", part, at)) return false;
        into.seq_num = f.value;
        break;
      case kSequencedTimestamp:
        if (!typed(ctx, f, WireType::varint, "timestamp", part, at)) return false;
        into.timestamp = f.value;
        break;
      case kSequencedHeaders:
        if (!typed(ctx, f, WireType::length, "headers", part, at)) return false;
        if (!add_header(ctx, f.payload, into.headers, "headers")) return false;
        break;
      case kSequencedBody:
        if (!typed(ctx, f, WireType::length, "body", part, at)) return false;
        into.body.assign(f.payload);
        break;
      default: break;
    }
    at = r.position();
  }
  if (r.error() != nullptr) return ctx.reader_failed("", r, part);
  return true;
}

/// The error value for a failed decode of message `message`.
Error decode_error(const Ctx& ctx, std::string_view message) {
  std::string m{message};
  if (!ctx.path.empty()) {
    m += '.';
    m += ctx.path;
  }
  m += ": ";
  m += ctx.why != nullptr ? ctx.why : "malformed";
  m += " at offset ";
  m += std::to_string(ctx.offset);
  return make_error(ErrorCode::protocol_error, Certainty::indefinite, false, std::move(m));
}

Error too_large(std::string_view message, std::size_t size, std::size_t limit) {
  return make_error(
      ErrorCode::protocol_error, Certainty::indefinite, false,
      std::string{message} + ": " + std::to_string(size) + " bytes, above the limit of " + std::to_string(limit));
}

Error out_of_memory(std::string_view message) {
  return make_error(ErrorCode::internal, Certainty::indefinite, false,
                    std::string{message} + ": out of memory while decoding");
}

}  // namespace

// ---- encoding ----------------------------------------------------------------------

std::size_t encoded_size(const AppendRecordView& record) noexcept {
  std::size_t n = 0;
  if (record.timestamp) n += detail::varint_field_size(kRecordTimestamp, *record.timestamp);
  for (const HeaderView& h : record.headers) n += detail::length_field_size(kRecordHeaders, encoded_size(h));
  if (!record.body.empty()) n += detail::length_field_size(kRecordBody, record.body.size());
  return n;
}

std::size_t encoded_size(const AppendInputView& input) noexcept {
  std::size_t n = 0;
  for (const AppendRecordView& r : input.records) n += detail::length_field_size(kInputRecords, encoded_size(r));
  if (input.match_seq_num) n += detail::varint_field_size(kInputMatchSeqNum, *input.match_seq_num);
  if (input.fencing_token) n += detail::length_field_size(kInputFencingToken, input.fencing_token->size());
  return n;
}

void encode(const AppendRecordView& record, std::string& out) {
  if (record.timestamp) detail::append_varint_field(out, kRecordTimestamp, *record.timestamp);
  for (const HeaderView& h : record.headers) {
    detail::append_length_prefix(out, kRecordHeaders, encoded_size(h));
    if (!h.name.empty()) detail::append_length_field(out, kHeaderName, h.name);
    if (!h.value.empty()) detail::append_length_field(out, kHeaderValue, h.value);
  }
  if (!record.body.empty()) detail::append_length_field(out, kRecordBody, record.body);
}

void encode(const AppendInputView& input, std::string& out) {
  out.reserve(out.size() + encoded_size(input));
  for (const AppendRecordView& r : input.records) {
    detail::append_length_prefix(out, kInputRecords, encoded_size(r));
    encode(r, out);
  }
  if (input.match_seq_num) detail::append_varint_field(out, kInputMatchSeqNum, *input.match_seq_num);
  if (input.fencing_token) detail::append_length_field(out, kInputFencingToken, *input.fencing_token);
}

void encode(const AppendAck& ack, std::string& out) {
  encode_position(kAckStart, ack.start, out);
  encode_position(kAckEnd, ack.end, out);
  encode_position(kAckTail, ack.tail, out);
}

// ---- decoding ----------------------------------------------------------------------

tl::expected<AppendAck, Error> decode_append_ack(std::string_view bytes, const DecodeLimits& limits) noexcept {
  constexpr std::string_view kMessage = "AppendAck";
  try {
    if (bytes.size() > limits.max_message_bytes) {
      return tl::unexpected(too_large(kMessage, bytes.size(), limits.max_message_bytes));
    }
    Ctx ctx{bytes, limits};
    AppendAck ack;
    bool has_start = false, has_end = false, has_tail = false;
    Reader r(bytes, limits.max_group_depth);
    Field f;
    std::size_t at = r.position();
    while (r.next(f)) {
      StreamPosition* into = nullptr;
      std::string_view name;
      if (f.number == kAckStart) {
        into = &ack.start, name = "start", has_start = true;
      } else if (f.number == kAckEnd) {
        into = &ack.end, name = "end", has_end = true;
      } else if (f.number == kAckTail) {
        into = &ack.tail, name = "tail", has_tail = true;
      }
      if (into != nullptr) {
        if (!typed(ctx, f, WireType::length, name, bytes, at)) return tl::unexpected(decode_error(ctx, kMessage));
        if (!decode_position(ctx, f.payload, *into)) {
          ctx.wrap(name);
          return tl::unexpected(decode_error(ctx, kMessage));
        }
      }
      at = r.position();
    }
    if (r.error() != nullptr) {
      ctx.reader_failed("", r, bytes);
      return tl::unexpected(decode_error(ctx, kMessage));
    }
    if (!has_start || !has_end) {
      ctx.fail(!has_start ? "start" : "end", "missing (required)", bytes.size());
      return tl::unexpected(decode_error(ctx, kMessage));
    }
    if (!has_tail) ack.tail = ack.end;  // as the TypeScript SDK reads it
    return ack;
  } catch (...) {
    return tl::unexpected(out_of_memory(kMessage));
  }
}

tl::expected<ReadBatch, Error> decode_read_batch(std::string_view bytes, const DecodeLimits& limits) noexcept {
  constexpr std::string_view kMessage = "ReadBatch";
  try {
    if (bytes.size() > limits.max_message_bytes) {
      return tl::unexpected(too_large(kMessage, bytes.size(), limits.max_message_bytes));
    }
    Ctx ctx{bytes, limits};
    ReadBatch batch;
    Reader r(bytes, limits.max_group_depth);
    Field f;
    std::size_t at = r.position();
    while (r.next(f)) {
      if (f.number == kBatchRecords) {
        if (!typed(ctx, f, WireType::length, "records", bytes, at)) return tl::unexpected(decode_error(ctx, kMessage));
        const std::size_t i = batch.records.size();
        if (i >= limits.max_records) {
          ctx.fail(indexed("records", i), "more records than the limit", ctx.offset_of(bytes, at));
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        SequencedRecord record;
        if (!decode_sequenced_record(ctx, f.payload, record)) {
          ctx.wrap(indexed("records", i));
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        batch.records.push_back(std::move(record));
      } else if (f.number == kBatchTail) {
        if (!typed(ctx, f, WireType::length, "tail", bytes, at)) return tl::unexpected(decode_error(ctx, kMessage));
        if (!batch.tail) batch.tail = StreamPosition{};
        if (!decode_position(ctx, f.payload, *batch.tail)) {
          ctx.wrap("tail");
          return tl::unexpected(decode_error(ctx, kMessage));
        }
      }
      at = r.position();
    }
    if (r.error() != nullptr) {
      ctx.reader_failed("", r, bytes);
      return tl::unexpected(decode_error(ctx, kMessage));
    }
    return batch;
  } catch (...) {
    return tl::unexpected(out_of_memory(kMessage));
  }
}

tl::expected<AppendInput, Error> decode_append_input(std::string_view bytes, const DecodeLimits& limits) noexcept {
  constexpr std::string_view kMessage = "AppendInput";
  try {
    if (bytes.size() > limits.max_message_bytes) {
      return tl::unexpected(too_large(kMessage, bytes.size(), limits.max_message_bytes));
    }
    Ctx ctx{bytes, limits};
    AppendInput input;
    Reader r(bytes, limits.max_group_depth);
    Field f;
    std::size_t at = r.position();
    while (r.next(f)) {
      if (f.number == kInputRecords) {
        if (!typed(ctx, f, WireType::length, "records", bytes, at)) return tl::unexpected(decode_error(ctx, kMessage));
        const std::size_t i = input.records.size();
        if (i >= limits.max_records) {
          ctx.fail(indexed("records", i), "more records than the limit", ctx.offset_of(bytes, at));
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        AppendRecord record;
        if (!decode_append_record(ctx, f.payload, record)) {
          ctx.wrap(indexed("records", i));
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        input.records.push_back(std::move(record));
      } else if (f.number == kInputMatchSeqNum) {
        if (!typed(ctx, f, WireType::varint, "match_seq_num", bytes, at)) {
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        input.match_seq_num = f.value;
      } else if (f.number == kInputFencingToken) {
        if (!typed(ctx, f, WireType::length, "fencing_token", bytes, at)) {
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        if (!detail::is_valid_utf8(f.payload)) {
          ctx.fail("fencing_token", "not valid UTF-8 (a protobuf string)", ctx.offset_of(f.payload, 0));
          return tl::unexpected(decode_error(ctx, kMessage));
        }
        input.fencing_token = std::string{f.payload};
      }
      at = r.position();
    }
    if (r.error() != nullptr) {
      ctx.reader_failed("", r, bytes);
      return tl::unexpected(decode_error(ctx, kMessage));
    }
    return input;
  } catch (...) {
    return tl::unexpected(out_of_memory(kMessage));
  }
}

}  // namespace prodsm::s2
