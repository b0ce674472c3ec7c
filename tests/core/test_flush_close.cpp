// SPDX-License-Identifier: Apache-2.0
// F1–F5 (flush barrier) and C1–C5 (close and ownership), including the acceptance
// cases of the S2 non-terminal flush request.
#include "harness.hpp"

namespace prodsm::test {
namespace {

// F1 (acceptance: "a Producer configured with a very long linger flushes a one-record
// partial batch promptly without closing").
TEST(F1, OneRecordFlushUnderVeryLongLingerSendsAtOnce) {
  S2Harness h(s2_config(Linger::after(1h)));
  h.submit("only");
  EXPECT_TRUE(h.outbox().empty());
  const auto b = h.flush();
  ASSERT_EQ(h.outbox().size(), 1U) << "sealed at once, no linger wait";
  EXPECT_EQ(h.now(), Instant{}) << "no time passed";
  auto s = h.take_send();
  EXPECT_TRUE(h.barriers().empty()) << "completes only when durable";
  h.ack(s, positions(0, 1));
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_EQ(h.barriers()[0].id, b);
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_EQ(h.producer().state(), ProducerState::open) << "F4: still open";
}

// F1 (acceptance: "multiple records before the barrier retain order and receive their
// exact indexed acknowledgements").
TEST(F1, RecordsBeforeBarrierKeepOrderAndExactIndexedAcks) {
  auto c = s2_config(Linger::after(1h));
  c.max_batch_records = 2;
  c.protocol.match_seq_num = 100;
  S2Harness h(c);
  for (const char* r : {"r0", "r1", "r2", "r3", "r4"}) h.submit(r);
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 3U);
  h.ack(sends[0], positions(100, 102));
  h.ack(sends[1], positions(102, 104));
  h.ack(sends[2], positions(104, 105));
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_TRUE(h.barriers()[0].ok());
  std::uint64_t expected_ticket = 0;
  for (const auto& d : h.completions()) {
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d.first, expected_ticket);
    for (std::uint64_t t = d.first; t <= d.last; ++t) {
      EXPECT_EQ(d.ack->start_seq_num + (t - d.first), 100 + t) << "ticket " << t;
    }
    expected_ticket = d.last + 1;
  }
  EXPECT_EQ(expected_ticket, 5U);
  EXPECT_EQ(h.order().back(), "b0") << "the barrier after all covered completions";
}

// F2 (acceptance: "records submitted after the barrier are not included in its wait").
TEST(F2, BarrierDoesNotWaitForRecordsAfterIt) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.submit("b");
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  h.ack(sends[0], offset("o1"));
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_EQ(h.barriers()[0].id, 0U);
  EXPECT_TRUE(h.barriers()[0].ok()) << "b0 done although b is still in flight";
}

// F3 (acceptance: "empty barriers complete without creating an append batch").
TEST(F3, EmptyFlushCompletesAtOnceAndSendsNothing) {
  S2Harness h(s2_config(Linger::after(1h)));
  h.flush();
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_TRUE(h.all_sends().empty());
  // also after everything before it completed
  h.submit("a");
  h.flush();
  h.ack(h.take_send(), positions(0, 1));
  h.flush();
  EXPECT_EQ(h.barriers().size(), 3U);
  EXPECT_EQ(h.all_sends().size(), 1U);
}

// F4 (acceptance: "new records can be submitted and flushed after the first barrier").
TEST(F4, FlushCanBeRepeatedAndProducerStaysOpen) {
  S2Harness h(s2_config(Linger::after(1h)));
  for (int round = 0; round < 5; ++round) {
    h.submit("x");
    h.submit("y");
    h.flush();
    auto s = h.take_send();
    EXPECT_EQ(s.body, "xy");
    h.ack(s, positions(2 * static_cast<std::uint64_t>(round), 2 * static_cast<std::uint64_t>(round) + 2));
    ASSERT_EQ(h.barriers().size(), static_cast<std::size_t>(round) + 1);
    EXPECT_TRUE(h.barriers().back().ok());
    EXPECT_EQ(h.producer().state(), ProducerState::open);
  }
  EXPECT_EQ(h.producer().stats().barriers_accepted, 5U);
  EXPECT_EQ(h.producer().stats().barriers_completed, 5U);
}

