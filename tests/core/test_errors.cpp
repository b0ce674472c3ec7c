// SPDX-License-Identifier: Apache-2.0
// E1–E6: sticky terminal errors, classification, condition failures, safe retries,
// invalid acknowledgements, delivery timeout.
#include "harness.hpp"

namespace prodsm::test {
namespace {

DurableStreamsConfig one_record_batches(DurableStreamsConfig c) {
  c.max_batch_records = 1;
  return c;
}

// E1: the first terminal error wins; acks already received are applied first; every
// unresolved ticket, barrier and close fails with that same error; later calls too.
TEST(E1, FirstTerminalErrorIsStickyAcrossTicketsBarrierCloseAndLaterCalls) {
  DsHarness h(one_record_batches(ds_config(Linger::after(1h))));
  for (int i = 0; i < 4; ++i) h.submit("r");
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 4U);
  h.ack(sends[2], offset("o3"));  // received before the failure
  h.fail(sends[1], stream_closed("final-7"));
  h.fail(sends[3], failure(ErrorCode::rejected, Certainty::definite, false));  // ignored
  const Error sticky = *h.producer().terminal_error();
  EXPECT_EQ(sticky.code, ErrorCode::stream_closed);
  EXPECT_EQ(sticky.final_offset, "final-7");
  ASSERT_EQ(h.completions().size(), 4U);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::stream_closed);
  EXPECT_EQ(h.completions()[1].error->code, ErrorCode::stream_closed);
  EXPECT_TRUE(h.completions()[2].ok()) << "acked before the error: applied";
  EXPECT_EQ(h.completions()[3].error->code, ErrorCode::stream_closed);
  EXPECT_EQ(h.barriers()[0].error->code, ErrorCode::stream_closed);
  auto s = h.try_submit("x");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().reason, RejectReason::failed);
  EXPECT_EQ(s.error().terminal->code, ErrorCode::stream_closed);
  auto f = h.try_flush();
  EXPECT_EQ(f.error().terminal->code, ErrorCode::stream_closed);
  h.close();
  EXPECT_EQ(h.closed()->error().code, ErrorCode::stream_closed);
}

// E2: every failure is classified definite/indefinite and retryable or not.
TEST(E2, FailuresCarryCertaintyAndRetryability) {
  auto c = ds_config(Linger::after(1h));
  c.retry.max_attempts = 1;  // no retries: the first failure is terminal
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), unavailable());
  ASSERT_EQ(h.completions().size(), 1U);
  const Error& e = *h.completions()[0].error;
  EXPECT_EQ(e.code, ErrorCode::unavailable);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_TRUE(e.retryable);
  EXPECT_NE(e.message.find("gave up after 1 attempts"), std::string::npos) << e.message;
}

// E3: a condition failure is terminal and definite.
TEST(E3, ConditionFailureIsTerminalAndDefinite) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = 5;
  S2Harness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), failure(ErrorCode::condition_failed, Certainty::definite, false));
  EXPECT_EQ(h.producer().state(), ProducerState::failed);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::definite);
  EXPECT_TRUE(h.outbox().empty()) << "never retried";
}

// E3: after an ambiguous resend the condition failure is indefinite (the first attempt
// may have been appended and the resend then failed its own condition).
TEST(E3, ConditionFailureAfterAmbiguousResendIsIndefinite) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = 5;  // makes an indefinite failure safe to resend
  c.retry.backoff_initial_ns = 10ms;
  S2Harness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), connection_lost());
  h.advance(10ms);
  auto resend = h.take_send();
  EXPECT_EQ(resend.attempt, 2U);
  h.fail(resend, failure(ErrorCode::condition_failed, Certainty::definite, false));
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::condition_failed);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
}

// E3: a Durable Streams 409 conflict (content type) is terminal and definite.
TEST(E3, DurableStreamsConflictIsTerminalDefinite) {
  DsHarness h(ds_idempotent(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), failure(ErrorCode::conflict, Certainty::definite, false));
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::conflict);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::definite);
}

