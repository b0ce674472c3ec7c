// SPDX-License-Identifier: Apache-2.0
// R1–R3: capacity and bounds.
#include "harness.hpp"

namespace prodsm::test {
namespace {

/// A Durable Streams next offset that grows with `i` (offsets are lexicographically
/// increasing, E5): 20 decimal digits.
std::string detail_offset(std::uint64_t i) {
  std::string digits = std::to_string(i);
  return std::string(20 - digits.size(), '0') + digits;
}

// R1: capacity exactly at the byte limit is accepted; one byte more would block.
TEST(R1, CapacityExactlyAtTheByteLimit) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 10;
  c.max_unacked_bytes = 20;
  DsHarness h(c);
  h.submit("0123456789");
  h.submit("0123456789");
  EXPECT_EQ(h.producer().unacked_bytes(), 20U);
  auto r = h.try_submit("x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::would_block);
  EXPECT_EQ(r.error().detail, "max_unacked_bytes reached");
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  h.ack(sends[0], offset("o1"));
  EXPECT_EQ(h.capacity_events(), 1) << "the core announces freed capacity";
  EXPECT_EQ(h.producer().unacked_bytes(), 10U);
  EXPECT_TRUE(h.try_submit("x").has_value());
}

// R1: max_in_flight bounds the batches with an attempt outstanding.
TEST(R1, InFlightBatchesStayWithinMaxInFlight) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_records = 1;
  c.max_in_flight = 2;
  DsHarness h(c);
  for (int i = 0; i < 5; ++i) h.submit("r");
  EXPECT_EQ(h.outbox().size(), 2U);
  EXPECT_EQ(h.producer().in_flight(), 2U);
  h.ack(h.take_send(), offset("o"));
  EXPECT_EQ(h.outbox().size(), 2U) << "the freed slot is used at once";
  EXPECT_LE(h.producer().in_flight(), 2U);
}

// R1: the capacity announcement comes once per would-block episode, after completions.
TEST(R1, CapacityAvailableIsAnnouncedOnceAfterWouldBlock) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 4;
  c.max_unacked_bytes = 4;
  c.max_batch_records = 1;
  DsHarness h(c);
  h.submit("abcd");
  EXPECT_FALSE(h.try_submit("e").has_value());
  EXPECT_FALSE(h.try_submit("e").has_value());
  h.ack(h.take_send(), offset("o"));
  EXPECT_EQ(h.capacity_events(), 1);
  EXPECT_EQ(h.order(), (std::vector<std::string>{"t0-0", "cap"}));
  h.submit("e");
  h.ack(h.take_send(), offset("o2"));
  EXPECT_EQ(h.capacity_events(), 1) << "no would-block since: no announcement";
}

// R2: linger never holds capacity hostage — a would-block seals the partial batch.
TEST(R2, WouldBlockSealsThePartialBatchUnderLongLinger) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 8;
  c.max_unacked_bytes = 8;
  DsHarness h(c);
  h.submit("abc");
  h.submit("de");
  EXPECT_TRUE(h.outbox().empty()) << "partial batch lingering";
  auto r = h.try_submit("fghi");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::would_block);
  ASSERT_EQ(h.outbox().size(), 1U) << "sealed and sent at the would-block";
  EXPECT_EQ(h.take_send().body, "abcde");
}

// R2: seal_partial_batch (for a refusal above the core, the clients'
// max_pending_records) sends the partial batch at once, with no barrier and no linger,
// whatever the linger (here none at all); with no open batch, or once closed, it is
// nothing.
TEST(R2, SealPartialBatchSendsTheOpenBatchWithoutABarrier) {
  DsHarness h(ds_config(Linger::disabled()));
  h.seal_partial_batch();
  EXPECT_TRUE(h.outbox().empty()) << "no open batch: nothing";
  h.submit("abc");
  h.submit("de");
  EXPECT_TRUE(h.outbox().empty()) << "partial batch, no linger timer";
  h.seal_partial_batch();
  ASSERT_EQ(h.outbox().size(), 1U) << "sealed and sent";
  const auto send = h.take_send();
  EXPECT_EQ(send.body, "abcde");
  EXPECT_EQ(h.producer().stats().barriers_accepted, 0U);
  h.submit("f");
  EXPECT_TRUE(h.outbox().empty()) << "the next record opens a new batch, lingering again";
  h.ack(send, offset("o1"));
  (void)h.close();
  h.seal_partial_batch();  // closing: the close sealed it already
  EXPECT_EQ(h.take_all_sends().size(), 1U);
}

// R3: max_unacked_batches bounds the batch queue (tiny records, one per batch).
TEST(R3, BatchQueueIsBounded) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_records = 1;
  c.max_in_flight = 2;
  c.max_unacked_batches = 3;
  DsHarness h(c);
  h.submit("a");
  h.submit("b");
  h.submit("c");
  auto r = h.try_submit("d");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().detail, "max_unacked_batches reached");
  EXPECT_EQ(h.producer().unacked_batches(), 3U);
}

// R3: pending barriers are bounded too.
TEST(R3, PendingBarriersAreBounded) {
  auto c = ds_config(Linger::after(1h));
  c.max_pending_barriers = 2;
  DsHarness h(c);
  h.submit("a");
  h.flush();
  h.flush();
  auto r = h.try_flush();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::would_block);
  h.ack(h.take_send(), offset("o"));
  EXPECT_EQ(h.barriers().size(), 2U);
  EXPECT_EQ(h.capacity_events(), 1);
  EXPECT_TRUE(h.try_flush().has_value());
}

// R3: no input sequence grows memory without bound: a long run keeps every counter of
// outstanding work within its limit.
TEST(R3, LongRunStaysWithinAllBounds) {
  auto c = ds_idempotent(Linger::after(2ms));
  c.max_batch_bytes = 64;
  c.max_unacked_bytes = 256;
  c.max_in_flight = 3;
  c.max_unacked_batches = 8;
  c.max_pending_barriers = 4;
  c.retry.backoff_initial_ns = 1ms;
  c.retry.backoff_max_ns = 2ms;
  DsHarness h(c);
  std::uint64_t accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    if (h.try_submit(std::string(static_cast<std::size_t>(1 + i % 20), 'x'))) ++accepted;
    if (i % 7 == 0) (void)h.try_flush();
    if (i % 3 == 0) h.advance(1ms);
    if (i % 2 == 0 && !h.outbox().empty()) {
      auto s = h.take_send();
      if (i % 11 == 0) {
        h.fail(s, unavailable());
      } else {
        h.ack(s, offset(detail_offset(s.first + s.count)));  // batch order: how the server appends them
      }
    }
    EXPECT_LE(h.producer().unacked_bytes(), 256U);
    EXPECT_LE(h.producer().in_flight(), 3U);
    EXPECT_LE(h.producer().unacked_batches(), 8U);
    EXPECT_LE(h.producer().pending_actions(), 0U) << "harness drains after every input";
  }
  EXPECT_GT(accepted, 1000U);
  EXPECT_EQ(h.producer().state(), ProducerState::open);
}

}  // namespace
}  // namespace prodsm::test
