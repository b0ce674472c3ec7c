// SPDX-License-Identifier: Apache-2.0
// The core's two data structures on their own: the batch ring (detail/batch_ring.hpp:
// seal order, R3's fixed capacity, P3's removal from the oldest end only) and the
// buffer pool (detail/buffer_pool.hpp: no allocation per batch in steady state, bounded).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "prodsm/detail/batch_ring.hpp"
#include "prodsm/detail/buffer_pool.hpp"

namespace prodsm::detail {
namespace {

TEST(BatchRing, KeepsSealOrderAcrossTheWrap) {  // P3: index 0 is always the oldest
  BatchRing<int> ring(3);
  EXPECT_EQ(ring.capacity(), 3U);
  EXPECT_TRUE(ring.empty());
  int next = 0;
  int oldest = 0;
  for (int round = 0; round < 10; ++round) {  // wraps around several times
    while (!ring.full()) ring.push_back() = next++;
    EXPECT_EQ(ring.size(), 3U);
    for (std::uint32_t i = 0; i < ring.size(); ++i) EXPECT_EQ(ring.slot(i), oldest + static_cast<int>(i));
    ring.pop_front();
    ++oldest;
    if (round % 2 == 0) {  // sometimes drain two
      ring.pop_front();
      ++oldest;
    }
    EXPECT_LT(ring.head(), ring.capacity());
  }
}

TEST(BatchRing, ABatchNeverMoves) {  // pointers into the ring stay valid while in it
  BatchRing<int> ring(4);
  ring.push_back() = 1;
  int* second = &ring.push_back();
  *second = 2;
  ring.pop_front();
  ring.push_back() = 3;
  ring.push_back() = 4;
  ring.push_back() = 5;  // wrapped into the first slot
  EXPECT_TRUE(ring.full());
  EXPECT_EQ(&ring.slot(0), second);
  EXPECT_EQ(ring.slot(3), 5);
}

TEST(BatchRing, FreeSlotsComeInTheOrderPushBackUsesThem) {  // start_batch resets slot(size())
  BatchRing<int> ring(3);
  ring.push_back() = 10;
  ring.pop_front();
  int* next_free = &ring.slot(ring.size());
  EXPECT_EQ(&ring.push_back(), next_free);
  ring.abandon();  // D4: a poisoned producer forgets every batch
  EXPECT_TRUE(ring.empty());
}

TEST(BufferPool, ReusesReleasedBuffersInsteadOfAllocating) {  // steady state: no allocation per batch
  BufferPool pool(2, 1024);
  BatchBuffers a = pool.take();
  EXPECT_EQ(a.body.capacity(), 0U);  // nothing kept yet: a new, empty set
  a.body.reserve(100);
  a.record_ends.push_back(100);
  const std::byte* memory = a.body.data();
  pool.give(a);
  EXPECT_EQ(a.body.capacity(), 0U);  // the giver keeps nothing
  EXPECT_EQ(pool.size(), 1U);
  BatchBuffers b = pool.take();
  EXPECT_EQ(b.body.data(), memory);  // the same memory, cleared
  EXPECT_TRUE(b.body.empty());
  EXPECT_TRUE(b.record_ends.empty());
  EXPECT_GE(b.body.capacity(), 100U);
  EXPECT_EQ(pool.size(), 0U);
}

TEST(BufferPool, KeepsAtMostItsLimit) {  // bounded: a burst of releases frees the rest
  BufferPool pool(2, 1024);
  std::vector<BatchBuffers> sets(5);
  for (auto& s : sets) s.body.reserve(10);
  for (auto& s : sets) pool.give(s);
  EXPECT_EQ(pool.size(), 2U);
  EXPECT_EQ(pool.limit(), 2U);
}

TEST(BufferPool, FreesAnOversizedBody) {  // one huge batch does not pin its memory
  BufferPool pool(4, 1024);
  BatchBuffers big;
  big.body.reserve(4096);
  pool.give(big);
  EXPECT_EQ(pool.size(), 0U);
  BatchBuffers fits;
  fits.body.reserve(1024);
  pool.give(fits);
  EXPECT_EQ(pool.size(), 1U);
}

}  // namespace
}  // namespace prodsm::detail
