// SPDX-License-Identifier: Apache-2.0
// S8 — the protocol's limits (docs/contract.md): Durable Streams Producer-Epoch and
// Producer-Seq stop at 2^53-1, S2 seq_nums at 2^64-1; exhaustion refuses the record that
// would need a number past the limit, never wraps, and loses nothing accepted before.
// Also E5 for Durable Streams offsets (strictly increasing for an idempotent producer)
// and E2/E4 for request timeouts.
#include "harness.hpp"

namespace prodsm::test {
namespace {

constexpr std::uint64_t kMax = DurableStreamsPolicy::kMaxSequenceValue;

DurableStreamsConfig starting_at(std::uint64_t epoch, std::uint64_t seq, bool auto_claim = false) {
  auto c = ds_idempotent(Linger::after(1h), auto_claim);
  c.max_batch_records = 1;
  c.protocol.idempotent->epoch = epoch;
  c.protocol.idempotent->seq = seq;
  return c;
}

/// Plain (not idempotent) appends, one record per batch.
DurableStreamsConfig plain_one_record_batches() {
  auto c = ds_idempotent(Linger::after(1h));
  c.protocol.idempotent.reset();
  c.max_batch_records = 1;
  return c;
}

TEST(S8, DurableStreamsStartsAtTheConfiguredSeq) {
  DsHarness h(starting_at(3, 41));
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  EXPECT_EQ(sends[0].stamp, (DurableStreamsPolicy::Stamp{true, 3, 41}));
  EXPECT_EQ(sends[1].stamp, (DurableStreamsPolicy::Stamp{true, 3, 42}));
}

TEST(S8, ASeqAbove2To53Minus1IsAConfigErrorNamingTheField) {
  auto c = starting_at(0, kMax + 1);
  auto p = DurableStreamsProducer::create(c);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().field, "protocol.idempotent.seq");
  EXPECT_TRUE(DurableStreamsProducer::create(starting_at(0, kMax)).has_value()) << "2^53-1 itself is valid";
}

TEST(S8, DurableStreamsSeqExhaustionRefusesTheNextBatchAndCompletesTheRest) {
  DsHarness h(starting_at(7, kMax - 1));
  h.submit("a");
  h.submit("b");
  auto refused = h.try_submit("c");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::sequence_exhausted);
  EXPECT_EQ(to_error(refused.error()).code, ErrorCode::sequence_exhausted);
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U) << "nothing past 2^53-1 is sent";
  EXPECT_EQ(sends[1].stamp.seq, kMax);
  h.ack(sends[0], offset("00000000000000000001"));
  h.ack(sends[1], offset("00000000000000000002"));
  ASSERT_EQ(h.completions().size(), 2U);
  EXPECT_TRUE(h.completions()[0].ok());
  EXPECT_TRUE(h.completions()[1].ok());
  EXPECT_EQ(h.producer().state(), ProducerState::open) << "a refusal, not a terminal error";
  EXPECT_FALSE(h.try_submit("d").has_value()) << "still exhausted: no wrap to seq 0";
}

TEST(S8, AnOpenBatchIsNotSealedEarlyByARefusedRecord) {
  auto c = starting_at(0, kMax);
  c.max_batch_records = 2;
  c.max_batch_bytes = 4;
  DsHarness h(c);
  h.submit("ab");                      // the open batch takes the last seq
  auto refused = h.try_submit("cde");  // would start another batch
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::sequence_exhausted);
  EXPECT_TRUE(h.outbox().empty()) << "B2: the open batch keeps lingering";
  h.submit("c");  // still fits the open batch
  h.flush();
  ASSERT_EQ(h.outbox().size(), 1U);
  EXPECT_EQ(h.outbox()[0].count, 2U);
}

