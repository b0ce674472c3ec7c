// SPDX-License-Identifier: Apache-2.0
// S2 records: the framed record format, S2's metering (the policy's meter equals S2's
// for every framed record), the fence and trim commands, and the policy's checks at
// submit (B4) and of its options (B3).
#include <gtest/gtest.h>

#include <random>

#include "helpers.hpp"
#include "prodsm/s2.hpp"
#include "prodsm/s2/records.hpp"

namespace {

namespace s2 = prodsm::s2;
using prodsm::S2Config;
using prodsm::S2Policy;
using prodsm::S2Producer;
using s2test::as_bytes;
using s2test::hex;
using s2test::unhex;

S2Policy framed_policy() {
  S2Policy::Options o;
  o.record_format = S2Policy::RecordFormat::framed;
  return S2Policy{o};
}

TEST(S2CodecRecords, FramedLayoutIsCountThenLengthPrefixedHeadersThenBody) {
  const s2::HeaderView headers[] = {{"content-type", "text/plain"}, {"k", ""}};
  const auto framed = s2::frame_record(headers, "body");
  ASSERT_TRUE(framed) << framed.error();
  EXPECT_EQ(hex(*framed),
            "02"
            "0c" +
                hex("content-type") + "0a" + hex("text/plain") + "01" + hex("k") + "00" + hex("body"));
  const auto parsed = s2::FramedRecord::parse(*framed);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->header_count(), 2U);
  EXPECT_EQ(parsed->header(0).name, "content-type");
  EXPECT_EQ(parsed->header(0).value, "text/plain");
  EXPECT_EQ(parsed->header(1).name, "k");
  EXPECT_EQ(parsed->header(1).value, "");
  EXPECT_EQ(parsed->body(), "body");
  EXPECT_EQ(hex(s2::frame_body("ab")), "006162");
}

TEST(S2CodecRecords, FramingLimitsAreNamed) {
  std::vector<s2::HeaderView> many(256, s2::HeaderView{"n", "v"});
  EXPECT_EQ(s2::frame_record(many, "").error(), "framed record: 256 headers, at most 255");
  const std::string long_value(256, 'x');
  const s2::HeaderView one[] = {{"n", long_value}};
  EXPECT_EQ(s2::frame_record(one, "").error(), "framed record: header 0 has a name or value longer than 255 bytes");
  many.resize(255);
  EXPECT_TRUE(s2::frame_record(many, ""));
}

TEST(B4, InvalidFramedRecordsAreRefusedAsS2WouldRefuseThem) {
  const std::pair<std::string, std::string_view> cases[] = {
      {"", "incomplete framed record: a header count or length runs past its end"},
      {unhex("01"), "incomplete framed record: a header count or length runs past its end"},
      {unhex("01 02 61"), "incomplete framed record: a header count or length runs past its end"},
      {unhex("01 01 61 05 6162"), "incomplete framed record: a header count or length runs past its end"},
      {unhex("01 00 00"), "unknown command record: one header with an empty name must have the value fence or trim"},
      {unhex("01 00 03 666f6f"),
       "unknown command record: one header with an empty name must have the value fence or trim"},
      {unhex("02 0161 00 00 00"), "empty header name (allowed only as the single header of a command record)"},
      {unhex("01 00 05 66656e6365") + std::string(37, 't'), "fence command: token longer than 36 bytes"},
      {unhex("01 00 05 66656e6365 ff"), "fence command: token is not valid UTF-8"},
      {unhex("01 00 04 7472696d 0102"), "trim command: body must be the 8-byte big-endian trim point"},
  };
  const S2Policy policy = framed_policy();
  for (const auto& [bytes, why] : cases) {
    EXPECT_EQ(s2::check_framed_record(bytes), why) << hex(bytes);
    EXPECT_EQ(policy.check_record(as_bytes(bytes)), why) << hex(bytes);
  }
  // Body-only format: any bytes are a body.
  EXPECT_EQ(S2Policy{S2Policy::Options{}}.check_record(as_bytes(unhex("01"))), std::nullopt);

  S2Config config;
  config.protocol.record_format = S2Policy::RecordFormat::framed;
  auto producer = S2Producer::create(config).value();
  const auto refused = producer.submit(prodsm::Instant{}, as_bytes(unhex("01 00 00")));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().reason, prodsm::RejectReason::invalid_record);
  EXPECT_TRUE(producer.submit(prodsm::Instant{}, as_bytes(s2::frame_body("fine"))));  // still usable
}

