// SPDX-License-Identifier: Apache-2.0
// B1–B5: batching, linger, limits.
#include <cmath>

#include "harness.hpp"

namespace prodsm::test {
namespace {

// B1: the record that would overflow max records starts the next batch; a batch that
// is full is sealed at once.
TEST(B1, SealsWhenMaxRecordsReached) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_records = 3;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  EXPECT_TRUE(h.outbox().empty());
  h.submit("c");  // full: sealed and sent without waiting for linger
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "abc");
  h.submit("d");
  EXPECT_TRUE(h.outbox().empty());
}

// B1: the record that would overflow max bytes starts the next batch.
TEST(B1, RecordThatWouldOverflowBytesStartsNextBatch) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 10;
  c.max_unacked_bytes = 100;
  DsHarness h(c);
  h.submit("aaaa");
  h.submit("bbbb");
  EXPECT_TRUE(h.outbox().empty());
  h.submit("ccc");  // 8 + 3 > 10: the partial batch is sealed, "ccc" starts the next
  ASSERT_EQ(h.outbox().size(), 1U);
  auto s = h.take_send();
  EXPECT_EQ(s.body, "aaaabbbb");
  EXPECT_EQ(s.first, 0U);
  EXPECT_EQ(s.count, 2U);
  h.submit("dddddd");  // 3 + 6 = 9: fits; 9 + 1 (smallest record) = 10 still fits
  EXPECT_TRUE(h.outbox().empty());
  h.submit("e");  // exactly 10: full, sealed at once
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "cccdddddde");
}

// B1: JSON framing counts its brackets and commas against max_batch_bytes.
TEST(B1, JsonFramingIsMeteredAgainstMaxBatchBytes) {
  auto c = ds_config(Linger::after(1h));
  c.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  c.max_batch_bytes = 7;  // "[1,2,3]" is exactly 7 bytes
  DsHarness h(c);
  h.submit("1");
  h.submit("2");
  EXPECT_TRUE(h.outbox().empty());
  h.submit("3");
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "[1,2,3]");
}

// B1: linger elapsed since the batch's first record seals it (not since the last).
TEST(B1, LingerIsMeasuredFromTheFirstRecord) {
  DsHarness h(ds_config(Linger::after(5ms)));
  h.submit("a");
  h.advance(3ms);
  h.submit("b");
  EXPECT_EQ(h.producer().next_deadline(), at_ms(5));
  h.advance(1ms);
  EXPECT_TRUE(h.outbox().empty()) << "D3: 4 ms < 5 ms linger";
  h.advance(1ms);
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "ab");
}

// B1/R2: a would-block seals the partial batch (covered with R2 in test_capacity.cpp);
// close seals it too.
TEST(B1, CloseSealsThePartialBatch) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.close();
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "a");
}

// B2: the default linger is 5 ms.
TEST(B2, DefaultLingerIsFiveMilliseconds) {
  DurableStreamsConfig c;
  EXPECT_EQ(c.linger, Linger::after(5ms));
  S2Config s;
  EXPECT_EQ(s.linger, Linger::after(5ms));
  DsHarness h(c);
  h.submit("a");
  EXPECT_EQ(h.producer().next_deadline(), at_ms(5));
}

// B2: linger 0 means no intentional delay: the batch is due at once and sealed by the
// next timer event at the same instant, together with records submitted before it.
TEST(B2, ZeroLingerMeansNoIntentionalDelay) {
  DsHarness h(ds_config(Linger::after(0ms)));
  h.submit("a");
  h.submit("b");
  EXPECT_EQ(h.producer().next_deadline(), at_ms(0)) << "due immediately";
  h.advance(0ms);
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.take_send().body, "ab");
  EXPECT_EQ(h.now(), at_ms(0)) << "no time passed";
}

// B2: "disabled" is a distinct explicit value: no timer at all.
TEST(B2, DisabledLingerArmsNoTimer) {
  auto c = ds_config(Linger::disabled());
  c.delivery_timeout_ns = 1h;
  DsHarness h(c);
  h.submit("a");
  EXPECT_EQ(h.producer().next_deadline(), Instant{} + 1h) << "only the delivery deadline";
  h.advance(59min);
  EXPECT_TRUE(h.outbox().empty());
  h.flush();
  EXPECT_EQ(h.outbox().size(), 1U);
  EXPECT_NE(Linger::disabled(), Linger::after(0ms));
}

