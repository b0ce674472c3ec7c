// SPDX-License-Identifier: Apache-2.0
// D4: no exception escapes the core, even when an allocation fails — the Producer fails
// with an `internal` error instead, and the refused record is accounted for the same way
// whether it came through submit or submit_many. Allocations fail on demand through a
// replaced global operator new (armed only inside these tests).
#include "failing_allocator.hpp"
#include "harness.hpp"

namespace prodsm::test {
namespace {

// A record larger than a new batch body's first allocation (BatchBody reserves 256 bytes
// on its first append), so appending it after "a" must allocate.
const std::string kBig(4096, 'b');

// D4, E1: a record whose append needs memory that is not there fails the Producer with
// `internal`; the call returns the refusal, nothing throws, later calls see the failure.
TEST(D4, AllocationFailureInSubmitFailsTheProducer) {
  auto p = Producer<DurableStreamsPolicy>::create(ds_config(Linger::after(1h))).value();
  ASSERT_TRUE(p.submit(Instant{}, std::string_view{"a"}).has_value());  // starts the batch: 1 byte of body
  tl::expected<Ticket, Rejection> r = Ticket{0};
  {
    FailNextAllocation fail;
    r = p.submit(Instant{}, std::string_view{kBig});  // past the body's first room: it grows
  }
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, RejectReason::failed);
  ASSERT_TRUE(p.terminal_error().has_value());
  EXPECT_EQ(p.terminal_error()->code, ErrorCode::internal);
  EXPECT_EQ(p.stats().records_accepted, 1U);
  EXPECT_EQ(p.stats().records_rejected, 1U);
  EXPECT_EQ(p.state(), ProducerState::failed);
}

// D4, P1: the same through submit_many — the record being added is refused with the
// failure and counted once, the ones before it keep their tickets.
TEST(D4, AllocationFailureInSubmitManyMatchesSubmit) {
  auto p = Producer<DurableStreamsPolicy>::create(ds_config(Linger::after(1h))).value();
  const std::vector<std::string_view> first{"a"};
  ASSERT_EQ(p.submit_many(Instant{}, first).accepted, 1U);
  const std::vector<std::string_view> more{kBig, "c"};
  SubmitManyResult r;
  {
    FailNextAllocation fail;
    r = p.submit_many(Instant{}, more);
  }
  EXPECT_EQ(r.first.value, 1U);
  EXPECT_EQ(r.accepted, 0U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::failed);
  ASSERT_TRUE(r.refused->terminal.has_value());
  EXPECT_EQ(r.refused->terminal->code, ErrorCode::internal);
  EXPECT_EQ(p.stats().records_accepted, 1U);
  EXPECT_EQ(p.stats().records_rejected, 1U);
  EXPECT_EQ(p.state(), ProducerState::failed);
}

// submit_many of an empty list is no input at all: it does not move the Producer's
// clock, so a later input with an earlier `now` is not read as later (D3).
TEST(D3, SubmitManyOfNothingDoesNotMoveTheClock) {
  auto c = ds_config(Linger::after(5ms));
  auto p = Producer<DurableStreamsPolicy>::create(c).value();
  (void)p.submit_many(at_ms(3), std::span<const std::string_view>{});
  ASSERT_TRUE(p.submit(at_ms(0), std::string_view{"a"}).has_value());
  ASSERT_TRUE(p.next_deadline().has_value());
  EXPECT_EQ(*p.next_deadline(), at_ms(5)) << "linger counts from the submit at 0 ms";
}

}  // namespace
}  // namespace prodsm::test
