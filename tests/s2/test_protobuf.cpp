// SPDX-License-Identifier: Apache-2.0
// The hand-written protobuf layer and the message decoders: varints at every boundary,
// unknown fields of every wire type skipped, malformed input a protocol_error naming
// the message, field and offset (E5), every bound enforced (R3), random bytes never UB.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "helpers.hpp"
#include "prodsm/s2/detail/protobuf.hpp"
#include "prodsm/s2/messages.hpp"

namespace {

namespace s2 = prodsm::s2;
namespace pb = prodsm::s2::detail;
using prodsm::Certainty;
using prodsm::ErrorCode;
using s2test::hex;
using s2test::unhex;

std::string varint(std::uint64_t v) {
  std::string out;
  pb::append_varint(out, v);
  return out;
}

/// Reads one varint field 1 from `bytes`; the value or the error.
std::pair<std::uint64_t, std::string> read_varint_field(std::string_view bytes) {
  pb::Reader r(bytes, 8);
  pb::Field f;
  if (!r.next(f)) return {0, r.error() != nullptr ? r.error() : "end"};
  return {f.value, ""};
}

TEST(S2CodecProtobuf, VarintsAtEveryBoundary) {
  const std::pair<std::uint64_t, std::string_view> cases[] = {
      {0, "00"},
      {1, "01"},
      {127, "7f"},
      {128, "8001"},
      {300, "ac02"},
      {16383, "ff7f"},
      {16384, "808001"},
      {(1ULL << 32) - 1, "ffffffff0f"},
      {1ULL << 63, "80808080808080808001"},
      {std::numeric_limits<std::uint64_t>::max(), "ffffffffffffffffff01"},
  };
  for (const auto& [value, expected] : cases) {
    EXPECT_EQ(hex(varint(value)), expected) << value;
    EXPECT_EQ(pb::varint_size(value), expected.size() / 2) << value;
    const auto [read, error] = read_varint_field("\x08" + varint(value));
    EXPECT_EQ(error, "") << value;
    EXPECT_EQ(read, value);
  }
}

TEST(S2CodecProtobuf, MalformedVarintsAndTagsAreErrorsNotUb) {
  EXPECT_EQ(read_varint_field(unhex("08")).second, "truncated varint");
  EXPECT_EQ(read_varint_field(unhex("08 80")).second, "truncated varint");
  EXPECT_EQ(read_varint_field(unhex("08 ffffffffffffffffff02")).second,
            "varint longer than 10 bytes or above 2^64 - 1");
  EXPECT_EQ(read_varint_field(unhex("08 ffffffffffffffffff8001")).second,
            "varint longer than 10 bytes or above 2^64 - 1");
  // An overlong (non-canonical) encoding within 10 bytes is still a valid varint.
  EXPECT_EQ(read_varint_field(unhex("08 8000")).first, 0U);
  EXPECT_EQ(read_varint_field(unhex("00 01")).second, "field number 0");
  EXPECT_EQ(read_varint_field(unhex("0e 01")).second, "wire type 6 or 7 (invalid)");
  EXPECT_EQ(read_varint_field(unhex("0f 01")).second, "wire type 6 or 7 (invalid)");
  EXPECT_EQ(read_varint_field(unhex("f8ffffff7f 00")).second, "tag above 2^32 - 1");
  EXPECT_EQ(read_varint_field(unhex("0c")).second, "end-group tag without its start-group tag");
  EXPECT_EQ(read_varint_field(unhex("09 0102")).second, "truncated fixed64 value");
  EXPECT_EQ(read_varint_field(unhex("0d 01")).second, "truncated fixed32 value");
  EXPECT_EQ(read_varint_field(unhex("0a 05 0102")).second, "length-delimited field longer than the bytes left");
  EXPECT_EQ(read_varint_field(unhex("0a ffffffffffffffffff01")).second,
            "length-delimited field longer than the bytes left");
}

TEST(S2CodecProtobuf, GroupsAreSkippedToTheirMatchingEndAndBounded) {
  // field 1 group { field 2 varint 5; field 3 group {} } then field 4 varint 9
  const std::string bytes = unhex("0b 1005 1b 1c 0c 2009");
  pb::Reader r(bytes, 8);
  pb::Field f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 1U);
  EXPECT_EQ(f.type, pb::WireType::start_group);
  EXPECT_EQ(hex(f.payload), "10051b1c");
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 4U);
  EXPECT_EQ(f.value, 9U);
  EXPECT_FALSE(r.next(f));
  EXPECT_EQ(r.error(), nullptr);

  pb::Reader mismatched(unhex("0b 14"), 8);  // start group 1, end group 2
  EXPECT_FALSE(mismatched.next(f));
  EXPECT_STREQ(mismatched.error(), "end-group tag does not match its start-group tag");
  pb::Reader unclosed(unhex("0b 1005"), 8);
  EXPECT_FALSE(unclosed.next(f));
  EXPECT_STREQ(unclosed.error(), "group not closed by its end-group tag");
  std::string deep;
  for (int i = 0; i < 9; ++i) deep += "\x0b";
  for (int i = 0; i < 9; ++i) deep += "\x0c";
  pb::Reader too_deep(deep, 8);
  EXPECT_FALSE(too_deep.next(f));
  EXPECT_STREQ(too_deep.error(), "groups nested deeper than the limit");
  pb::Reader deep_ok(deep, 9);
  EXPECT_TRUE(deep_ok.next(f));
}

