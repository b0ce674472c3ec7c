// SPDX-License-Identifier: Apache-2.0
// The Kafka wire subset (kafka_wire.hpp) on byte scripts: a ProduceRequest captured from
// librdkafka 2.0.2, hand-built frames, and every refusal. These bytes are how the driver
// observes a `send` (first_ticket, count, body, stamps: S1, P2, B5), so a misread here
// would be a wrong verdict there.
#include "kafka_wire.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kw = prodsm::kafka_wire;

namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

/// ProduceRequest v7 as librdkafka 2.0.2 sent it to the driver's proxy (idempotent,
/// three records "a", "", "bcd" with CreateTime 1600000000000 + ticket).
const std::string kLibrdkafkaProduce = from_hex(
    "000000890000000700000005000772646b61666b61ffffffff000dbba000000001000870726f64736d2d3100000001000000000000"
    "005600000000000000000000004a00000000025916295900000000000200000174876e800000000174876e80020000000018fbcc38"
    "000000000000000000030e000000010261000c00020201000012000404010662636400");

template <class T>
T ok(const kw::Parsed<T>& p) {
  if (const auto* e = std::get_if<kw::WireError>(&p)) ADD_FAILURE() << e->message;
  return std::get<T>(p);
}

template <class T>
std::string error_of(const kw::Parsed<T>& p) {
  const auto* e = std::get_if<kw::WireError>(&p);
  return e == nullptr ? std::string{} : e->message;
}

}  // namespace

// S1, P2: the stamps and records of a real librdkafka ProduceRequest.
TEST(KafkaWire, DecodesAProduceRequestLibrdkafkaSent) {
  const auto& p = ok(kw::parse_produce_request(kLibrdkafkaProduce));
  EXPECT_EQ(p.header.api_key, kw::kApiProduce);
  EXPECT_EQ(p.header.api_version, 7);
  EXPECT_EQ(p.header.correlation_id, 5);
  EXPECT_FALSE(p.transactional_id.has_value());
  EXPECT_EQ(p.acks, -1);
  EXPECT_EQ(p.timeout_ms, 900000);
  ASSERT_EQ(p.topics.size(), 1U);
  EXPECT_EQ(p.topics[0].name, "prodsm-1");
  ASSERT_EQ(p.topics[0].partitions.size(), 1U);
  EXPECT_EQ(p.topics[0].partitions[0].partition, 0);
  ASSERT_EQ(p.topics[0].partitions[0].batches.size(), 1U);
  const auto& b = p.topics[0].partitions[0].batches[0];
  EXPECT_EQ(b.producer_id, 419155000);
  EXPECT_EQ(b.producer_epoch, 0);
  EXPECT_EQ(b.base_sequence, 0);
  EXPECT_EQ(b.last_offset_delta, 2);
  ASSERT_EQ(b.records.size(), 3U);
  EXPECT_EQ(b.records[0].value, std::optional<std::string>("a"));
  EXPECT_EQ(b.records[1].value, std::optional<std::string>(""));  // empty, not null
  EXPECT_EQ(b.records[2].value, std::optional<std::string>("bcd"));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.records[i].timestamp_ms, 1600000000000 + static_cast<std::int64_t>(i));
    EXPECT_EQ(b.records[i].offset_delta, static_cast<std::int32_t>(i));
    EXPECT_FALSE(b.records[i].key.has_value());
  }
}

TEST(KafkaWire, FramesOnlyCompleteFrames) {
  EXPECT_FALSE(ok(kw::frame_size(kLibrdkafkaProduce.substr(0, 3), 1 << 20)).has_value());
  EXPECT_FALSE(ok(kw::frame_size(kLibrdkafkaProduce.substr(0, 100), 1 << 20)).has_value());
  EXPECT_EQ(ok(kw::frame_size(kLibrdkafkaProduce + "tail", 1 << 20)), std::optional<std::size_t>(141));
  EXPECT_NE(error_of(kw::frame_size(kLibrdkafkaProduce, 100)), "");                  // above the limit
  EXPECT_NE(error_of(kw::frame_size(std::string("\xff\xff\xff\xff", 4), 100)), "");  // negative
}

TEST(KafkaWire, ReadsRequestAndResponseHeaders) {
  const auto& h = ok(kw::parse_request_header(kLibrdkafkaProduce));
  EXPECT_EQ(h.api_key, 0);
  EXPECT_EQ(h.api_version, 7);
  EXPECT_EQ(h.correlation_id, 5);
  EXPECT_EQ(ok(kw::parse_response_correlation_id(std::string("\0\0\0\4\0\0\1\2", 8))), 258);
  EXPECT_NE(error_of(kw::parse_request_header(std::string("\0\0\0\2\0\0", 6))), "");
}

