// SPDX-License-Identifier: Apache-2.0
// P1–P4: ordering, tickets and acknowledgements.
#include "harness.hpp"

namespace prodsm::test {
namespace {

// P1: submit, flush and close are linearized in call order — a barrier covers exactly
// what was submitted before the call, the close covers everything.
TEST(P1, SubmitFlushCloseAreLinearizedInCallOrder) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.submit("b");
  const auto b0 = h.flush();
  h.submit("c");
  const auto b1 = h.flush();
  h.submit("d");
  h.close();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 3U);
  EXPECT_EQ(sends[0].body, "ab");
  EXPECT_EQ(sends[1].body, "c");
  EXPECT_EQ(sends[2].body, "d");
  h.ack(sends[2], offset("o3"));
  h.ack(sends[1], offset("o2"));
  EXPECT_TRUE(h.barriers().empty()) << "b0 covers a,b which are not acked yet";
  h.ack(sends[0], offset("o1"));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-1", "b" + std::to_string(b0), "t2-2", "b" + std::to_string(b1),
                                                 "t3-3", "closed"}));
}

// P2: every accepted submit gets exactly one completion; a rejected one gets none.
TEST(P2, EveryAcceptedSubmitCompletesExactlyOnceAndRejectedOnesNever) {
  auto c = ds_config(Linger::disabled());
  c.max_batch_bytes = 4;
  c.max_unacked_bytes = 8;
  c.max_batch_records = 2;
  DsHarness h(c);
  std::uint64_t accepted = 0;
  int rejected = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = h.try_submit(i % 5 == 4 ? "toolarge" : "xy");
    if (r) {
      EXPECT_EQ(r->value, accepted) << "tickets are dense, in submit order";
      ++accepted;
    } else {
      ++rejected;
    }
    if (i % 3 == 2) {
      for (auto& s : h.take_all_sends()) h.ack(s, offset("o" + std::to_string(s.batch.value)));
    }
  }
  h.close();
  for (auto& s : h.take_all_sends()) h.ack(s, offset("o"));
  ASSERT_TRUE(h.closed().has_value());
  EXPECT_GT(rejected, 0);
  const auto outcomes = h.ticket_outcomes(accepted);
  for (std::uint64_t t = 0; t < accepted; ++t) EXPECT_EQ(outcomes[t], 1) << "ticket " << t;
  std::uint64_t completed = 0;
  for (const auto& d : h.completions()) completed += d.last - d.first + 1;
  EXPECT_EQ(completed, accepted) << "no completion for a rejected submit";
  EXPECT_EQ(h.producer().stats().records_accepted, accepted);
}

// P3: completions follow submission order even when acks arrive out of order.
TEST(P3, CompletionsFollowSubmissionOrderWhenAcksArriveOutOfOrder) {
  auto c = ds_config(Linger::disabled());
  c.max_batch_records = 1;
  DsHarness h(c);
  for (int i = 0; i < 4; ++i) h.submit("r");
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 4U);
  h.ack(sends[3], offset("o4"));
  h.ack(sends[1], offset("o2"));
  EXPECT_TRUE(h.completions().empty()) << "batch 0 is not acked: nothing may complete";
  h.ack(sends[0], offset("o1"));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "t1-1"}));
  h.ack(sends[2], offset("o3"));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "t1-1", "t2-2", "t3-3"}));
}

// P3: errors and close keep submission order too.
TEST(P3, ErrorsAndCloseKeepSubmissionOrder) {
  auto c = ds_config(Linger::disabled());
  c.max_batch_records = 1;
  DsHarness h(c);
  for (int i = 0; i < 3; ++i) h.submit("r");
  h.flush();
  h.submit("late");
  h.close();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 4U);
  h.ack(sends[0], offset("o1"));
  h.fail(sends[1], failure(ErrorCode::rejected, Certainty::definite, false));
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "t1-1", "t2-2", "b0", "t3-3", "closed"}));
  EXPECT_TRUE(h.completions()[0].ok());
  for (std::size_t i = 1; i < 4; ++i) EXPECT_FALSE(h.completions()[i].ok());
}

// P4: a success carries the batch ack; record i of the batch is ticket first + i; on
// Durable Streams the ack is the next offset after the batch plus a duplicate flag.
TEST(P4, DurableStreamsAckCarriesNextOffsetDuplicateFlagAndIndex) {
  DsHarness h(ds_idempotent(Linger::after(1h)));
  h.submit("a");
  h.submit("b");
  h.submit("c");
  h.flush();
  auto s = h.take_send();
  h.ack(s, offset("0000_0003"));
  ASSERT_EQ(h.completions().size(), 1U);
  const auto& d = h.completions()[0];
  EXPECT_EQ(d.first, 0U);
  EXPECT_EQ(d.last, 2U);
  EXPECT_EQ(d.ack->next_offset, "0000_0003");
  EXPECT_FALSE(d.ack->duplicate);
  TicketsCompleted<DurableStreamsPolicy> range{d.batch, Ticket{d.first}, Ticket{d.last}, *d.ack};
  EXPECT_EQ(index_in_batch(range, Ticket{2}), 2U);
}

// P4: on S2, position = batch start + index.
TEST(P4, S2PositionIsBatchStartPlusIndex) {
  S2Harness h(s2_config(Linger::after(1h)));
  h.submit("a");
  h.submit("b");
  h.submit("c");
  h.flush();
  auto s = h.take_send();
  h.ack(s, positions(40, 43));
  ASSERT_EQ(h.completions().size(), 1U);
  const auto& d = h.completions()[0];
  TicketsCompleted<S2Policy> range{d.batch, Ticket{d.first}, Ticket{d.last}, *d.ack};
  for (std::uint64_t t = 0; t < 3; ++t) {
    EXPECT_EQ(d.ack->start_seq_num + index_in_batch(range, Ticket{t}), 40 + t);
  }
}

}  // namespace
}  // namespace prodsm::test
