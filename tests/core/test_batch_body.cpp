// SPDX-License-Identifier: Apache-2.0
// prodsm::BatchBody, the buffer a policy frames a batch into (B1, S2: framed once,
// resent byte-identical): appends keep every byte in order across growth, clear keeps
// the memory the pool recycles, moves leave the source empty.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <string_view>

#include "prodsm/batch_body.hpp"

namespace prodsm {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}
std::string text_of(const BatchBody& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

TEST(BatchBody, StartsEmptyWithNoMemory) {
  BatchBody b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0U);
  EXPECT_EQ(b.capacity(), 0U);
  EXPECT_EQ(b.begin(), b.end());
}

TEST(BatchBody, AppendsKeepEveryByteInOrderAcrossGrowth) {  // B1: records framed in submit order
  BatchBody b;
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    const std::string record = std::to_string(i) + ",";
    b.append(bytes_of(record));
    expected += record;
    if (i % 7 == 0) {
      b.push_back(std::byte{'|'});
      expected += '|';
    }
  }
  EXPECT_EQ(text_of(b), expected);
  EXPECT_GE(b.capacity(), b.size());
  EXPECT_EQ(static_cast<std::size_t>(b.end() - b.begin()), b.size());
}

TEST(BatchBody, AnEmptyAppendChangesNothing) {  // including on a body with no memory yet
  BatchBody b;
  b.append({});
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.capacity(), 0U);
  b.append(bytes_of("ab"));
  b.append({});
  EXPECT_EQ(text_of(b), "ab");
}

TEST(BatchBody, ClearKeepsTheMemoryForTheNextBatch) {  // the buffer pool's reuse (no allocation per batch)
  BatchBody b;
  b.reserve(1000);
  const std::byte* memory = b.data();
  b.append(bytes_of(std::string(900, 'x')));
  EXPECT_EQ(b.data(), memory);  // the room was there: no reallocation
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.capacity(), 1000U);
  b.append(bytes_of("y"));
  EXPECT_EQ(b.data(), memory);
  EXPECT_EQ(text_of(b), "y");
}

TEST(BatchBody, ReserveNeverShrinksOrLosesBytes) {
  BatchBody b;
  b.append(bytes_of("abc"));
  const std::size_t grown = b.capacity();
  b.reserve(1);
  EXPECT_EQ(b.capacity(), grown);
  b.reserve(grown + 4096);
  EXPECT_EQ(b.capacity(), grown + 4096);
  EXPECT_EQ(text_of(b), "abc");
}

TEST(BatchBody, MoveLeavesTheSourceEmptyWithNoMemory) {
  BatchBody a;
  a.append(bytes_of("abc"));
  BatchBody b(std::move(a));
  EXPECT_EQ(text_of(b), "abc");
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the documented moved-from state
  EXPECT_EQ(a.capacity(), 0U);
  BatchBody c;
  c.append(bytes_of("z"));
  c = std::move(b);
  EXPECT_EQ(text_of(c), "abc");
  EXPECT_EQ(b.capacity(), 0U);  // NOLINT(bugprone-use-after-move)
}

TEST(BatchBody, ASpanViewsTheBytes) {  // what a SendBatch's body is
  BatchBody b;
  b.append(bytes_of("hello"));
  const std::span<const std::byte> view(b);
  EXPECT_EQ(view.size(), 5U);
  EXPECT_EQ(view.data(), b.data());
}

}  // namespace
}  // namespace prodsm