TEST(S2CodecProtobuf, Utf8CheckFollowsRfc3629) {
  EXPECT_TRUE(pb::is_valid_utf8(""));
  EXPECT_TRUE(pb::is_valid_utf8("plain ascii"));
  EXPECT_TRUE(pb::is_valid_utf8("\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(pb::is_valid_utf8("\xff"));
  EXPECT_FALSE(pb::is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(pb::is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(pb::is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(pb::is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(pb::is_valid_utf8("\x80"));              // continuation first
}

// ---- AppendAck ----------------------------------------------------------------------

TEST(S2CodecMessages, AppendAckDecodesWithTailDefaultingToEnd) {
  const auto ack = s2::decode_append_ack(unhex("0a 0408011002 12 0408031004 1a 0408051006"));
  ASSERT_TRUE(ack) << ack.error().describe();
  EXPECT_EQ(ack->start, (s2::StreamPosition{1, 2}));
  EXPECT_EQ(ack->end, (s2::StreamPosition{3, 4}));
  EXPECT_EQ(ack->tail, (s2::StreamPosition{5, 6}));
  const auto no_tail = s2::decode_append_ack(unhex("0a 00 12 020803"));
  ASSERT_TRUE(no_tail);
  EXPECT_EQ(no_tail->start, (s2::StreamPosition{0, 0}));
  EXPECT_EQ(no_tail->tail, no_tail->end);
}

TEST(S2CodecMessages, AppendAckSkipsUnknownFieldsOfEveryWireType) {
  // Unknown fields at both levels: varint (9), fixed64 (10), length (11), group (12),
  // fixed32 (13), interleaved with the known ones.
  const std::string unknown = unhex("48 96 01") + unhex("51 0102030405060708") + unhex("5a 03 616263") +
                              unhex("63 0801 64") + unhex("6d 01020304");
  const std::string start = unknown + unhex("0807") + unknown + unhex("1008");
  std::string bytes = unknown;
  bytes += '\x0a';
  bytes += static_cast<char>(start.size());
  bytes += start;
  bytes += unknown + unhex("12 02 0809") + unknown;
  const auto ack = s2::decode_append_ack(bytes);
  ASSERT_TRUE(ack) << ack.error().describe();
  EXPECT_EQ(ack->start, (s2::StreamPosition{7, 8}));
  EXPECT_EQ(ack->end, (s2::StreamPosition{9, 0}));
}

TEST(S2CodecMessages, AppendAckRepeatedFieldsMergeAndLastScalarWins) {
  // start given twice: {seq 1, ts 2} then {seq 3}: merged to {3, 2} (protobuf merge).
  const auto ack = s2::decode_append_ack(unhex("0a 0408011002 0a 020803 12 02 0805 12 02 0806"));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->start, (s2::StreamPosition{3, 2}));
  EXPECT_EQ(ack->end, (s2::StreamPosition{6, 0}));
}

TEST(E5, MalformedAppendAckIsAProtocolErrorNamingFieldAndOffset) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"", "AppendAck.start: missing (required) at offset 0"},
      {"0a00", "AppendAck.end: missing (required) at offset 2"},
      {"0801 1200", "AppendAck.start: wrong wire type (expected length-delimited) at offset 0"},
      {"0a 02 0801 12 02 1001 0a 01 80", "AppendAck.start: truncated varint at offset 10"},
      {"0a 03 0d0102", "AppendAck.start: truncated fixed32 value at offset 3"},
      {"0a 02 1200 1200", "AppendAck.start.timestamp: wrong wire type (expected varint) at offset 2"},
      {"0a 05 0801", "AppendAck: length-delimited field longer than the bytes left at offset 1"},
      {"ff", "AppendAck: truncated varint at offset 0"},
  };
  for (const auto& [bytes, message] : cases) {
    const auto ack = s2::decode_append_ack(unhex(bytes));
    ASSERT_FALSE(ack) << bytes;
    EXPECT_EQ(ack.error().code, ErrorCode::protocol_error);
    EXPECT_EQ(ack.error().certainty, Certainty::indefinite);
    EXPECT_FALSE(ack.error().retryable);
    EXPECT_EQ(ack.error().message, message) << bytes;
  }
}

TEST(R3, DecodersBoundMessageSizeRecordsHeadersAndGroups) {
  s2::DecodeLimits limits;
  limits.max_message_bytes = 4;
  EXPECT_EQ(s2::decode_append_ack(unhex("0a00 1200 1a00"), limits).error().message,
            "AppendAck: 6 bytes, above the limit of 4");

  limits = {};
  limits.max_records = 2;
  const std::string three = unhex("0a00 0a00 0a00");
  EXPECT_EQ(s2::decode_read_batch(three, limits).error().message,
            "ReadBatch.records[2]: more records than the limit at offset 4");
  EXPECT_EQ(s2::decode_append_input(three, limits).error().message,
            "AppendInput.records[2]: more records than the limit at offset 4");
  EXPECT_TRUE(s2::decode_read_batch(unhex("0a00 0a00")));

  limits = {};
  limits.max_headers = 2;
  // Two records of two headers each: the third header overall is refused.
  const std::string record = unhex("12 00 12 00");
  std::string batch = "\x0a\x04" + record + "\x0a\x04" + record;
  EXPECT_EQ(s2::decode_append_input(batch, limits).error().message,
            "AppendInput.records[1].headers[0]: more headers than the limit at offset 10");

  limits = {};
  limits.max_group_depth = 1;
  EXPECT_EQ(s2::decode_append_ack(unhex("0a00 1200 0b 0b 0c 0c"), limits).error().message,
            "AppendAck: groups nested deeper than the limit at offset 5");
}

// ---- ReadBatch and AppendInput ----------------------------------------------------

TEST(S2CodecMessages, ReadBatchDecodesRecordsHeadersAndTail) {
  // record {seq 5, ts 9, header {"", "fence"}, body "tok"}, record {seq 6}, tail {7, 9}
  const std::string r1 = unhex("0805 1009 1a 07 1205 66656e6365 22 03 746f6b");
  std::string bytes = "\x0a" + std::string(1, static_cast<char>(r1.size())) + r1 + unhex("0a 02 0806 12 04 08071009");
  const auto batch = s2::decode_read_batch(bytes);
  ASSERT_TRUE(batch) << batch.error().describe();
  ASSERT_EQ(batch->records.size(), 2U);
  EXPECT_EQ(batch->records[0].seq_num, 5U);
  EXPECT_EQ(batch->records[0].timestamp, 9U);
  ASSERT_EQ(batch->records[0].headers.size(), 1U);
  EXPECT_EQ(batch->records[0].headers[0], (s2::Header{"", "fence"}));
  EXPECT_EQ(batch->records[0].body, "tok");
  EXPECT_EQ(batch->records[1].seq_num, 6U);
  EXPECT_EQ(batch->tail, (s2::StreamPosition{7, 9}));
  const auto malformed = s2::decode_read_batch(unhex("0a 03 22 05 61"));
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().message,
            "ReadBatch.records[0]: length-delimited field longer than the bytes left at offset 3");
}

TEST(S2CodecMessages, AppendInputRoundTripsThroughEncode) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    const std::size_t n = 1 + rng() % 6;
    std::vector<std::vector<s2::HeaderView>> headers(n);
    std::vector<std::string> storage;
    storage.reserve(4 * n * 8);
    std::vector<s2::AppendRecordView> records(n);
    auto bytes_of = [&](std::size_t max) -> std::string_view {
      std::string s(rng() % (max + 1), '\0');
      for (char& c : s) c = static_cast<char>(rng());
      storage.push_back(std::move(s));
      return storage.back();
    };
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t h = rng() % 3; h > 0; --h) headers[i].push_back({bytes_of(5), bytes_of(5)});
      records[i].headers = headers[i];
      records[i].body = bytes_of(300);
      if (rng() % 2) records[i].timestamp = rng() >> (rng() % 64);
    }
    s2::AppendInputView input{records, std::nullopt, std::nullopt};
    if (rng() % 2) input.match_seq_num = rng() >> (rng() % 64);
    if (rng() % 2) input.fencing_token = std::string_view{"tok-\xc3\xbc"}.substr(0, rng() % 7 == 0 ? 0 : 6);
    std::string encoded;
    s2::encode(input, encoded);
    ASSERT_EQ(encoded.size(), s2::encoded_size(input));
    const auto decoded = s2::decode_append_input(encoded);
    ASSERT_TRUE(decoded) << decoded.error().describe();
    ASSERT_EQ(decoded->records.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(decoded->records[i].body, records[i].body);
      EXPECT_EQ(decoded->records[i].timestamp, records[i].timestamp);
      ASSERT_EQ(decoded->records[i].headers.size(), headers[i].size());
      for (std::size_t h = 0; h < headers[i].size(); ++h) {
        EXPECT_EQ(decoded->records[i].headers[h].name, headers[i][h].name);
        EXPECT_EQ(decoded->records[i].headers[h].value, headers[i][h].value);
      }
    }
    EXPECT_EQ(decoded->match_seq_num, input.match_seq_num);
    EXPECT_EQ(decoded->fencing_token.has_value(), input.fencing_token.has_value());
    if (input.fencing_token) {
      EXPECT_EQ(*decoded->fencing_token, *input.fencing_token);
    }
  }
}

