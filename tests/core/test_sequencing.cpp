// SPDX-License-Identifier: Apache-2.0
// S1–S6: sequencing. (S7, classification by status and headers, is the HTTP codec's
// and is tested with it.)
#include "harness.hpp"

namespace prodsm::test {
namespace {

// S1: match_seq_num is stamped at seal and advances by the record count; the fencing
// token is the same on every batch.
TEST(S1, MatchSeqNumAdvancesByRecordCountAndFencingTokenIsConstant) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = 10;
  c.protocol.fencing_token = "tok-1";
  S2Harness h(c);
  h.submit("a");
  h.submit("b");
  h.submit("c");
  h.flush();
  h.submit("d");
  h.flush();
  h.submit("e");
  h.submit("f");
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 3U);
  EXPECT_EQ(sends[0].stamp.match_seq_num, 10U);
  EXPECT_EQ(sends[1].stamp.match_seq_num, 13U);
  EXPECT_EQ(sends[2].stamp.match_seq_num, 14U);
  for (const auto& s : sends) {
    EXPECT_TRUE(s.stamp.fenced);
    EXPECT_EQ(s.stamp.fencing_token(), "tok-1");
  }
  EXPECT_EQ(sends[0].record_ends, (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(h.producer().policy().next_match_seq_num(), 16U);
}

// S1: a resend keeps its match_seq_num (stamped at seal, not at send).
TEST(S1, ResendKeepsItsMatchSeqNum) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = 0;
  c.retry.backoff_initial_ns = 1ms;  // the shortest backoff the tests wait for
  c.retry.backoff_max_ns = 1ms;
  S2Harness h(c);
  h.submit("a");
  h.flush();
  auto first = h.take_send();
  h.fail(first, unavailable());
  h.advance(1ms);
  auto second = h.take_send();
  EXPECT_EQ(second.stamp, first.stamp);
  EXPECT_EQ(second.body, first.body);
}

// S2: (producer id, epoch, seq) stamped at seal, seq +1 per batch; a resend is
// byte-identical.
TEST(S2, DurableStreamsSeqAdvancesPerBatchAndResendIsByteIdentical) {
  auto c = ds_idempotent(Linger::after(1h));
  c.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  c.retry.backoff_initial_ns = 1ms;  // the shortest backoff the tests wait for
  c.retry.backoff_max_ns = 1ms;
  DsHarness h(c);
  h.submit("1");
  h.submit("2");
  h.flush();
  h.submit("{\"k\":3}");
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  EXPECT_EQ(sends[0].stamp, (DurableStreamsPolicy::Stamp{true, 0, 0}));
  EXPECT_EQ(sends[1].stamp, (DurableStreamsPolicy::Stamp{true, 0, 1}));
  EXPECT_EQ(sends[0].body, "[1,2]");
  EXPECT_EQ(sends[1].body, "[{\"k\":3}]");
  h.fail(sends[0], connection_lost());
  h.advance(0ms);
  auto resend = h.take_send();
  EXPECT_EQ(resend.body, sends[0].body);
  EXPECT_EQ(resend.stamp, sends[0].stamp);
  EXPECT_EQ(resend.attempt, 2U);
}

// S3: a duplicate acknowledgement is a success, flagged duplicate.
TEST(S3, DuplicateIsASuccessfulAckFlaggedDuplicate) {
  DsHarness h(ds_idempotent(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.ack(h.take_send(), duplicate());
  ASSERT_EQ(h.completions().size(), 1U);
  ASSERT_TRUE(h.completions()[0].ok());
  EXPECT_TRUE(h.completions()[0].ack->duplicate);
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_EQ(h.producer().stats().duplicates, 1U);
  EXPECT_EQ(h.producer().stats().first_attempt_duplicate_records, 1U)
      << "a duplicate on a first attempt: an earlier session held this seq";
  EXPECT_TRUE(h.completions()[0].ack->earlier_incarnation) << "its outcome of its own";
}

/// An idempotent config whose first-attempt duplicates fail the producer.
DurableStreamsConfig failing_first_attempt_duplicates() {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  c.protocol.idempotent->first_attempt_duplicates = FirstAttemptDuplicates::fail;
  return c;
}

// S3: with FirstAttemptDuplicates::fail, the epoch's first batch goes alone; a duplicate
// answering it (a reused producer id and epoch) fails the producer, definite, before any
// other batch was sent: nothing of ours was appended.
TEST(S3, FirstAttemptDuplicateFailsBeforeAnythingElseIsSent) {
  DsHarness h(failing_first_attempt_duplicates());
  h.submit("a");
  h.submit("b");
  h.submit("c");
  ASSERT_EQ(h.outbox().size(), 1U) << "one batch in flight until the first one is acknowledged";
  h.ack(h.take_send(), duplicate());
  ASSERT_TRUE(h.producer().terminal_error().has_value());
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::protocol_error);
  EXPECT_EQ(h.producer().terminal_error()->certainty, Certainty::definite);
  EXPECT_TRUE(h.outbox().empty());
  EXPECT_EQ(h.all_sends().size(), 1U) << "no later batch was sent";
  ASSERT_EQ(h.completions().size(), 3U);
  for (const auto& d : h.completions()) {
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error->certainty, Certainty::definite);
  }
}

// S3: with FirstAttemptDuplicates::fail, after the first acknowledgement the producer
// pipelines again, and a duplicate after an ambiguous attempt is our own: a success.
TEST(S3, AfterTheFirstAckBatchesPipelineAndResentDuplicatesSucceed) {
  auto c = failing_first_attempt_duplicates();
  c.max_in_flight = 3;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.submit("c");
  h.ack(h.take_send(), offset("o1"));
  auto rest = h.take_all_sends();
  ASSERT_EQ(rest.size(), 2U) << "pipelined after the first acknowledgement";
  h.fail(rest[0], connection_lost());  // ambiguous: maybe appended
  auto resends = h.take_all_sends();
  ASSERT_FALSE(resends.empty());
  h.ack(resends[0], duplicate());  // our own earlier attempt
  h.ack(rest[1], offset("o3"));
  ASSERT_EQ(h.completions().size(), 3U);
  for (const auto& d : h.completions()) EXPECT_TRUE(d.ok());
  EXPECT_FALSE(h.completions()[1].ack->earlier_incarnation);
  EXPECT_FALSE(h.producer().terminal_error().has_value());
}

// S3: a duplicate answering a resend after a lost ack is our own earlier attempt, not
// an earlier session's record, so it is not counted as a first-attempt duplicate.
TEST(S3, DuplicateAfterAResendIsNotAFirstAttemptDuplicate) {
  auto c = ds_idempotent(Linger::after(1h));
  c.retry.backoff_initial_ns = 1ms;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.flush();
  h.fail(h.take_send(), connection_lost());  // resent at once on a new connection
  auto resend = h.take_send();
  ASSERT_EQ(resend.attempt, 2U);
  h.ack(resend, duplicate());
  ASSERT_TRUE(h.completions()[0].ok());
  EXPECT_EQ(h.producer().stats().duplicate_records, 2U);
  EXPECT_EQ(h.producer().stats().first_attempt_duplicate_records, 0U);
}

// S4: a gap (expected < our seq) while lower seqs are in flight: wait for them, then
// resend the same bytes — event-driven: once the batch before it is acknowledged (or
// sent again), and the parked batches behind go out with it in the same turn.
TEST(S4, GapWhileLowerSeqsInFlightWaitsThenResends) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.submit("c");
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 3U);
  h.fail(sends[2], gap(0, 2));  // seq 2 arrived before 0 and 1
  h.fail(sends[1], gap(0, 1));
  EXPECT_TRUE(h.outbox().empty()) << "parked: no resend, no hot loop";
  EXPECT_EQ(h.producer().next_deadline(), Instant{} + c.delivery_timeout_ns) << "no timer but the delivery deadline";
  h.ack(sends[0], offset("o1"));
  auto resends = h.take_all_sends();
  ASSERT_EQ(resends.size(), 2U) << "seq 1 is resent, and seq 2 right behind it in the same turn";
  EXPECT_EQ(resends[0].batch, sends[1].batch);
  EXPECT_EQ(resends[0].body, "b");
  EXPECT_EQ(resends[0].stamp.seq, 1U);
  EXPECT_EQ(resends[1].stamp.seq, 2U);
  h.ack(resends[0], offset("o2"));
  h.ack(resends[1], offset("o3"));
  ASSERT_EQ(h.completions().size(), 3U);
  for (const auto& d : h.completions()) EXPECT_TRUE(d.ok());
  EXPECT_EQ(h.producer().stats().gap_resends, 2U);
}