// E4: a lost connection with sequencing is retried, byte-identical: the first retry at
// once (it goes out on a new connection, which is the remedy), the next one after the
// backoff, jittered into [half, full].
TEST(E4, ConnectionLostIsRetriedWhenSequencingMakesItSafe) {
  auto c = ds_idempotent(Linger::after(1h));
  c.retry.backoff_initial_ns = 100ms;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.flush();
  auto first = h.take_send();
  h.fail(first, connection_lost());
  ASSERT_EQ(h.outbox().size(), 1U) << "the first retry after a lost connection goes out at once";
  auto second = h.take_send();
  EXPECT_EQ(second.attempt, 2U);
  EXPECT_EQ(second.body, first.body);
  EXPECT_EQ(second.stamp, first.stamp) << "S2: same epoch and seq on a resend";
  h.fail(second, connection_lost());
  EXPECT_TRUE(h.outbox().empty()) << "backoff before the second retry";
  const auto deadline = h.producer().next_deadline();
  ASSERT_TRUE(deadline.has_value());
  EXPECT_GE(*deadline, h.now() + 50ms) << "jittered into [half, full]";
  EXPECT_LE(*deadline, h.now() + 100ms);
  h.fire_next_deadline();
  auto third = h.take_send();
  EXPECT_EQ(third.attempt, 3U);
  EXPECT_EQ(third.body, first.body);
  h.ack(third, offset("o"));
  EXPECT_TRUE(h.completions()[0].ok());
  EXPECT_EQ(h.producer().stats().retries, 2U);
}

// E4: the backoff grows by backoff_multiplier per retry up to backoff_max_ns, each wait
// jittered into [half, full]; multiplier 1.0 keeps it constant.
TEST(E4, BackoffGrowsByTheMultiplierUpToTheMaximum) {
  for (const double multiplier : {3.0, 1.0}) {
    auto c = ds_idempotent(Linger::after(1h));
    c.retry.max_attempts = 6;
    c.retry.backoff_initial_ns = 10ms;
    c.retry.backoff_max_ns = 200ms;
    c.retry.backoff_multiplier = multiplier;
    DsHarness h(c);
    h.submit("a");
    h.flush();
    Duration full = 10ms;
    for (int retry = 1; retry <= 5; ++retry) {
      h.fail(h.take_send(), unavailable());
      const auto deadline = h.producer().next_deadline();
      ASSERT_TRUE(deadline.has_value());
      EXPECT_GE(*deadline - h.now(), full / 2) << "retry " << retry << " multiplier " << multiplier;
      EXPECT_LE(*deadline - h.now(), full) << "retry " << retry << " multiplier " << multiplier;
      h.fire_next_deadline();
      full = std::min<Duration>(200ms, std::chrono::duration_cast<Duration>(full * multiplier));
    }
    auto last = h.take_send();
    EXPECT_EQ(last.attempt, 6U);
  }
}

// E4: a retryable server answer (503) backs off before the first retry too; only a lost
// connection is retried at once.
TEST(E4, UnavailableBacksOffBeforeTheFirstRetry) {
  auto c = ds_idempotent(Linger::after(1h));
  c.retry.backoff_initial_ns = 100ms;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), unavailable());
  EXPECT_TRUE(h.outbox().empty()) << "503: backoff first";
  const auto deadline = h.producer().next_deadline();
  ASSERT_TRUE(deadline.has_value());
  EXPECT_GE(*deadline, h.now() + 50ms);
  EXPECT_LE(*deadline, h.now() + 100ms);
  h.fire_next_deadline();
  EXPECT_EQ(h.take_send().attempt, 2U);
}

// E4: batches that failed together go back out together, in order, when the oldest
// one's backoff is over — not each on its own jittered timer.
TEST(E4, BatchesThatFailedTogetherAreResentTogether) {
  auto c = ds_idempotent(Linger::after(1h));
  c.max_batch_records = 1;
  c.retry.backoff_initial_ns = 100ms;
  DsHarness h(c);
  for (const char* r : {"a", "b", "c", "d"}) h.submit(r);
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 4U);
  for (const auto& s : sends) h.fail(s, unavailable());  // e.g. the connect was refused
  EXPECT_TRUE(h.outbox().empty());
  ASSERT_TRUE(h.fire_next_deadline());
  auto resends = h.take_all_sends();
  ASSERT_EQ(resends.size(), 4U) << "all four resent at the first expiry";
  for (std::size_t i = 0; i < resends.size(); ++i) {
    EXPECT_EQ(resends[i].batch, sends[i].batch) << "in batch order";
    EXPECT_EQ(resends[i].attempt, 2U);
  }
}