// The driver's own encoder and the decoder agree (the tests' frames below use it).
TEST(KafkaWire, RoundTripsAnEncodedRequest) {
  kw::ProduceRequest p;
  p.header = {kw::kApiProduce, 7, 42};
  p.acks = -1;
  p.timeout_ms = 30000;
  kw::RecordBatch b;
  b.base_timestamp_ms = 1000;
  b.producer_id = 7;
  b.producer_epoch = 3;
  b.base_sequence = 12;
  b.last_offset_delta = 1;
  b.records.push_back({1000, 0, std::nullopt, std::string("x"), 0});
  b.records.push_back({1001, 1, std::string("k"), std::nullopt, 0});
  p.topics.push_back({"t", {{0, {b}}}});
  const std::string frame = kw::encode_produce_request(p, "client");
  const auto& q = ok(kw::parse_produce_request(frame));
  EXPECT_EQ(q.header.correlation_id, 42);
  const auto& qb = q.topics.at(0).partitions.at(0).batches.at(0);
  EXPECT_EQ(qb.producer_epoch, 3);
  EXPECT_EQ(qb.base_sequence, 12);
  EXPECT_EQ(qb.records.at(0).value, std::optional<std::string>("x"));
  EXPECT_EQ(qb.records.at(1).key, std::optional<std::string>("k"));
  EXPECT_FALSE(qb.records.at(1).value.has_value());  // null value
  EXPECT_EQ(qb.records.at(1).timestamp_ms, 1001);
}

TEST(KafkaWire, RefusesACorruptedBatch) {
  std::string bad = kLibrdkafkaProduce;
  bad[bad.size() - 3] ^= 0x01;  // a record byte: the CRC-32C no longer matches
  EXPECT_NE(error_of(kw::parse_produce_request(bad)).find("CRC"), std::string::npos);
}

TEST(KafkaWire, RefusesWhatItCannotRead) {
  // Truncated anywhere.
  for (std::size_t n : {20U, 60U, 100U, 140U}) {
    std::string cut = kLibrdkafkaProduce.substr(0, n);
    EXPECT_NE(error_of(kw::parse_produce_request(cut)), "") << n;
  }
  // Flexible (v9) and pre-RecordBatch (v2) versions.
  std::string v9 = kLibrdkafkaProduce;
  v9[7] = 9;
  EXPECT_NE(error_of(kw::parse_produce_request(v9)).find("version 9"), std::string::npos);
  // A compressed batch.
  kw::ProduceRequest p;
  p.header = {kw::kApiProduce, 7, 1};
  kw::RecordBatch b;
  b.attributes = 1;  // gzip
  b.records.push_back({0, 0, std::nullopt, std::string("x"), 0});
  p.topics.push_back({"t", {{0, {b}}}});
  EXPECT_NE(error_of(kw::parse_produce_request(kw::encode_produce_request(p, "c"))).find("compressed"),
            std::string::npos);
  // Trailing bytes.
  std::string longer = kLibrdkafkaProduce + "x";
  longer[3] = static_cast<char>(longer[3] + 1);
  EXPECT_NE(error_of(kw::parse_produce_request(longer)), "");
}

// The answers the harness decides, byte for byte (ProduceResponse v7: header, one topic,
// one partition, throttle time).
TEST(KafkaWire, EncodesProduceResponses) {
  const std::string ack = kw::encode_produce_response(5, 7, "t", {{0, kw::kErrNone, 100, -1, 0}});
  EXPECT_EQ(ack, from_hex("00000031"  // size 49
                          "00000005"  // correlation id
                          "00000001"
                          "0001"
                          "74"  // one topic "t"
                          "00000001"
                          "00000000"          // one partition: 0
                          "0000"              // error code
                          "0000000000000064"  // base offset 100
                          "ffffffffffffffff"  // log append time -1
                          "0000000000000000"  // log start offset 0
                          "00000000"));       // throttle time
  const std::string err = kw::encode_produce_response(9, 3, "t", {{0, kw::kErrNotEnoughReplicas, -1, -1, -1}});
  EXPECT_EQ(err.substr(4, 4), from_hex("00000009"));
  EXPECT_EQ(err.size(), 4U + 4 + 4 + 3 + 4 + 4 + 2 + 8 + 8 + 4);  // v3: no log start offset
  EXPECT_EQ(err.substr(23, 2), from_hex("0013"));                 // NOT_ENOUGH_REPLICAS (19)
}

TEST(KafkaWire, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(kw::crc32c("123456789"), 0xE3069283U);
}
