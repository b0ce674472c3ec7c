// SPDX-License-Identifier: Apache-2.0
// The core's invariant checks (prodsm/detail/invariants.hpp) can fail: each test builds
// a producer-shaped state that is consistent, breaks one invariant the way a bug would,
// and expects the check to name it (and check_producer_invariants to abort on it). The
// real producer runs them after every input in every test build (PRODSM_CHECK_INVARIANTS).
#include <gtest/gtest.h>

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/config.hpp"
#include "prodsm/detail/batch.hpp"
#include "prodsm/detail/batch_ring.hpp"
#include "prodsm/detail/buffer_pool.hpp"
#include "prodsm/detail/invariants.hpp"
#include "prodsm/detail/lifecycle.hpp"
#include "prodsm/error.hpp"

namespace prodsm::detail {
namespace {

struct FakePolicy {
  struct Stamp {};
  struct Ack {};
};

/// The members check_producer_invariants reads, as Producer<Policy>::Impl has them.
struct FakeImpl {
  using BatchState = detail::BatchState;
  struct Barrier {
    std::uint64_t id;
    std::uint64_t cutoff;
  };
  struct Config {
    std::uint32_t max_unacked_batches = 4;
    std::uint32_t max_batch_records = 10;
    std::uint64_t max_batch_bytes = 100;
    std::uint32_t max_in_flight = 2;
    std::uint64_t max_unacked_bytes = 300;
    std::uint32_t max_pending_barriers = 2;
  } config;
  std::optional<Error> failed;
  BatchRing<Batch<FakePolicy>> ring{4};
  std::uint32_t in_flight = 0;
  std::uint32_t backoff_count = 0;
  std::uint64_t unacked_bytes = 0;
  std::uint64_t next_ticket = 0;
  std::uint64_t completed_tickets = 0;
  std::uint64_t send_serial = 1;       // the batch in flight was sent...
  std::uint64_t sends_handed_out = 1;  // ...and its SendBatch polled
  std::deque<Barrier> barriers;
  BufferPool pool{4, 1000};
  ProducerState lifecycle = ProducerState::open;
  Batch<FakePolicy>* open_ = nullptr;
  const Batch<FakePolicy>& at(std::uint32_t i) const { return ring.slot(i); }