// F5 (acceptance: "condition failures cannot report the barrier successful while a
// covered record ticket fails").
TEST(F5, ConditionFailureFailsTheBarrierWithTheStickyError) {
  auto c = s2_config(Linger::after(1h));
  c.max_batch_records = 1;
  c.protocol.match_seq_num = 0;
  S2Harness h(c);
  h.submit("a");
  h.submit("b");
  h.flush();
  auto sends = h.take_all_sends();
  h.ack(sends[0], positions(0, 1));
  h.fail(sends[1], failure(ErrorCode::condition_failed, Certainty::definite, false));
  ASSERT_EQ(h.barriers().size(), 1U);
  ASSERT_FALSE(h.barriers()[0].ok());
  EXPECT_EQ(h.barriers()[0].error->code, ErrorCode::condition_failed);
  EXPECT_TRUE(h.completions()[0].ok());
  EXPECT_FALSE(h.completions()[1].ok());
  EXPECT_EQ(*h.completions()[1].error, *h.producer().terminal_error());
}

// F5 (acceptance: "ambiguous session termination cannot report the barrier successful").
TEST(F5, AmbiguousTerminationFailsTheBarrierIndefinite) {
  S2Harness h(s2_config(Linger::after(1h)));  // no match_seq_num: a resend is unsafe
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), connection_lost());
  ASSERT_EQ(h.barriers().size(), 1U);
  ASSERT_FALSE(h.barriers()[0].ok());
  EXPECT_EQ(h.barriers()[0].error->code, ErrorCode::connection_lost);
  EXPECT_EQ(h.barriers()[0].error->certainty, Certainty::indefinite);
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
}

// F5: a barrier whose covered records all succeeded stays successful even when a later
// record fails.
TEST(F5, BarrierSucceedsWhenAllCoveredSucceedDespiteLaterFailure) {
  auto c = ds_config(Linger::after(1h));
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.submit("b");
  h.flush();
  auto sends = h.take_all_sends();
  h.ack(sends[0], offset("o1"));
  h.fail(sends[1], failure(ErrorCode::rejected, Certainty::definite, false));
  ASSERT_EQ(h.barriers().size(), 2U);
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_FALSE(h.barriers()[1].ok());
}

// C1: close = flush + drain; its result is success; a second close returns the same.
TEST(C1, CloseDrainsThenReportsSuccessAndSecondCloseReturnsSameResult) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  EXPECT_FALSE(h.close().has_value()) << "pending until drained";
  EXPECT_EQ(h.producer().state(), ProducerState::closing);
  EXPECT_FALSE(h.close().has_value()) << "still pending; no second Closed";
  h.ack(h.take_send(), offset("o"));
  ASSERT_TRUE(h.closed().has_value());
  EXPECT_TRUE(h.closed()->has_value());
  EXPECT_EQ(h.closed_count(), 1);
  auto again = h.close();
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->has_value());
  EXPECT_EQ(h.closed_count(), 1);
  EXPECT_EQ(h.producer().state(), ProducerState::closed);
  EXPECT_EQ(h.producer().next_deadline(), std::nullopt);
}

// C1 / E1: close after a terminal error reports that error, twice the same.
TEST(C1, CloseReportsTheTerminalError) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), stream_closed("final"));
  h.close();
  ASSERT_TRUE(h.closed().has_value());
  ASSERT_FALSE(h.closed()->has_value());
  EXPECT_EQ(h.closed()->error().code, ErrorCode::stream_closed);
  auto again = h.close();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->error(), h.closed()->error());
}

// C1, E1: Closed carries the sticky terminal error even when that error failed no record:
// an ack for a batch that never existed (E5) with nothing submitted.
TEST(C1, ClosedCarriesATerminalErrorThatFailedNoRecord) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.producer().handle_ack(h.now(), BatchId{0}, 1, offset("o"));
  h.drain();
  ASSERT_TRUE(h.producer().terminal_error().has_value());
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  EXPECT_TRUE(h.completions().empty());
  EXPECT_EQ(h.producer().stats().records_failed, 0U);
  EXPECT_FALSE(h.close().has_value()) << "Closed brings the result";
  ASSERT_TRUE(h.closed().has_value());
  ASSERT_FALSE(*h.closed());
  EXPECT_EQ(h.closed()->error().code, ErrorCode::invalid_ack);
}

// C2: submit or flush after close gives a clear `closed` error.
TEST(C2, SubmitAndFlushAfterCloseAreRefusedWithClosed) {
  DsHarness h(ds_config());
  h.close();
  auto s = h.try_submit("a");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().reason, RejectReason::closed);
  auto f = h.try_flush();
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().reason, RejectReason::closed);
  EXPECT_EQ(h.producer().stats().barriers_accepted, 0U) << "a refused flush takes no barrier";
  EXPECT_TRUE(h.completions().empty()) << "A4/P2: refused submits never complete";
}