TEST(S2CodecMessages, AppendInputWithInvalidUtf8TokenIsRefused) {
  const auto input = s2::decode_append_input(unhex("0a00 1a 01 ff"));
  ASSERT_FALSE(input);
  EXPECT_EQ(input.error().message, "AppendInput.fencing_token: not valid UTF-8 (a protobuf string) at offset 4");
}

TEST(S2CodecMessages, AppendAckEncodeIsWhatS2Writes) {
  std::string out;
  s2::encode(s2::AppendAck{{0, 0}, {3, 1700000000005}, {3, 1700000000005}}, out);
  EXPECT_EQ(hex(out),
            "0a00"
            "1209"
            "0803"
            "1085d095ffbc31"
            "1a09"
            "0803"
            "1085d095ffbc31");
  EXPECT_EQ(*s2::decode_append_ack(out), (s2::AppendAck{{0, 0}, {3, 1700000000005}, {3, 1700000000005}}));
}

TEST(D4, RandomBytesNeverCrashTheDecoders) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? (rng() % 8) : rng());
    const auto ack = s2::decode_append_ack(bytes);
    if (!ack) {
      EXPECT_FALSE(ack.error().message.empty());
    }
    const auto batch = s2::decode_read_batch(bytes);
    if (!batch) {
      EXPECT_FALSE(batch.error().message.empty());
    }
    const auto input = s2::decode_append_input(bytes);
    if (!input) {
      EXPECT_FALSE(input.error().message.empty());
    }
  }
}

}  // namespace