  /// Two batches: tickets 0..2 in flight, 3..4 open; a barrier over all five.
  static FakeImpl consistent() {
    FakeImpl s;
    Batch<FakePolicy>& first = s.ring.push_back();
    first.id = 7;
    first.count = 3;
    first.metered_bytes = 30;
    first.body_bytes = 30;
    first.state = BatchState::in_flight;
    Batch<FakePolicy>& second = s.ring.push_back();
    second.id = 8;
    second.first_ticket = 3;
    second.count = 2;
    second.metered_bytes = 20;
    second.body_bytes = 20;
    second.state = BatchState::open;
    s.in_flight = 1;
    s.unacked_bytes = 50;
    s.next_ticket = 5;
    s.barriers.push_back({0, 5});
    return s;
  }
};

/// The first broken invariant of `s` ("" when all hold), its open batch pointed at.
std::string broken(FakeImpl& s) {
  const std::uint32_t n = s.ring.size();
  s.open_ = n > 0 && s.at(n - 1).state == BatchState::open ? &s.ring.slot(n - 1) : s.open_;
  const char* what = first_broken_invariant(s);
  return what == nullptr ? std::string{} : std::string{what};
}

TEST(Invariants, AConsistentStatePasses) {
  FakeImpl s = FakeImpl::consistent();
  EXPECT_EQ(broken(s), "");
  check_producer_invariants(s);  // does not abort
}

TEST(InvariantsDeathTest, ABrokenInvariantAborts) {
  FakeImpl s = FakeImpl::consistent();
  s.backoff_count = 1;
  ASSERT_NE(broken(s), "");
  EXPECT_DEATH(check_producer_invariants(s), "");
}

TEST(Invariants, ACounterThatDisagreesWithTheRingIsNamed) {
  FakeImpl s = FakeImpl::consistent();
  s.in_flight = 2;
  EXPECT_NE(broken(s).find("in_flight: the counter does not match"), std::string::npos) << broken(s);
}

TEST(Invariants, UnackedBytesAboveTheLimitIsNamed) {  // R1
  FakeImpl s = FakeImpl::consistent();
  s.config.max_unacked_bytes = 40;
  EXPECT_NE(broken(s).find("above max_unacked_bytes"), std::string::npos) << broken(s);
}

TEST(Invariants, TicketsWithAHoleBetweenBatchesIsNamed) {  // P3
  FakeImpl s = FakeImpl::consistent();
  s.ring.slot(1).first_ticket = 4;
  s.next_ticket = 6;
  EXPECT_NE(broken(s).find("not contiguous"), std::string::npos) << broken(s);
}

TEST(Invariants, AnAcceptedRecordInNoBatchIsNamed) {
  FakeImpl s = FakeImpl::consistent();
  s.next_ticket = 6;
  EXPECT_NE(broken(s).find("an accepted record is in no batch"), std::string::npos) << broken(s);
}

TEST(Invariants, MoreSendsHandedOutThanEmittedIsNamed) {  // E5: what "handed out" counts
  FakeImpl s = FakeImpl::consistent();
  s.sends_handed_out = 2;
  EXPECT_NE(broken(s).find("more SendBatch actions handed out than emitted"), std::string::npos) << broken(s);
}

TEST(Invariants, ASlotOutsideTheRingInUseIsNamed) {
  FakeImpl s = FakeImpl::consistent();
  s.ring.slot(3).state = BatchState::queued;
  EXPECT_NE(broken(s).find("outside the ring is in use"), std::string::npos) << broken(s);
}

TEST(Invariants, APendingBarrierAlreadyCoveredIsNamed) {  // F1
  FakeImpl s = FakeImpl::consistent();
  s.barriers.front().cutoff = 0;
  EXPECT_NE(broken(s).find("whose records all completed"), std::string::npos) << broken(s);
}

TEST(Invariants, ATerminalErrorOnALiveProducerIsNamed) {  // E1: the error and the lifecycle agree
  FakeImpl s = FakeImpl::consistent();
  s.failed = make_error(ErrorCode::rejected, Certainty::definite, false, "x");
  EXPECT_NE(broken(s).find("yet the producer is live"), std::string::npos) << broken(s);
}

TEST(Invariants, AFailedProducerWithoutItsErrorIsNamed) {  // E1
  FakeImpl s = FakeImpl::consistent();
  s.lifecycle = ProducerState::failed;
  while (!s.ring.empty()) {  // every batch released, as fail_terminal leaves them
    s.ring.slot(0).state = BatchState::empty;
    s.ring.pop_front();
  }
  s.open_ = nullptr;
  s.barriers.clear();
  s.in_flight = 0;
  s.unacked_bytes = 0;
  s.completed_tickets = s.next_ticket;
  EXPECT_NE(broken(s).find("failed without a terminal error"), std::string::npos) << broken(s);
  s.failed = make_error(ErrorCode::rejected, Certainty::definite, false, "x");
  EXPECT_EQ(broken(s), "");
}

TEST(Invariants, AClosedProducerHoldingWorkIsNamed) {  // C1: Closed is last
  FakeImpl s = FakeImpl::consistent();
  s.lifecycle = ProducerState::closed;
  EXPECT_NE(broken(s).find("a failed or closed producer holds work"), std::string::npos) << broken(s);
}

TEST(BatchStates, TheTableAllowsTheLifeOfABatch) {  // B1, E4, S4, S5, P3
  using S = BatchState;
  const std::pair<S, S> allowed[] = {{S::empty, S::open},      {S::open, S::queued},      {S::queued, S::in_flight},
                                     {S::in_flight, S::acked}, {S::in_flight, S::queued}, {S::queued, S::backoff},
                                     {S::backoff, S::queued},  {S::queued, S::parked},    {S::parked, S::queued},
                                     {S::queued, S::queued},   {S::acked, S::queued},     {S::acked, S::empty},
                                     {S::open, S::empty},      {S::in_flight, S::empty},  {S::parked, S::empty},
                                     {S::backoff, S::empty},   {S::queued, S::empty}};
  for (const auto& [from, to] : allowed) {
    EXPECT_TRUE(batch_edge_allowed(from, to)) << static_cast<int>(from) << " -> " << static_cast<int>(to);
  }
}

TEST(BatchStates, TheTableRefusesWhatNoBatchMayDo) {  // P3, B1, E4: the negative space
  using S = BatchState;
  const std::pair<S, S> refused[] = {
      {S::empty, S::empty},      {S::empty, S::queued},      {S::open, S::open},           {S::open, S::in_flight},
      {S::queued, S::acked},     {S::queued, S::open},       {S::in_flight, S::in_flight}, {S::in_flight, S::backoff},
      {S::in_flight, S::parked}, {S::backoff, S::in_flight}, {S::parked, S::in_flight},    {S::acked, S::acked},
      {S::acked, S::in_flight},  {S::backoff, S::backoff}};
  for (const auto& [from, to] : refused) {
    EXPECT_FALSE(batch_edge_allowed(from, to)) << static_cast<int>(from) << " -> " << static_cast<int>(to);
  }
  int allowed = 0;  // the table has exactly the edges batch.hpp lists
  for (std::size_t f = 0; f < kBatchStates; ++f) {
    for (std::size_t t = 0; t < kBatchStates; ++t) {
      allowed += batch_edge_allowed(static_cast<S>(f), static_cast<S>(t)) ? 1 : 0;
    }
  }
  EXPECT_EQ(allowed, 17);
}

TEST(Lifecycle, OnlyForwardChangesAreAllowed) {  // C1, C2, E1
  using S = ProducerState;
  constexpr S all[] = {S::open, S::closing, S::failed, S::closed};
  int allowed = 0;
  for (const S from : all) {
    for (const S to : all) {
      const bool ok = lifecycle_edge_allowed(from, to);
      allowed += ok ? 1 : 0;
      if (from == S::closed || to == S::open || from == to) {
        EXPECT_FALSE(ok);
      }
    }
  }
  EXPECT_TRUE(lifecycle_edge_allowed(S::open, S::closing));
  EXPECT_TRUE(lifecycle_edge_allowed(S::open, S::failed));
  EXPECT_TRUE(lifecycle_edge_allowed(S::closing, S::failed));
  EXPECT_TRUE(lifecycle_edge_allowed(S::closing, S::closed));
  EXPECT_TRUE(lifecycle_edge_allowed(S::failed, S::closed));
  EXPECT_FALSE(lifecycle_edge_allowed(S::open, S::closed));     // C1: Closed only after draining
  EXPECT_FALSE(lifecycle_edge_allowed(S::failed, S::closing));  // E1: nothing left to drain
  EXPECT_EQ(allowed, 5);
}

TEST(Invariants, APoisonedProducerIsNotChecked) {  // D4: bookkeeping abandoned on purpose
  FakeImpl s = FakeImpl::consistent();
  s.failed = make_error(ErrorCode::internal, Certainty::indefinite, false, "allocation failed");
  s.in_flight = 9;
  EXPECT_EQ(broken(s), "");
}

}  // namespace
}  // namespace prodsm::detail