// S4: a gap-parked batch is not resent while the batch before it is still on its
// original attempt (it would overtake it again: a hot loop); once that batch fails and
// is resent, the parked one goes out right behind it.
TEST(S4, GapParkedBatchWaitsForItsPredecessorToBeSentAgain) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  c.retry.backoff_initial_ns = 10ms;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  h.fail(sends[1], gap(0, 1));  // seq 0 is slow at the server; seq 1 overtook it
  h.advance(1s);
  EXPECT_TRUE(h.outbox().empty()) << "seq 1 waits: seq 0's first attempt is still outstanding";
  h.fail(sends[0], unavailable());  // now seq 0 fails (503) and backs off
  EXPECT_TRUE(h.outbox().empty());
  ASSERT_TRUE(h.fire_next_deadline());
  auto resends = h.take_all_sends();
  ASSERT_EQ(resends.size(), 2U);
  EXPECT_EQ(resends[0].stamp.seq, 0U);
  EXPECT_EQ(resends[1].stamp.seq, 1U) << "right behind its predecessor's new attempt";
  h.fail(resends[1], gap(0, 1));  // overtaken again (another connection, say)
  EXPECT_TRUE(h.outbox().empty()) << "no resend until seq 0 is answered or sent again";
  h.ack(resends[0], offset("o1"));
  auto last = h.take_send();
  EXPECT_EQ(last.stamp.seq, 1U);
  h.ack(last, offset("o2"));
  ASSERT_EQ(h.completions().size(), 2U);
  for (const auto& d : h.completions()) EXPECT_TRUE(d.ok());
}