// B2: invalid linger values are rejected, never clamped.
TEST(B2, InvalidLingerIsRejectedNotClamped) {
  auto c = ds_config(Linger::after(-1ms));
  auto r = DurableStreamsProducer::create(c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "linger");
  c.linger = Linger::after(Linger::kMaxLinger + 1ns);
  r = DurableStreamsProducer::create(c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "linger");
  c.linger = Linger::after(Linger::kMaxLinger);
  c.delivery_timeout_ns = Linger::kMaxLinger + 1ns;
  EXPECT_TRUE(DurableStreamsProducer::create(c).has_value());
}

// B3: each invalid limit is rejected with an error naming the field.
TEST(B3, InvalidLimitsAreRejectedWithTheFieldName) {
  struct Case {
    const char* field;
    void (*mutate)(DurableStreamsConfig&);
  };
  const Case cases[] = {
      {"max_batch_records", [](DurableStreamsConfig& c) { c.max_batch_records = 0; }},
      {"max_batch_records", [](DurableStreamsConfig& c) { c.max_batch_records = 1'000'001; }},
      {"max_batch_bytes", [](DurableStreamsConfig& c) { c.max_batch_bytes = 0; }},
      {"max_batch_bytes", [](DurableStreamsConfig& c) { c.max_batch_bytes = (64ULL << 20) + 1; }},
      {"max_unacked_bytes", [](DurableStreamsConfig& c) { c.max_unacked_bytes = (1ULL << 20) - 1; }},
      {"max_in_flight", [](DurableStreamsConfig& c) { c.max_in_flight = 0; }},
      {"max_in_flight", [](DurableStreamsConfig& c) { c.max_in_flight = 65; }},
      {"max_unacked_batches", [](DurableStreamsConfig& c) { c.max_unacked_batches = 4; }},
      {"max_pending_barriers", [](DurableStreamsConfig& c) { c.max_pending_barriers = 0; }},
      {"delivery_timeout_ns", [](DurableStreamsConfig& c) { c.delivery_timeout_ns = 5ms; }},
      {"delivery_timeout_ns", [](DurableStreamsConfig& c) { c.delivery_timeout_ns = 25h; }},
      {"retry.max_attempts", [](DurableStreamsConfig& c) { c.retry.max_attempts = 0; }},
      {"retry.backoff_max_ns", [](DurableStreamsConfig& c) { c.retry.backoff_max_ns = 11min; }},
      {"retry.backoff_initial_ns", [](DurableStreamsConfig& c) { c.retry.backoff_initial_ns = 11s; }},
      {"retry.backoff_initial_ns", [](DurableStreamsConfig& c) { c.retry.backoff_initial_ns = 0ms; }},
      {"retry.backoff_initial_ns", [](DurableStreamsConfig& c) { c.retry.backoff_initial_ns = -1ms; }},
      {"retry.backoff_max_ns", [](DurableStreamsConfig& c) { c.retry.backoff_max_ns = 0ms; }},
      {"retry.backoff_multiplier", [](DurableStreamsConfig& c) { c.retry.backoff_multiplier = 0.5; }},
      {"retry.backoff_multiplier", [](DurableStreamsConfig& c) { c.retry.backoff_multiplier = 16.5; }},
      {"retry.backoff_multiplier", [](DurableStreamsConfig& c) { c.retry.backoff_multiplier = std::nan(""); }},
      {"protocol.idempotent.producer_id", [](DurableStreamsConfig& c) { c.protocol.idempotent.emplace(); }},
      {"protocol.idempotent.producer_id",
       [](DurableStreamsConfig& c) {
         c.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"a b", 0, false};
       }},
      {"protocol.idempotent.epoch",
       [](DurableStreamsConfig& c) {
         c.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"p", 1ULL << 53, false};
       }},
  };
  for (const auto& tc : cases) {
    DurableStreamsConfig c;
    tc.mutate(c);
    auto r = DurableStreamsProducer::create(c);
    ASSERT_FALSE(r.has_value()) << tc.field;
    EXPECT_EQ(r.error().field, tc.field);
    EXPECT_NE(r.error().message().find(tc.field), std::string::npos);
    EXPECT_EQ(r.error().describe(), r.error().message());
  }
  EXPECT_TRUE(DurableStreamsProducer::create(DurableStreamsConfig{}).has_value());
}