// E4: without sequencing a lost connection is terminal and indefinite.
TEST(E4, ConnectionLostWithoutSequencingIsTerminalIndefinite) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), connection_lost());
  EXPECT_EQ(h.producer().state(), ProducerState::failed);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::connection_lost);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
}

// E4: RetryMode::no_side_effects never resends an indefinite failure, even when
// sequencing would make it safe; it still retries definite ones.
TEST(E4, NoSideEffectsModeRetriesOnlyDefiniteFailures) {
  auto c = ds_idempotent(Linger::after(1h));
  c.retry.mode = RetryMode::no_side_effects;
  c.retry.backoff_initial_ns = 1ms;  // the shortest backoff the tests wait for
  c.retry.backoff_max_ns = 1ms;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), unavailable());
  h.advance(1ms);
  auto retry = h.take_send();
  EXPECT_EQ(retry.attempt, 2U);
  h.fail(retry, connection_lost());
  EXPECT_EQ(h.producer().state(), ProducerState::failed);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
  // The reason given is the mode, not a missing sequencing (the batch is sequenced).
  EXPECT_NE(h.completions()[0].error->message.find("RetryMode::no_side_effects"), std::string::npos)
      << h.completions()[0].error->message;
}

// E4/R3: retries are bounded by max_attempts; Retry-After is honoured as a minimum.
TEST(E4, RetriesAreBoundedAndHonourRetryAfter) {
  auto c = ds_config(Linger::after(1h));
  c.retry.max_attempts = 3;
  c.retry.backoff_initial_ns = 1ms;
  c.retry.backoff_max_ns = 1ms;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  Error busy = unavailable();
  busy.retry_after_ns = 2s;
  h.fail(h.take_send(), busy);
  EXPECT_EQ(h.producer().next_deadline(), h.now() + 2s);
  h.advance(1999ms);
  EXPECT_TRUE(h.outbox().empty()) << "D3: never early";
  h.advance(1ms);
  h.fail(h.take_send(), unavailable());
  h.fire_next_deadline();
  h.fail(h.take_send(), unavailable());
  EXPECT_EQ(h.producer().state(), ProducerState::failed);
  EXPECT_EQ(h.all_sends().size(), 3U);
}

// E4: a resend never overtakes: later batches wait behind a batch in backoff.
TEST(E4, LaterBatchesWaitBehindABatchInBackoff) {
  auto c = one_record_batches(ds_idempotent(Linger::after(1h)));
  c.max_in_flight = 1;
  c.retry.backoff_initial_ns = 10ms;
  c.retry.backoff_max_ns = 10ms;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.fail(h.take_send(), unavailable());
  EXPECT_TRUE(h.outbox().empty()) << "b must not be sent before a's retry";
  h.advance(10ms);
  auto retry = h.take_send();
  EXPECT_EQ(retry.body, "a");
  h.ack(retry, offset("o1"));
  EXPECT_EQ(h.take_send().body, "b");
}

// E5: an ack for a batch that was never issued is a terminal protocol error.
TEST(E5, AckForUnknownBatchIsTerminalInvalidAck) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.producer().handle_ack(h.now(), BatchId{99}, 1, offset("o"));
  h.drain();
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::invalid_ack);
}

// E5: an ack for an attempt never sent, and a second ack for the same attempt.
TEST(E5, AckForUnsentAttemptOrSecondAckIsInvalid) {
  {
    DsHarness h(ds_config(Linger::after(1h)));
    h.submit("a");
    h.flush();
    auto s = h.take_send();
    h.producer().handle_ack(h.now(), s.batch, 2, offset("o"));
    h.drain();
    EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  }
  {
    auto c = one_record_batches(ds_config(Linger::after(1h)));
    DsHarness h(c);
    h.submit("a");
    h.submit("b");
    auto sends = h.take_all_sends();
    h.ack(sends[1], offset("o2"));
    h.ack(sends[1], offset("o2"));  // second ack while batch 0 still pending
    EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  }
}