// C3 (acceptance: "Producer shutdown cannot report the barrier successful while a
// covered record ticket fails"): close racing a pending barrier.
TEST(C3, CloseRacingPendingBarrierStaysConsistent) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.submit("b");
  h.close();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  h.ack(sends[1], offset("o2"));
  h.fail(sends[0], failure(ErrorCode::rejected, Certainty::definite, false));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "b0", "t1-1", "closed"}));
  EXPECT_FALSE(h.barriers()[0].ok());
  EXPECT_FALSE(h.completions()[0].ok());
  EXPECT_TRUE(h.completions()[1].ok()) << "E1: an ack already received is applied";
  EXPECT_FALSE(h.closed()->has_value()) << "close fails with the terminal error";
}

// C3: close racing a barrier where everything succeeds: barrier first, then Closed.
TEST(C3, CloseAfterBarrierCompletesBarrierFirst) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.close();
  h.ack(h.take_send(), offset("o"));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "b0", "closed"}));
  EXPECT_TRUE(h.barriers()[0].ok());
  EXPECT_TRUE(h.closed()->has_value());
}

// C4: ownership is the adapters' (they close owned sessions on Closed); the core's part
// is that Closed is the single, final release signal and nothing follows it.
TEST(C4, ClosedIsTheSingleFinalReleaseSignal) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.close();
  auto s = h.take_send();
  h.ack(s, offset("o"));
  EXPECT_EQ(h.closed_count(), 1);
  h.producer().handle_ack(h.now(), s.batch, s.attempt, offset("o"));  // late duplicate
  h.producer().handle_timeout(h.now() + 1h);
  h.abort();
  h.drain();
  EXPECT_EQ(h.closed_count(), 1);
  EXPECT_EQ(h.order().back(), "closed");
  EXPECT_EQ(h.producer().unacked_bytes(), 0U);
  EXPECT_EQ(h.producer().unacked_batches(), 0U);
}

// C5: abort fails every unresolved ticket, definite if never sent, indefinite if sent.
TEST(C5, AbortMarksNeverSentDefiniteAndSentIndefinite) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_records = 1;
  c.max_in_flight = 1;
  DsHarness h(c);
  h.submit("a");  // sent
  h.submit("b");  // sealed, waiting for a slot
  h.submit("c");  // sealed, waiting
  h.flush();
  ASSERT_EQ(h.outbox().size(), 1U);
  h.abort();
  ASSERT_EQ(h.completions().size(), 3U);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::aborted);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
  EXPECT_EQ(h.completions()[1].error->certainty, Certainty::definite);
  EXPECT_EQ(h.completions()[2].error->certainty, Certainty::definite);
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_EQ(h.barriers()[0].error->code, ErrorCode::aborted);
  EXPECT_EQ(h.barriers()[0].error->certainty, Certainty::indefinite);
  ASSERT_TRUE(h.closed().has_value());
  EXPECT_EQ(h.closed()->error().code, ErrorCode::aborted);
  EXPECT_EQ(h.order().back(), "closed");
}

// C5: abort's message is true: with every record completed before it, `Closed` (and a
// later close) says the producer was aborted, not that its records were cut short.
TEST(C5, AbortAfterEveryRecordCompletedDoesNotSayRecordsWereCutShort) {
  DsHarness h(ds_config(Linger::after(1h)));
  for (int i = 0; i < 10; ++i) h.submit("r");
  h.flush();
  h.ack(h.take_send(), offset("o"));
  ASSERT_EQ(h.barriers().size(), 1U);
  EXPECT_TRUE(h.barriers()[0].ok());
  h.abort();
  ASSERT_TRUE(h.closed().has_value());
  ASSERT_FALSE(*h.closed());
  const Error& e = h.closed()->error();
  EXPECT_EQ(e.code, ErrorCode::aborted);
  EXPECT_EQ(e.message.find("before its records completed"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("every record accepted before it had already completed"), std::string::npos) << e.message;
  const auto again = h.close();
  ASSERT_TRUE(again.has_value());
  ASSERT_FALSE(*again);
  EXPECT_EQ(again->error().message, e.message);

  DsHarness pending(ds_config(Linger::after(1h)));  // a record still pending: it was cut short
  pending.submit("r");
  pending.abort();
  ASSERT_EQ(pending.completions().size(), 1U);
  EXPECT_NE(pending.completions()[0].error->message.find("before its records completed"), std::string::npos);
}

// C5: a batch that failed ambiguously and waits for its retry is indefinite on abort.
TEST(C5, AbortAfterAmbiguousAttemptIsIndefinite) {
  DsHarness h(ds_idempotent(Linger::after(1h)));
  h.submit("a");
  h.flush();
  // HTTP 500: may have been applied, retried after backoff (idempotent)
  h.fail(h.take_send(), failure(ErrorCode::unavailable, Certainty::indefinite, true));
  EXPECT_TRUE(h.outbox().empty());
  h.abort();
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
}

}  // namespace
}  // namespace prodsm::test