// B3: S2 limits are 1..1000 records and 8 B..1 MiB.
TEST(B3, S2LimitsAreValidated) {
  S2Config c;
  c.max_batch_records = 1001;
  EXPECT_EQ(S2Producer::create(c).error().field, "max_batch_records");
  c = S2Config{};
  c.max_batch_bytes = 7;
  EXPECT_EQ(S2Producer::create(c).error().field, "max_batch_bytes");
  c.max_batch_bytes = (1ULL << 20) + 1;
  EXPECT_EQ(S2Producer::create(c).error().field, "max_batch_bytes");
  c = S2Config{};
  c.protocol.fencing_token = std::string(37, 'x');
  EXPECT_EQ(S2Producer::create(c).error().field, "protocol.fencing_token");
  c = S2Config{};
  c.max_batch_records = 1000;
  c.max_batch_bytes = 8;
  EXPECT_TRUE(S2Producer::create(c).has_value());
}

// B4: a record larger than max batch bytes is rejected at submit; the Producer stays usable.
TEST(B4, OversizedRecordIsRejectedAndProducerStaysUsable) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 4;
  c.max_unacked_bytes = 16;
  DsHarness h(c);
  h.submit("ab");
  auto r = h.try_submit("abcde");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::record_too_large);
  EXPECT_NE(std::string(r.error().detail).find("max_batch_bytes"), std::string::npos);
  EXPECT_EQ(h.producer().state(), ProducerState::open);
  EXPECT_EQ(h.submit("cd"), 1U) << "the rejected record consumed no ticket";
  h.flush();
  auto s = h.take_send();
  EXPECT_EQ(s.body, "abcd");
}

// B4: S2 meters 8 bytes per record.
TEST(B4, S2RecordMeteredAboveLimitIsRejected) {
  auto c = s2_config();
  c.max_batch_bytes = 16;
  c.max_unacked_bytes = 64;
  S2Harness h(c);
  EXPECT_TRUE(h.try_submit("12345678").has_value());  // 8 + 8 = 16
  auto r = h.try_submit("123456789");                 // 8 + 9 = 17
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::record_too_large);
}

// B5: no empty batch is ever sent, and no batch spans a barrier.
TEST(B5, NoEmptyBatchAndNoBatchSpansABarrier) {
  DsHarness h(ds_config(Linger::after(0ms)));
  h.flush();
  h.advance(0ms);
  h.flush();
  EXPECT_TRUE(h.all_sends().empty());
  h.submit("a");
  h.flush();
  h.submit("b");
  h.advance(0ms);
  h.flush();
  ASSERT_EQ(h.all_sends().size(), 2U);
  EXPECT_EQ(h.all_sends()[0].body, "a");
  EXPECT_EQ(h.all_sends()[1].body, "b");
  for (const auto& s : h.all_sends()) EXPECT_GE(s.count, 1U);
}

// B5 / invalid record: Durable Streams cannot append an empty record; JSON mode rejects
// a record that is not one JSON value, so it can never poison a batch.
TEST(B5, InvalidRecordsAreRefusedAtSubmit) {
  auto c = ds_config();
  c.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  DsHarness h(c);
  EXPECT_EQ(h.try_submit("").error().reason, RejectReason::invalid_record);
  EXPECT_EQ(h.try_submit("{\"a\":").error().reason, RejectReason::invalid_record);
  EXPECT_EQ(h.try_submit("1 2").error().reason, RejectReason::invalid_record);
  EXPECT_TRUE(h.try_submit("{\"a\":[1,2]}").has_value());
  // An integer beyond 64 bits is JSON (RFC 8259 sets no range) and what a JSON server
  // writes back for 1e20; simdjson alone refused it. A number that is not JSON still is.
  EXPECT_TRUE(h.try_submit("100000000000000000000").has_value());
  EXPECT_TRUE(h.try_submit("{\"n\":[-123456789012345678901234567890]}").has_value());
  EXPECT_EQ(h.try_submit("0100000000000000000000").error().reason, RejectReason::invalid_record);
  EXPECT_EQ(h.try_submit("[100000000000000000000x]").error().reason, RejectReason::invalid_record);
  // Beyond the double range: JSON by its grammar, but no JSON server can keep it (the
  // reference server would store null); the refusal says so, not only "not JSON".
  const auto huge = h.try_submit("1e400");
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().reason, RejectReason::invalid_record);
  EXPECT_NE(huge.error().detail.find("beyond the double range"), std::string_view::npos) << huge.error().detail;
  EXPECT_EQ(h.try_submit("{\"a\":").error().detail, "record is not exactly one JSON value");
}

}  // namespace
}  // namespace prodsm::test
