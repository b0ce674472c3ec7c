// SPDX-License-Identifier: Apache-2.0
// The Kafka wire subset of kafka_wire.hpp: bounds-checked big-endian and zigzag-varint
// reading, ProduceRequest v3..v8 + RecordBatch v2 decoding, ProduceResponse encoding.
#include "kafka_wire.hpp"

#include <array>
#include <limits>

namespace prodsm::kafka_wire {
namespace {

/// A cursor over bytes that records the first failure instead of throwing.
class Reader {
 public:
  Reader(std::string_view bytes, const char* what) : bytes_{bytes}, what_{what} {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::size_t position() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }

  std::int8_t i8() { return static_cast<std::int8_t>(u(1)); }
  std::int16_t i16() { return static_cast<std::int16_t>(u(2)); }
  std::int32_t i32() { return static_cast<std::int32_t>(u(4)); }
  std::int64_t i64() { return static_cast<std::int64_t>(u(8)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u(4)); }

  /// Unsigned LEB128 up to `max_bytes` bytes.
  std::uint64_t uvarint(int max_bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (!need(1)) return 0;
      const auto b = static_cast<std::uint8_t>(bytes_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return v;
    }
    fail("varint longer than " + std::to_string(max_bytes) + " bytes");
    return 0;
  }
  /// Zigzag varint (int32 range).
  std::int32_t varint() {
    const std::uint64_t z = uvarint(5);
    const auto v = static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) {
      fail("varint out of int32 range");
      return 0;
    }
    return static_cast<std::int32_t>(v);
  }
  /// Zigzag varlong (int64).
  std::int64_t varlong() {
    const std::uint64_t z = uvarint(10);
    return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
  }

  std::string_view bytes(std::size_t n) {
    if (!need(n)) return {};
    const auto out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  /// int16-length string; -1 = null.
  std::optional<std::string> nullable_string() {
    const std::int16_t n = i16();
    if (!ok() || n == -1) return std::nullopt;
    if (n < 0) {
      fail("negative string length");
      return std::nullopt;
    }
    return std::string(bytes(static_cast<std::size_t>(n)));
  }
  std::string string() {
    auto s = nullable_string();
    if (ok() && !s) fail("null where a string is required");
    return s.value_or(std::string{});
  }
  /// A varint-length byte field of a record; -1 = null.
  std::optional<std::string> varint_bytes() {
    const std::int32_t n = varint();
    if (!ok() || n == -1) return std::nullopt;
    if (n < 0) {
      fail("negative record field length");
      return std::nullopt;
    }
    return std::string(bytes(static_cast<std::size_t>(n)));
  }
  /// An int32 array count, refused when it cannot fit the bytes left (each element
  /// takes at least `min_element_bytes`).
  std::size_t count(std::size_t min_element_bytes) {
    const std::int32_t n = i32();
    if (!ok()) return 0;
    if (n < 0) {
      fail("negative array count");
      return 0;
    }
    if (static_cast<std::size_t>(n) > remaining() / std::max<std::size_t>(min_element_bytes, 1)) {
      fail("array count " + std::to_string(n) + " larger than the bytes left");
      return 0;
    }
    return static_cast<std::size_t>(n);
  }

  void fail(const std::string& why) {
    if (error_.empty()) error_ = std::string(what_) + ": " + why + " at byte " + std::to_string(pos_);
  }

 private:
  bool need(std::size_t n) {
    if (!ok()) return false;
    if (remaining() < n) {
      fail("truncated (" + std::to_string(n) + " bytes needed, " + std::to_string(remaining()) + " left)");
      return false;
    }
    return true;
  }
  std::uint64_t u(std::size_t n) {
    if (!need(n)) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(bytes_[pos_ + i]);
    pos_ += n;
    return v;
  }

  std::string_view bytes_;
  const char* what_;
  std::size_t pos_ = 0;
  std::string error_;
};

class Writer {
 public:
  void i8(std::int8_t v) { u(static_cast<std::uint8_t>(v), 1); }
  void i16(std::int16_t v) { u(static_cast<std::uint16_t>(v), 2); }
  void i32(std::int32_t v) { u(static_cast<std::uint32_t>(v), 4); }
  void i64(std::int64_t v) { u(static_cast<std::uint64_t>(v), 8); }
  void uvarint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void varlong(std::int64_t v) { uvarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63)); }
  void nullable_string(const std::optional<std::string>& s) {
    if (!s) {
      i16(-1);
      return;
    }
    i16(static_cast<std::int16_t>(s->size()));
    out += *s;
  }
  void varint_bytes(const std::optional<std::string>& s) {
    if (!s) {
      varlong(-1);
      return;
    }
    varlong(static_cast<std::int64_t>(s->size()));
    out += *s;
  }
  std::string out;