// E5 + E2, C5: a second outcome for one attempt that says it may have been applied (an
// indefinite failure, or an ack) after a definite failure is a terminal invalid_ack, and
// the batch's records fail indefinite: definite would say a resend is safe, and the
// second report says the attempt may be in the stream.
TEST(E5, AContradictingSecondOutcomeThatMayHaveAppliedFailsIndefinite) {
  for (const bool second_is_ack : {false, true}) {
    SCOPED_TRACE(second_is_ack ? "then an ack" : "then connection_lost");
    DsHarness h(ds_config(Linger::after(1h)));  // plain appends
    h.submit("a");
    h.flush();
    const auto s = h.take_send();
    h.fail(s, unavailable());  // HTTP 503: definite, retried after a backoff
    ASSERT_TRUE(h.completions().empty());
    if (second_is_ack) {
      h.ack(s, offset("o"));
    } else {
      h.fail(s, connection_lost());  // the same attempt, now "bytes written, no answer"
    }
    EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
    EXPECT_EQ(h.producer().terminal_error()->certainty, Certainty::indefinite);
    ASSERT_EQ(h.completions().size(), 1U);
    EXPECT_EQ(h.completions()[0].error->code, ErrorCode::invalid_ack);
    EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite) << "may be in the stream";
  }
}

// E5: a second definite failure for one attempt says nothing was applied: still definite.
TEST(E5, ASecondDefiniteFailureForOneAttemptStaysDefinite) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  const auto s = h.take_send();
  h.fail(s, unavailable());
  h.fail(s, unavailable());
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::definite);
}

// E5: an outcome for an attempt whose SendBatch was not polled yet — never handed to the
// driver, so never sent — is a terminal invalid_ack, not a success or a retry: a first
// send (an ack, a failure) and a resend.
TEST(E5, AnOutcomeForAnAttemptWhoseSendWasNotPolledIsInvalid) {
  for (const bool ack : {true, false}) {
    SCOPED_TRACE(ack ? "ack" : "failure");
    DsHarness h(ds_config(Linger::after(1h)));
    Producer<DurableStreamsPolicy>& p = h.producer();
    ASSERT_TRUE(p.submit(h.now(), "a"));
    ASSERT_TRUE(p.flush(h.now()));
    ASSERT_EQ(p.pending_actions(), 1U) << "the SendBatch, not polled";
    if (ack) {
      p.handle_ack(h.now(), BatchId{0}, 1, offset("o"));
    } else {
      p.handle_failure(h.now(), BatchId{0}, 1, unavailable());
    }
    h.drain();
    ASSERT_TRUE(p.terminal_error().has_value());
    EXPECT_EQ(p.terminal_error()->code, ErrorCode::invalid_ack);
    ASSERT_EQ(h.completions().size(), 1U);
    EXPECT_FALSE(h.completions()[0].ok());
    EXPECT_EQ(h.completions()[0].error->code, ErrorCode::invalid_ack);
    EXPECT_EQ(p.stats().records_succeeded, 0U);
  }
  {  // a resend: attempt 1 was handed out and lost, attempt 2 is not polled yet
    DsHarness h(ds_idempotent(Linger::after(1h)));
    h.submit("a");
    h.flush();
    const auto first = h.take_send();
    Producer<DurableStreamsPolicy>& p = h.producer();
    p.handle_failure(h.now(), first.batch, first.attempt, connection_lost());  // resent at once
    ASSERT_EQ(p.pending_actions(), 1U) << "attempt 2, not polled";
    p.handle_ack(h.now(), first.batch, 2, offset("o"));
    h.drain();
    ASSERT_TRUE(p.terminal_error().has_value());
    EXPECT_EQ(p.terminal_error()->code, ErrorCode::invalid_ack);
    ASSERT_EQ(h.completions().size(), 1U);
    EXPECT_FALSE(h.completions()[0].ok());
  }
}

// E5: an S2 ack with the wrong record count is a terminal protocol error.
TEST(E5, S2AckWithWrongCountIsInvalid) {
  S2Harness h(s2_config(Linger::after(1h)));
  h.submit("a");
  h.submit("b");
  h.flush();
  h.ack(h.take_send(), positions(0, 3));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite);
}

// E5: S2 positions going backwards are a terminal protocol error.
TEST(E5, S2PositionsGoingBackwardsAreInvalid) {
  auto c = s2_config(Linger::after(1h));
  c.max_batch_records = 1;
  S2Harness h(c);
  h.submit("a");
  h.submit("b");
  auto sends = h.take_all_sends();
  h.ack(sends[0], positions(10, 11));
  h.ack(sends[1], positions(5, 6));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  EXPECT_TRUE(h.completions()[0].ok());
  EXPECT_FALSE(h.completions()[1].ok());
}