TEST(S8, AnEpochClaimStartsTheSeqSpaceAgain) {
  DsHarness h(starting_at(7, kMax, /*auto_claim=*/true));
  h.submit("a");
  EXPECT_FALSE(h.try_submit("b").has_value());
  h.fail(h.take_send(), stale_epoch(8));
  auto claim = h.take_send();
  EXPECT_EQ(claim.stamp, (DurableStreamsPolicy::Stamp{true, 9, 0}));
  h.ack(claim, offset("00000000000000000001"));
  h.submit("c");
  EXPECT_EQ(h.take_send().stamp, (DurableStreamsPolicy::Stamp{true, 9, 1}));
}

TEST(S8, AClaimPast2To53Minus1IsRefusedTerminalAndDefinite) {
  DsHarness h(starting_at(kMax - 1, 0, /*auto_claim=*/true));
  h.submit("a");
  h.fail(h.take_send(), stale_epoch(kMax));
  EXPECT_TRUE(h.outbox().empty()) << "no claim of 2^53 is sent";
  ASSERT_EQ(h.completions().size(), 1U);
  ASSERT_TRUE(h.completions()[0].error.has_value());
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::stale_epoch);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::definite);
}

TEST(S8, S2MatchSeqNumNearTheEndCapsTheBatchAndRefusesPastIt) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = UINT64_MAX - 2;
  S2Harness h(c);
  h.submit("a");
  h.submit("b");  // the batch's end reaches 2^64-1: sealed, full
  auto refused = h.try_submit("c");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::sequence_exhausted);
  auto sent = h.take_send();
  EXPECT_EQ(sent.count, 2U);
  EXPECT_EQ(sent.stamp.match_seq_num, UINT64_MAX - 2);
  h.ack(sent, positions(UINT64_MAX - 2, UINT64_MAX));
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_TRUE(h.completions()[0].ok());
}

TEST(E5, AnIdempotentBatchWhoseOffsetIsNotAboveThePreviousIsInvalid) {
  DsHarness h(starting_at(0, 0));
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  h.ack(sends[0], offset("00000000000000000005"));
  h.ack(sends[1], offset("00000000000000000005"));
  ASSERT_EQ(h.completions().size(), 2U);
  EXPECT_TRUE(h.completions()[0].ok());
  ASSERT_TRUE(h.completions()[1].error.has_value());
  EXPECT_EQ(h.completions()[1].error->code, ErrorCode::invalid_ack);
}

TEST(E5, PlainAppendOffsetsAreNotCompared) {
  DsHarness h(plain_one_record_batches());  // plain appends may be applied out of batch order
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  h.ack(sends[0], offset("00000000000000000009"));
  h.ack(sends[1], offset("00000000000000000001"));
  ASSERT_EQ(h.completions().size(), 2U);
  EXPECT_TRUE(h.completions()[1].ok());
}

TEST(E4, ARequestTimeoutIsResentByAnIdempotentProducerAndTerminalForAPlainOne) {
  const Error timeout = failure(ErrorCode::request_timeout, Certainty::indefinite, true);
  DsHarness idem(starting_at(0, 0));
  idem.submit("a");
  idem.fail(idem.take_send(), timeout);
  idem.advance(1s);
  EXPECT_EQ(idem.take_send().attempt, 2U);
  DsHarness plain(plain_one_record_batches());
  plain.submit("a");
  plain.fail(plain.take_send(), timeout);
  ASSERT_EQ(plain.completions().size(), 1U);
  ASSERT_TRUE(plain.completions()[0].error.has_value());
  EXPECT_EQ(plain.completions()[0].error->code, ErrorCode::request_timeout);
  EXPECT_EQ(plain.completions()[0].error->certainty, Certainty::indefinite);
  // The error says why a retryable failure was not retried (it read as a retry given up).
  EXPECT_NE(plain.completions()[0].error->message.find("not resent: the attempt may have been applied"),
            std::string::npos)
      << plain.completions()[0].error->message;
}

}  // namespace
}  // namespace prodsm::test