 private:
  void u(std::uint64_t v, std::size_t n) {
    for (std::size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
};

std::string framed(std::string body) {
  Writer w;
  w.i32(static_cast<std::int32_t>(body.size()));
  return w.out + body;
}

constexpr std::size_t kBatchHeaderBytes = 61;  ///< RecordBatch v2 header, base offset to record count

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFU;
  for (const char ch : bytes) crc = table[(crc ^ static_cast<std::uint8_t>(ch)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

Parsed<std::optional<std::size_t>> frame_size(std::string_view buffered, std::size_t max_frame_bytes) {
  if (buffered.size() < 4) return std::optional<std::size_t>{};
  Reader r(buffered, "frame");
  const std::int32_t n = r.i32();
  if (n < 0 || static_cast<std::size_t>(n) > max_frame_bytes) {
    return WireError{"frame: declared size " + std::to_string(n) + " outside 0.." + std::to_string(max_frame_bytes)};
  }
  const std::size_t total = 4 + static_cast<std::size_t>(n);
  if (buffered.size() < total) return std::optional<std::size_t>{};
  return std::optional<std::size_t>{total};
}

Parsed<RequestHeader> parse_request_header(std::string_view frame) {
  Reader r(frame, "request header");
  r.i32();
  RequestHeader h;
  h.api_key = r.i16();
  h.api_version = r.i16();
  h.correlation_id = r.i32();
  if (!r.ok()) return WireError{r.error()};
  return h;
}

Parsed<std::int32_t> parse_response_correlation_id(std::string_view frame) {
  Reader r(frame, "response header");
  r.i32();
  const std::int32_t id = r.i32();
  if (!r.ok()) return WireError{r.error()};
  return id;
}

Parsed<std::vector<RecordBatch>> parse_record_batches(std::string_view records) {
  std::vector<RecordBatch> out;
  std::size_t at = 0;
  while (at < records.size()) {
    Reader r(records.substr(at), "RecordBatch");
    RecordBatch b;
    b.base_offset = r.i64();
    const std::int32_t batch_length = r.i32();
    if (!r.ok()) return WireError{r.error()};
    if (batch_length < static_cast<std::int32_t>(kBatchHeaderBytes - 12) ||
        static_cast<std::size_t>(batch_length) > r.remaining()) {
      return WireError{"RecordBatch: batch length " + std::to_string(batch_length) + " does not fit the " +
                       std::to_string(r.remaining()) + " bytes left"};
    }
    const std::string_view rest = records.substr(at + 12, static_cast<std::size_t>(batch_length));
    Reader b_r(rest, "RecordBatch");
    b_r.i32();  // partition leader epoch
    const std::int8_t magic = b_r.i8();
    if (magic != 2) return WireError{"RecordBatch: magic " + std::to_string(magic) + ", only 2 is read"};
    const std::uint32_t crc = b_r.u32();
    if (crc32c(rest.substr(9)) != crc) return WireError{"RecordBatch: CRC-32C mismatch"};
    b.attributes = b_r.i16();
    if ((b.attributes & 0x7) != 0) {
      return WireError{"RecordBatch: compressed (codec " + std::to_string(b.attributes & 0x7) +
                       "); the driver sets compression.codec=none"};
    }
    b.last_offset_delta = b_r.i32();
    b.base_timestamp_ms = b_r.i64();
    b_r.i64();  // max timestamp
    b.producer_id = b_r.i64();
    b.producer_epoch = b_r.i16();
    b.base_sequence = b_r.i32();
    const std::size_t n = b_r.count(7);  // a record takes at least 7 bytes
    for (std::size_t i = 0; i < n && b_r.ok(); ++i) {
      const std::int32_t length = b_r.varint();
      if (!b_r.ok()) break;
      if (length < 0 || static_cast<std::size_t>(length) > b_r.remaining()) {
        b_r.fail("record length " + std::to_string(length) + " does not fit");
        break;
      }
      Reader rr(b_r.bytes(static_cast<std::size_t>(length)), "Record");
      Record rec;
      rr.i8();  // attributes
      rec.timestamp_ms = b.base_timestamp_ms + rr.varlong();
      rec.offset_delta = rr.varint();
      rec.key = rr.varint_bytes();
      rec.value = rr.varint_bytes();
      const std::int32_t headers = rr.varint();
      if (headers < 0) rr.fail("negative header count");
      for (std::int32_t k = 0; k < headers && rr.ok(); ++k) {
        rr.varint_bytes();
        rr.varint_bytes();
      }
      rec.header_count = headers > 0 ? static_cast<std::size_t>(headers) : 0;
      if (rr.ok() && rr.remaining() != 0) rr.fail(std::to_string(rr.remaining()) + " bytes after the last field");
      if (!rr.ok()) return WireError{rr.error()};
      b.records.push_back(std::move(rec));
    }
    if (!b_r.ok()) return WireError{b_r.error()};
    if (b_r.remaining() != 0) {
      return WireError{"RecordBatch: " + std::to_string(b_r.remaining()) + " bytes after record " + std::to_string(n)};
    }
    out.push_back(std::move(b));
    at += 12 + static_cast<std::size_t>(batch_length);
  }
  return out;
}

Parsed<ProduceRequest> parse_produce_request(std::string_view frame) {
  Reader r(frame, "ProduceRequest");
  r.i32();
  ProduceRequest p;
  p.header.api_key = r.i16();
  p.header.api_version = r.i16();
  p.header.correlation_id = r.i32();
  r.nullable_string();  // client id (request header v1)
  if (!r.ok()) return WireError{r.error()};
  if (p.header.api_key != kApiProduce) return WireError{"ProduceRequest: api key " + std::to_string(p.header.api_key)};
  if (p.header.api_version < 3 || p.header.api_version > 8) {
    return WireError{"ProduceRequest: version " + std::to_string(p.header.api_version) + ", only 3..8 are read"};
  }
  p.transactional_id = r.nullable_string();
  p.acks = r.i16();
  p.timeout_ms = r.i32();
  const std::size_t topics = r.count(6);
  for (std::size_t t = 0; t < topics && r.ok(); ++t) {
    TopicData td;
    td.name = r.string();
    const std::size_t parts = r.count(8);
    for (std::size_t k = 0; k < parts && r.ok(); ++k) {
      PartitionData pd;
      pd.partition = r.i32();
      const std::int32_t size = r.i32();
      if (!r.ok()) break;
      if (size == -1) {  // null records
        td.partitions.push_back(std::move(pd));
        continue;
      }
      if (size < 0) {
        r.fail("negative records size");
        break;
      }
      const std::string_view records = r.bytes(static_cast<std::size_t>(size));
      if (!r.ok()) break;
      auto batches = parse_record_batches(records);
      if (auto* e = std::get_if<WireError>(&batches)) return *e;
      pd.batches = std::move(std::get<std::vector<RecordBatch>>(batches));
      td.partitions.push_back(std::move(pd));
    }
    p.topics.push_back(std::move(td));
  }
  if (!r.ok()) return WireError{r.error()};
  if (r.remaining() != 0) return WireError{"ProduceRequest: " + std::to_string(r.remaining()) + " trailing bytes"};
  return p;
}

std::string encode_produce_response(std::int32_t correlation_id, std::int16_t version, std::string_view topic,
                                    const std::vector<PartitionResponse>& partitions, std::int32_t throttle_time_ms) {
  Writer w;
  w.i32(correlation_id);  // response header v0
  w.i32(1);
  w.nullable_string(std::string(topic));
  w.i32(static_cast<std::int32_t>(partitions.size()));
  for (const auto& p : partitions) {
    w.i32(p.partition);
    w.i16(p.error_code);
    w.i64(p.base_offset);
    if (version >= 2) w.i64(p.log_append_time_ms);
    if (version >= 5) w.i64(p.log_start_offset);
    if (version >= 8) {
      w.i32(0);   // record_errors: none
      w.i16(-1);  // error_message: null
    }
  }
  if (version >= 1) w.i32(throttle_time_ms);
  return framed(std::move(w.out));
}

std::string encode_record_batch(const RecordBatch& batch) {
  Writer records;
  for (const auto& rec : batch.records) {
    Writer one;
    one.i8(0);
    one.varlong(rec.timestamp_ms - batch.base_timestamp_ms);
    one.varlong(rec.offset_delta);
    one.varint_bytes(rec.key);
    one.varint_bytes(rec.value);
    one.varlong(0);  // no headers
    records.varlong(static_cast<std::int64_t>(one.out.size()));
    records.out += one.out;
  }
  Writer after_crc;  // attributes .. records: what the CRC covers
  after_crc.i16(batch.attributes);
  after_crc.i32(batch.last_offset_delta);
  after_crc.i64(batch.base_timestamp_ms);
  std::int64_t max_ts = batch.base_timestamp_ms;
  for (const auto& rec : batch.records) max_ts = std::max(max_ts, rec.timestamp_ms);
  after_crc.i64(max_ts);
  after_crc.i64(batch.producer_id);
  after_crc.i16(batch.producer_epoch);
  after_crc.i32(batch.base_sequence);
  after_crc.i32(static_cast<std::int32_t>(batch.records.size()));
  after_crc.out += records.out;
  Writer w;
  w.i64(batch.base_offset);
  w.i32(static_cast<std::int32_t>(4 + 1 + 4 + after_crc.out.size()));
  w.i32(-1);  // partition leader epoch
  w.i8(2);
  w.i32(static_cast<std::int32_t>(crc32c(after_crc.out)));
  return w.out + after_crc.out;
}

std::string encode_produce_request(const ProduceRequest& request, std::string_view client_id) {
  Writer w;
  w.i16(request.header.api_key);
  w.i16(request.header.api_version);
  w.i32(request.header.correlation_id);
  w.nullable_string(std::string(client_id));
  w.nullable_string(request.transactional_id);
  w.i16(request.acks);
  w.i32(request.timeout_ms);
  w.i32(static_cast<std::int32_t>(request.topics.size()));
  for (const auto& t : request.topics) {
    w.nullable_string(t.name);
    w.i32(static_cast<std::int32_t>(t.partitions.size()));
    for (const auto& p : t.partitions) {
      w.i32(p.partition);
      std::string records;
      for (const auto& b : p.batches) records += encode_record_batch(b);
      w.i32(static_cast<std::int32_t>(records.size()));
      w.out += records;
    }
  }
  return framed(std::move(w.out));
}

}  // namespace prodsm::kafka_wire
