// SPDX-License-Identifier: Apache-2.0
// `prodsm produce --resume`'s prefix (tools/src/resume.hpp), without a network: the
// stream's data spooled in pieces, then the input matched record by record (issue 22:
// an exact, record-level resume whatever the batch boundaries; bounded memory).
#include "resume.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace prodsm::tools {
namespace {

StreamPrefix spooled(bool json, std::initializer_list<std::string_view> pieces) {
  auto p = StreamPrefix::create(json);
  EXPECT_TRUE(p.has_value()) << p.error();
  for (auto piece : pieces) EXPECT_TRUE(json ? p->add_value(piece) : p->add_bytes(piece));
  EXPECT_TRUE(p->finish_spool().has_value());
  return std::move(*p);
}

TEST(StreamPrefix, BytesHeldAreSkippedWhateverThePiecesTheStreamCameIn) {
  // The read's pieces split records anywhere; the match is by record.
  auto p = spooled(false, {"a\nb", "b\n", "c", "c\n"});
  EXPECT_EQ(p.spooled_bytes(), 8u);
  EXPECT_EQ(p.holds("a\n", 1).value(), true);
  EXPECT_EQ(p.holds("bb\n", 2).value(), true);
  EXPECT_EQ(p.holds("cc\n", 3).value(), true);
  EXPECT_EQ(p.holds("d\n", 4).value(), false) << "past the stream's records: send it";
  EXPECT_EQ(p.holds("e\n", 5).value(), false) << "and every later one";
  EXPECT_EQ(p.skipped(), 3u);
  EXPECT_FALSE(p.at_end().has_value());
}

TEST(StreamPrefix, ARecordThatDiffersIsRefusedNamingTheLineAndByte) {
  auto p = spooled(false, {"a\nx\n"});
  EXPECT_TRUE(p.holds("a\n", 1).value());
  auto r = p.holds("b\n", 2);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("input line 2 differs from the stream at byte 2"), std::string::npos) << r.error();
  // The byte named is where they differ, not where the line starts: "1\n" against "1\r\n".
  auto crlf = spooled(false, {"1\n"});
  auto q = crlf.holds("1\r\n", 1);
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().find("differs from the stream at byte 1 (the line starts at byte 0)"), std::string::npos)
      << q.error();
}

// Bytes mode: a stream ending inside a record (a run whose input was cut off mid-line)
// holds its first bytes; the rest is sent, and the stream is the input's bytes again.
TEST(StreamPrefix, AStreamEndingInsideARecordHoldsItsFirstBytes) {
  auto p = spooled(false, {"a\nbb"});
  EXPECT_TRUE(p.holds("a\n", 1).value());
  EXPECT_EQ(p.held_part(), 0u);
  auto r = p.holds("bbb\n", 2);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_FALSE(*r) << "sent";
  EXPECT_EQ(p.held_part(), 2u) << "from its third byte";
  EXPECT_FALSE(p.holds("c\n", 3).value());
  EXPECT_EQ(p.held_part(), 0u) << "every later record is sent whole";
  EXPECT_FALSE(p.at_end().has_value());
  EXPECT_EQ(p.skipped(), 1u);
  auto other = spooled(false, {"a\nbx"});
  EXPECT_TRUE(other.holds("a\n", 1).value());
  auto d = other.holds("bbb\n", 2);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().find("differs"), std::string::npos) << d.error();
}

TEST(StreamPrefix, AStreamHoldingMoreThanTheInputIsNamedAtTheEnd) {
  auto p = spooled(false, {"a\nb\nc\n"});
  EXPECT_TRUE(p.holds("a\n", 1).value());
  ASSERT_TRUE(p.at_end().has_value());
  EXPECT_NE(p.at_end()->find("4 bytes more than the input"), std::string::npos) << *p.at_end();
}

TEST(StreamPrefix, JsonValuesCompareAsValuesNotBytes) {
  auto p = spooled(true, {R"({ "a" : 1 })", "[1, 2]", R"("line\nbreak")"});
  EXPECT_TRUE(p.holds(R"({"a":1})", 1).value());
  EXPECT_TRUE(p.holds("[1,2]", 2).value());
  EXPECT_TRUE(p.holds(R"( "line\nbreak" )", 3).value()) << "an escaped newline stays one spooled value";
  EXPECT_FALSE(p.holds("4", 4).value());
  auto q = spooled(true, {"1", "2"});
  EXPECT_TRUE(q.holds("1", 1).value());
  auto r = q.holds("3", 2);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("differs from the stream's JSON value 2"), std::string::npos) << r.error();
  auto more = spooled(true, {"1", "2", "3"});
  EXPECT_TRUE(more.holds("1", 1).value());
  ASSERT_TRUE(more.at_end().has_value());
  EXPECT_NE(more.at_end()->find("2 JSON values more"), std::string::npos) << *more.at_end();
}

TEST(StreamPrefix, AValueThatDoesNotParseStopsTheSpoolNamingIt) {
  auto p = StreamPrefix::create(true);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->add_value("1"));
  EXPECT_FALSE(p->add_value(std::string(2000, '[') + std::string(2000, ']'))) << "nesting over 1024";
  ASSERT_TRUE(p->error().has_value());
  EXPECT_NE(p->error()->find("JSON value 2 does not parse"), std::string::npos) << *p->error();
  EXPECT_FALSE(p->add_value("3")) << "sticky";
  EXPECT_FALSE(p->finish_spool().has_value());
}

// Bounded memory: a stream of 20 MiB in 64 KiB pieces is spooled and matched record by
// record (the spool holds it, not the heap; memory itself is measured in bench/read).
TEST(StreamPrefix, ALargeStreamIsMatchedRecordByRecord) {
  auto p = StreamPrefix::create(false);
  ASSERT_TRUE(p.has_value());
  const std::string record = std::string(99, 'r') + "\n";
  std::string piece;
  for (int i = 0; i < 655; ++i) piece += record;  // 65,500 bytes
  for (int i = 0; i < 320; ++i) ASSERT_TRUE(p->add_bytes(piece));
  ASSERT_TRUE(p->finish_spool().has_value());
  std::uint64_t held = 0;
  while (p->holds(record, held + 1).value()) ++held;
  EXPECT_EQ(held, 655u * 320u);
}

TEST(StreamPrefix, AnUnwritableTmpdirIsAnErrorNamingIt) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", "/nonexistent-dir-for-prodsm", 1);
  auto p = StreamPrefix::create(false);
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().find("/nonexistent-dir-for-prodsm"), std::string::npos) << p.error();
}

}  // namespace
}  // namespace prodsm::tools