TEST(S2Policy, FramedMeteringEqualsS2sMeterForEveryRecord) {
  const S2Policy policy = framed_policy();
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::string> storage;
    storage.reserve(20);
    std::vector<s2::HeaderView> headers;
    for (std::size_t h = rng() % 5; h > 0; --h) {
      storage.push_back(std::string(1 + rng() % 40, 'n'));
      const std::string_view name = storage.back();
      storage.push_back(std::string(rng() % 60, 'v'));
      headers.push_back({name, storage.back()});
    }
    const std::string body(rng() % 500, 'b');
    const auto framed = s2::frame_record(headers, body);
    ASSERT_TRUE(framed);
    const s2::AppendRecordView view{std::nullopt, headers, body};
    EXPECT_EQ(policy.metered_bytes(framed->size()), s2::metered_size(view));
  }
  // Commands: S2's CommandRecord::metered_size is 8 + 2 + op + payload.
  EXPECT_EQ(policy.metered_bytes(s2::fence_record("fence-me")->size()), 8U + 2 + 5 + 8);
  EXPECT_EQ(policy.metered_bytes(s2::trim_record(42).size()), 8U + 2 + 4 + 8);
  EXPECT_EQ(policy.metered_bytes(0), 8U);  // never valid, never underflows
  // Body format: 8 + body, as before.
  EXPECT_EQ(S2Policy{S2Policy::Options{}}.metered_bytes(10), 18U);
}

TEST(S2CodecRecords, FenceAndTrimCommandsAreS2sCommandRecords) {
  EXPECT_EQ(hex(*s2::fence_record("tok")),
            "01"
            "00"
            "05" +
                hex("fence") + hex("tok"));
  EXPECT_EQ(hex(*s2::fence_record("")),
            "01"
            "00"
            "05" +
                hex("fence"));  // clears the fence
  EXPECT_EQ(s2::fence_record(std::string(37, 'x')).error(), "fence command: token longer than 36 bytes");
  EXPECT_TRUE(s2::fence_record(std::string(36, 'x')));
  EXPECT_EQ(hex(s2::trim_record(0x0102030405060708ULL)),
            "01"
            "00"
            "04" +
                hex("trim") + "0102030405060708");

  const auto fence = s2::fence_command("tok");
  ASSERT_TRUE(fence);
  const s2::AppendRecordView view = fence->view();
  ASSERT_EQ(view.headers.size(), 1U);
  EXPECT_EQ(view.headers[0].name, "");
  EXPECT_EQ(view.headers[0].value, "fence");
  EXPECT_EQ(view.body, "tok");
  EXPECT_EQ(s2::metered_size(view), 8U + 2 + 5 + 3);
  EXPECT_EQ(s2::fence_command("\xff").error(), "fence command: token is not valid UTF-8");
  EXPECT_EQ(hex(s2::trim_command(5).body), "0000000000000005");
}

TEST(B3, FencingTokenMustBeUtf8AndAtMost36Bytes) {
  S2Config config;
  config.protocol.fencing_token = std::string("\xc3\x28");
  const auto bad = S2Producer::create(config);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "protocol.fencing_token");
  config.protocol.fencing_token = std::string(18, 'x') + "\xc3\xbc" + std::string(16, 'y');  // 36 bytes, UTF-8
  EXPECT_TRUE(S2Producer::create(config));
}

}  // namespace