// S4: a gap with no lower seq outstanding is a terminal sequence gap.
TEST(S4, GapWithNothingInFlightBelowIsTerminal) {
  DsHarness h(ds_idempotent(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), gap(3, 0));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::sequence_gap);
  EXPECT_EQ(h.producer().terminal_error()->expected_seq, 3U);
}

// S4: bounded — after the wait-and-resend, a second gap is terminal (never a loop).
TEST(S4, SecondGapAfterResendIsTerminal) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  h.fail(sends[1], gap(0, 1));
  h.ack(sends[0], offset("o1"));
  auto resend = h.take_send();
  h.fail(resend, gap(0, 1));  // the server lost seq 0?
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::sequence_gap);
  EXPECT_EQ(h.all_sends().size(), 3U);
}

// S4: a gap that arrives after the lower seqs were acked resends at once (the 409
// was produced while they were still in flight).
TEST(S4, GapAfterLowerSeqsAckedResendsAtOnce) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  h.ack(sends[0], offset("o1"));
  h.fail(sends[1], gap(0, 1));
  auto resend = h.take_send();
  EXPECT_EQ(resend.stamp.seq, 1U);
  h.ack(resend, offset("o2"));
  EXPECT_TRUE(h.completions()[1].ok());
}

// S5: 403 stale epoch without auto-claim is terminal.
TEST(S5, StaleEpochWithoutAutoClaimIsTerminal) {
  DsHarness h(ds_idempotent(Linger::after(1h), false));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), stale_epoch(4));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::stale_epoch);
  EXPECT_EQ(h.producer().terminal_error()->server_epoch, 4U);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::definite);
}

// S5: auto-claim with three batches in flight claims server epoch + 1, renumbers every
// unacked batch from seq 0 in order, keeps one batch in flight until the claim is
// acknowledged; no record is lost or reported as a duplicate.
TEST(S5, AutoClaimRenumbersThreeInFlightBatchesWithoutLossOrFalseDuplicate) {
  auto c = ds_idempotent(Linger::after(1h), true);
  c.max_batch_records = 1;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.submit("c");
  auto old = h.take_all_sends();
  ASSERT_EQ(old.size(), 3U);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(old[i].stamp, (DurableStreamsPolicy::Stamp{true, 0, i}));
  }
  h.fail(old[1], stale_epoch(5));  // not the oldest: parked until batch 0 resolves
  EXPECT_TRUE(h.outbox().empty());
  h.fail(old[0], stale_epoch(5));  // the oldest: claim epoch 6
  EXPECT_EQ(h.producer().policy().epoch(), 6U);
  ASSERT_EQ(h.outbox().size(), 1U) << "one batch in flight until the claim is acked";
  auto claim = h.take_send();
  EXPECT_EQ(claim.batch, old[0].batch);
  EXPECT_EQ(claim.stamp, (DurableStreamsPolicy::Stamp{true, 6, 0}));
  EXPECT_EQ(claim.body, "a");
  h.fail(old[2], stale_epoch(5));  // superseded old-epoch attempt: ignored
  EXPECT_EQ(h.producer().state(), ProducerState::open);
  h.submit("d");  // sealed in the new epoch after the renumbered ones
  h.flush();
  EXPECT_TRUE(h.outbox().empty()) << "still one in flight";
  h.ack(claim, offset("o1"));
  auto rest = h.take_all_sends();
  ASSERT_EQ(rest.size(), 3U);
  EXPECT_EQ(rest[0].stamp, (DurableStreamsPolicy::Stamp{true, 6, 1}));
  EXPECT_EQ(rest[0].body, "b");
  EXPECT_EQ(rest[1].stamp, (DurableStreamsPolicy::Stamp{true, 6, 2}));
  EXPECT_EQ(rest[1].body, "c");
  EXPECT_EQ(rest[2].stamp, (DurableStreamsPolicy::Stamp{true, 6, 3}));
  EXPECT_EQ(rest[2].body, "d");
  for (auto& s : rest) h.ack(s, offset("o" + std::to_string(s.stamp.seq + 1)));
  ASSERT_EQ(h.completions().size(), 4U);
  for (const auto& d : h.completions()) {
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d.ack->duplicate);
  }
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_EQ(h.producer().stats().epoch_claims, 1U);
}