// E5: an S2 ack that contradicts the stamped match_seq_num is invalid.
TEST(E5, S2AckNotAtMatchSeqNumIsInvalid) {
  auto c = s2_config(Linger::after(1h));
  c.protocol.match_seq_num = 7;
  S2Harness h(c);
  h.submit("a");
  h.flush();
  h.ack(h.take_send(), positions(8, 9));
  EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
}

// E5: a Durable Streams ack without offset (not a duplicate), and a duplicate for a
// plain append, are invalid.
TEST(E5, DurableStreamsAckWithoutOffsetIsInvalid) {
  {
    DsHarness h(ds_config(Linger::after(1h)));
    h.submit("a");
    h.flush();
    h.ack(h.take_send(), offset(""));
    EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  }
  {
    DsHarness h(ds_config(Linger::after(1h)));
    h.submit("a");
    h.flush();
    h.ack(h.take_send(), duplicate());
    EXPECT_EQ(h.producer().terminal_error()->code, ErrorCode::invalid_ack);
  }
}

// E5: a late ack for a batch that already completed is ignored, not fatal.
TEST(E5, LateOutcomeForSupersededAttemptIsIgnored) {
  auto c = ds_idempotent(Linger::after(1h));
  c.retry.backoff_initial_ns = 1ms;  // the shortest backoff the tests wait for
  c.retry.backoff_max_ns = 1ms;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  auto first = h.take_send();
  h.fail(first, connection_lost());
  h.advance(0ms);
  auto second = h.take_send();
  h.ack(first, offset("o-old"));  // superseded attempt
  EXPECT_EQ(h.producer().state(), ProducerState::open);
  h.ack(second, offset("o"));
  h.ack(second, offset("o"));  // batch completed: stale
  EXPECT_EQ(h.producer().state(), ProducerState::open);
  EXPECT_EQ(h.producer().stats().stale_outcomes, 2U);
}

// E6: every record completes within the delivery deadline or fails with a timeout.
TEST(E6, DeliveryTimeoutFailsUnackedRecords) {
  auto c = one_record_batches(ds_config(Linger::after(1h)));
  c.linger = Linger::after(1ms);
  c.delivery_timeout_ns = 2s;
  c.max_in_flight = 1;
  DsHarness h(c);
  h.submit("a");  // sent
  h.advance(500ms);
  h.submit("b");  // waits for the slot
  EXPECT_EQ(h.producer().next_deadline(), at_ms(2000));
  h.advance(1499ms);
  EXPECT_TRUE(h.completions().empty()) << "D3: never early";
  h.advance(1ms);
  ASSERT_EQ(h.completions().size(), 2U);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::delivery_timeout);
  EXPECT_EQ(h.completions()[0].error->certainty, Certainty::indefinite) << "was in flight";
  EXPECT_EQ(h.completions()[1].error->certainty, Certainty::definite) << "never sent";
}

// E6: a record stuck in backoff also times out.
TEST(E6, DeliveryTimeoutBoundsRetries) {
  auto c = ds_config(Linger::after(1h));
  c.delivery_timeout_ns = 2h;
  c.retry.max_attempts = 1000;
  c.retry.backoff_initial_ns = 10min;
  c.retry.backoff_max_ns = 10min;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  int sends = 0;
  while (h.producer().state() == ProducerState::open && sends < 100) {
    auto s = h.take_send();
    ++sends;
    h.fail(s, unavailable());
    h.fire_next_deadline();
  }
  EXPECT_EQ(h.producer().state(), ProducerState::failed);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::delivery_timeout);
  EXPECT_LE(h.now(), Instant{} + 2h + 10min);
  // E6 names its cause: the last failure, retried — its resend was due after the deadline
  // (a 10 min backoff), so the message does not say it went out.
  const std::string& why = h.completions()[0].error->message;
  EXPECT_NE(why.find("the last failure (its retry had not gone out): " + unavailable().describe()), std::string::npos)
      << why;
}

