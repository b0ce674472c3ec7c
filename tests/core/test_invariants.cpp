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
#include "prodsm/detail/invariants.hpp"
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
  std::vector<Batch<FakePolicy>> ring = std::vector<Batch<FakePolicy>>(4);
  std::uint32_t head = 0;
  std::uint32_t size = 0;
  std::uint32_t in_flight = 0;
  std::uint32_t backoff_count = 0;
  std::uint64_t unacked_bytes = 0;
  std::uint64_t next_ticket = 0;
  std::uint64_t completed_tickets = 0;
  std::deque<Barrier> barriers;
  std::vector<int> pool;
  std::size_t pool_limit = 4;
  bool closed = false;
  bool closing = false;
  bool refusing = false;
  Batch<FakePolicy>* open_ = nullptr;
  const Batch<FakePolicy>& at(std::uint32_t i) const { return ring[(head + i) % ring.size()]; }

  /// Two batches: tickets 0..2 in flight, 3..4 open; a barrier over all five.
  static FakeImpl consistent() {
    FakeImpl s;
    s.ring[0] = Batch<FakePolicy>{};
    s.ring[0].id = 7;
    s.ring[0].count = 3;
    s.ring[0].metered_bytes = 30;
    s.ring[0].body_bytes = 30;
    s.ring[0].state = BatchState::in_flight;
    s.ring[1].id = 8;
    s.ring[1].first_ticket = 3;
    s.ring[1].count = 2;
    s.ring[1].metered_bytes = 20;
    s.ring[1].body_bytes = 20;
    s.ring[1].state = BatchState::open;
    s.size = 2;
    s.in_flight = 1;
    s.unacked_bytes = 50;
    s.next_ticket = 5;
    s.barriers.push_back({0, 5});
    return s;
  }
};

/// The first broken invariant of `s` ("" when all hold), its open batch pointed at.
std::string broken(FakeImpl& s) {
  s.open_ = s.size > 0 && s.at(s.size - 1).state == BatchState::open ? &s.ring[(s.head + s.size - 1) % 4] : s.open_;
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
  s.ring[1].first_ticket = 4;
  s.next_ticket = 6;
  EXPECT_NE(broken(s).find("not contiguous"), std::string::npos) << broken(s);
}

TEST(Invariants, AnAcceptedRecordInNoBatchIsNamed) {
  FakeImpl s = FakeImpl::consistent();
  s.next_ticket = 6;
  EXPECT_NE(broken(s).find("an accepted record is in no batch"), std::string::npos) << broken(s);
}

TEST(Invariants, ASlotOutsideTheRingInUseIsNamed) {
  FakeImpl s = FakeImpl::consistent();
  s.ring[3].state = BatchState::queued;
  EXPECT_NE(broken(s).find("outside the ring is in use"), std::string::npos) << broken(s);
}

TEST(Invariants, APendingBarrierAlreadyCoveredIsNamed) {  // F1
  FakeImpl s = FakeImpl::consistent();
  s.barriers.front().cutoff = 0;
  EXPECT_NE(broken(s).find("whose records all completed"), std::string::npos) << broken(s);
}

TEST(Invariants, AFailedProducerThatTakesSubmitsIsNamed) {  // E1
  FakeImpl s = FakeImpl::consistent();
  s.failed = make_error(ErrorCode::rejected, Certainty::definite, false, "x");
  EXPECT_NE(broken(s).find("refusing"), std::string::npos) << broken(s);
}

TEST(Invariants, APoisonedProducerIsNotChecked) {  // D4: bookkeeping abandoned on purpose
  FakeImpl s = FakeImpl::consistent();
  s.failed = make_error(ErrorCode::internal, Certainty::indefinite, false, "allocation failed");
  s.in_flight = 9;
  EXPECT_EQ(broken(s), "");
}

}  // namespace
}  // namespace prodsm::detail