// S5 + E6, C5: after an auto-claim, a batch whose old-epoch attempt was in flight and
// that was not sent again under the new epoch fails definite, on purpose: that attempt
// cannot be appended (a lower seq of its epoch was fenced), and nothing else of it was
// sent. The claiming batch, resent under the new epoch, is in flight: indefinite.
TEST(S5, BatchesWhoseOldEpochAttemptsAClaimSupersededFailDefinite) {
  for (const bool abort : {false, true}) {
    SCOPED_TRACE(abort ? "abort" : "delivery timeout");
    auto c = ds_idempotent(Linger::after(1h), true);
    c.max_batch_records = 1;
    DsHarness h(c);
    h.submit("a");
    h.submit("b");
    h.submit("c");
    const auto old = h.take_all_sends();
    ASSERT_EQ(old.size(), 3U) << "three old-epoch attempts in flight";
    h.fail(old[0], stale_epoch(5));  // the oldest: claim epoch 6, batch 0 resent alone
    ASSERT_EQ(h.outbox().size(), 1U);
    EXPECT_EQ(h.producer().stats().epoch_claims, 1U);
    if (abort) {
      h.abort();
    } else {
      ASSERT_TRUE(h.fire_next_deadline());  // E6
    }
    ASSERT_EQ(h.completions().size(), 3U);
    EXPECT_EQ(h.completions()[0].error->code, abort ? ErrorCode::aborted : ErrorCode::delivery_timeout);
    EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite) << "the claim's resend is in flight";
    EXPECT_EQ(h.completions()[1].error->certainty, Certainty::definite) << "old-epoch attempt superseded";
    EXPECT_EQ(h.completions()[2].error->certainty, Certainty::definite) << "old-epoch attempt superseded";
  }
}

// S5: a stale epoch after an ambiguous attempt cannot be auto-claimed safely: the old
// attempt may have been appended, and renumbering would duplicate it.
TEST(S5, StaleEpochAfterAmbiguousAttemptIsTerminalIndefinite) {
  auto c = ds_idempotent(Linger::after(1h), true);
  c.retry.backoff_initial_ns = 1ms;  // the shortest backoff the tests wait for
  c.retry.backoff_max_ns = 1ms;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), connection_lost());
  h.advance(0ms);
  h.fail(h.take_send(), stale_epoch(1));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::stale_epoch);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
  // The failure says why auto-claim did not claim, not just "stale epoch".
  EXPECT_NE(h.completions()[0].error->message.find("not claimed (S5): an earlier attempt of this batch has an unknown "
                                                   "outcome"),
            std::string::npos)
      << h.completions()[0].error->message;
  EXPECT_EQ(h.producer().stats().epoch_claims, 0U);
}

// S6: a stream-closed failure is terminal "stream closed" with the final offset, never
// a sequence gap, never resent — even mid-pipeline.
TEST(S6, StreamClosedMidPipelineIsTerminalNeverAGap) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  DsHarness h(c);
  for (int i = 0; i < 4; ++i) h.submit("r");
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 4U);
  h.ack(sends[0], offset("o1"));
  h.fail(sends[2], stream_closed("final-1"));
  EXPECT_TRUE(h.outbox().empty()) << "no resend";
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::stream_closed);
  EXPECT_EQ(h.producer().terminal_error()->final_offset, "final-1");
  EXPECT_EQ(h.producer().stats().gap_resends, 0U);
  ASSERT_EQ(h.completions().size(), 4U);
  EXPECT_TRUE(h.completions()[0].ok());
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(h.completions()[static_cast<std::size_t>(i)].error->code, ErrorCode::stream_closed);
  }
  EXPECT_EQ(h.barriers()[0].error->code, ErrorCode::stream_closed);
}

}  // namespace
}  // namespace prodsm::test