// E4, E6: stats().retries counts the resends that went out (with `sends`); a retry decided
// at a failure is counted in retries_scheduled at once. A 429 asking for 5 s, under a 3 s
// delivery timeout: the timeout comes first, the resend never goes out, and the timeout's
// message names the failure without saying it was retried.
TEST(E4, ARetryIsCountedWhenItsResendGoesOutNotWhenTheDeliveryTimeoutCameFirst) {
  auto c = ds_config(Linger::after(1ms));  // plain appends: a 429 is definite, retried
  c.delivery_timeout_ns = 3s;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  Error too_many = failure(ErrorCode::unavailable, Certainty::definite, true);
  too_many.http_status = 429;
  too_many.message = "HTTP 429";
  too_many.retry_after_ns = 5s;
  h.fail(h.take_send(), too_many);
  EXPECT_EQ(h.producer().stats().retries_scheduled, 1U);
  EXPECT_EQ(h.producer().stats().retries, 0U) << "not resent yet";
  ASSERT_EQ(h.producer().next_deadline(), at_ms(3000)) << "E6 before the Retry-After";
  h.fire_next_deadline();
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::delivery_timeout);
  EXPECT_EQ(h.producer().stats().sends, 1U);
  EXPECT_EQ(h.producer().stats().retries, 0U) << "the resend never went out";
  EXPECT_EQ(h.producer().stats().retries_scheduled, 1U);
  const std::string& why = h.completions()[0].error->message;
  EXPECT_EQ(why.find("the last failure retried"), std::string::npos) << why;
  EXPECT_NE(why.find("the last failure (its retry had not gone out): " + too_many.describe()), std::string::npos)
      << why;

  // The same failure under a longer delivery timeout: counted when the resend goes out.
  c.delivery_timeout_ns = 10s;
  DsHarness g(c);
  g.submit("a");
  g.flush();
  g.fail(g.take_send(), too_many);
  EXPECT_EQ(g.producer().stats().retries, 0U);
  g.fire_next_deadline();
  ASSERT_EQ(g.outbox().size(), 1U) << "resent after the Retry-After";
  EXPECT_EQ(g.producer().stats().sends, 2U);
  EXPECT_EQ(g.producer().stats().retries, 1U);
  EXPECT_EQ(g.producer().stats().retries_scheduled, 1U);
  g.fire_next_deadline();  // the resend is never answered: E6 at 10 s
  ASSERT_EQ(g.completions().size(), 1U);
  EXPECT_EQ(g.completions()[0].error->code, ErrorCode::delivery_timeout);
  const std::string& resent = g.completions()[0].error->message;
  EXPECT_NE(resent.find("the last failure retried: " + too_many.describe()), std::string::npos) << resent;
}

// E6: a delivery timeout with no failure before it (the server never answered) names none.
TEST(E6, DeliveryTimeoutWithoutARetryNamesNoCause) {
  auto c = ds_config(Linger::after(1ms));
  c.delivery_timeout_ns = 2s;
  DsHarness h(c);
  h.submit("a");
  h.advance(2s);
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].error->code, ErrorCode::delivery_timeout);
  EXPECT_EQ(h.completions()[0].error->message.find("last failure"), std::string::npos);
}

// A4, E1: a refusal becomes the error an adapter completes the refused operation with:
// the sticky terminal error when the producer failed, else a local definite error.
TEST(A4, RejectionMapsToTheErrorAdaptersReport) {
  Rejection closed{RejectReason::closed, "the producer is closed", std::nullopt};
  EXPECT_EQ(to_error(closed).code, ErrorCode::closed);
  EXPECT_EQ(to_error(closed).certainty, Certainty::definite);
  EXPECT_EQ(to_error(closed).message, "the producer is closed");
  EXPECT_EQ(to_error(Rejection{RejectReason::would_block, "full", std::nullopt}).code, ErrorCode::would_block);
  EXPECT_EQ(to_error(Rejection{RejectReason::record_too_large, "big", std::nullopt}).code, ErrorCode::invalid_record);
  EXPECT_EQ(to_error(Rejection{RejectReason::invalid_record, "empty", std::nullopt}).code, ErrorCode::invalid_record);
  Error sticky = make_error(ErrorCode::stream_closed, Certainty::indefinite, false, "closed by someone else");
  const Error mapped = to_error(Rejection{RejectReason::failed, "failed", sticky});
  EXPECT_EQ(mapped.code, ErrorCode::stream_closed);
  EXPECT_EQ(mapped.certainty, Certainty::indefinite);
  EXPECT_EQ(to_error(Rejection{RejectReason::failed, "failed", std::nullopt}).code, ErrorCode::internal);
}

}  // namespace
}  // namespace prodsm::test
