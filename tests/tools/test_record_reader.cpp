// SPDX-License-Identifier: Apache-2.0
// The CLI's record reader (tools/src/record_reader.hpp): one record per line, bounded
// line length (R3: a limit on everything), JSON lines validated with their line number.
#include <gtest/gtest.h>

#include <sstream>
#include <streambuf>

#include "record_reader.hpp"

namespace prodsm::tools {
namespace {

std::vector<std::string> read_all(RecordReader& reader, std::optional<LineError>* error = nullptr) {
  std::vector<std::string> out;
  while (true) {
    auto next = reader.next();
    if (!next) {
      if (error != nullptr) *error = next.error();
      return out;
    }
    if (!*next) return out;
    out.emplace_back(**next);
  }
}

TEST(RecordReader, BytesModeKeepsEveryByteIncludingTheLastLineWithoutNewline) {
  std::istringstream in(std::string("a\n\nb\r\nc\0d\nlast", 14));
  RecordReader reader(in, RecordReader::Mode::bytes, 1024);
  const auto records = read_all(reader);
  EXPECT_EQ(records, (std::vector<std::string>{"a\n", "\n", "b\r\n", std::string("c\0d\n", 4), "last"}));
  EXPECT_EQ(reader.bytes_read(), 14U);
}

// S2 (`produce s2://`): one record per line without its '\n'; every other byte kept (a
// '\r' too), an empty line an empty record.
TEST(RecordReader, LinesModeDropsOnlyTheNewline) {
  std::istringstream in(std::string("a\n\nb\r\nc\0d\nlast", 14));
  RecordReader reader(in, RecordReader::Mode::lines, 1024);
  EXPECT_EQ(read_all(reader), (std::vector<std::string>{"a", "", "b\r", std::string("c\0d", 3), "last"}));
  EXPECT_EQ(reader.bytes_read(), 14U);
}

// Lines mode bounds the record, not the line: `max_record_bytes` bytes before the '\n' (or
// at the end of the input) are taken, one more is refused naming that largest record.
TEST(RecordReader, LinesModeLimitIsTheRecordWithoutItsNewline) {
  for (const std::string last : {"12345678\n", "12345678"}) {
    std::istringstream in("1234567\n" + last);
    RecordReader reader(in, RecordReader::Mode::lines, 7);
    std::optional<LineError> error;
    EXPECT_EQ(read_all(reader, &error), std::vector<std::string>{"1234567"});
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->line, 2U);
    EXPECT_NE(error->message.find("line is 8 bytes"), std::string::npos) << error->message;
    EXPECT_NE(error->message.find("the largest record it takes is 7 bytes)"), std::string::npos) << error->message;
  }
}

TEST(RecordReader, EmptyInputHasNoRecords) {
  std::istringstream in("");
  RecordReader reader(in, RecordReader::Mode::bytes, 16);
  EXPECT_TRUE(read_all(reader).empty());
  EXPECT_EQ(reader.line(), 0U);
}

// A line exactly at the limit is accepted; one byte more is an error naming the line.
TEST(RecordReader, BytesModeLimitIsExact) {
  std::istringstream in("1234567\n12345678\n");
  RecordReader reader(in, RecordReader::Mode::bytes, 8);
  std::optional<LineError> error;
  EXPECT_EQ(read_all(reader, &error), std::vector<std::string>{"1234567\n"});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->line, 2U);
  EXPECT_NE(error->message.find("9 bytes"), std::string::npos) << error->message;
}

TEST(RecordReader, LinesLongerThanOneReadChunkAreReadWhole) {
  const std::string big(200'000, 'x');
  std::istringstream in(big + "\n" + big);
  RecordReader reader(in, RecordReader::Mode::bytes, 300'000);
  EXPECT_EQ(read_all(reader), (std::vector<std::string>{big + "\n", big}));
}

/// An endless line of 'x': only a reader that bounds what it buffers returns.
class EndlessLine : public std::streambuf {
 protected:
  int_type underflow() override {
    std::fill(std::begin(chunk_), std::end(chunk_), 'x');
    setg(chunk_, chunk_, chunk_ + sizeof chunk_);
    return traits_type::to_int_type('x');
  }

 private:
  char chunk_[4096];
};

TEST(RecordReader, AnEndlessLineFailsAfterTheLimitWithoutReadingItAll) {
  for (auto mode : {RecordReader::Mode::bytes, RecordReader::Mode::json}) {
    EndlessLine source;
    std::istream in(&source);
    RecordReader reader(in, mode, 1 << 20);
    std::optional<LineError> error;
    EXPECT_TRUE(read_all(reader, &error).empty());
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->line, 1U);
    EXPECT_NE(error->message.find("longer than max batch bytes"), std::string::npos) << error->message;
  }
}

TEST(RecordReader, JsonModeStripsLineEndingsSkipsBlankLinesAndNamesTheBadLine) {
  std::istringstream in("{\"a\":1}\r\n\n  \t\n[1,2]\n{bad\n3\n");
  RecordReader reader(in, RecordReader::Mode::json, 1024);
  std::optional<LineError> error;
  EXPECT_EQ(read_all(reader, &error), (std::vector<std::string>{"{\"a\":1}", "[1,2]"}));
  EXPECT_EQ(reader.skipped_blank_lines(), 2U);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->line, 5U);
  EXPECT_NE(error->message.find("invalid JSON"), std::string::npos) << error->message;
}

TEST(RecordReader, JsonModeRefusesTwoValuesOnOneLine) {
  std::istringstream in("1 2\n");
  RecordReader reader(in, RecordReader::Mode::json, 1024);
  std::optional<LineError> error;
  EXPECT_TRUE(read_all(reader, &error).empty());
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->line, 1U);
}

// Valid JSON that prodsm's check does not take (simdjson's limits) is refused with a
// message that says which limit, not a generic "invalid".
TEST(RecordReader, JsonBeyondTheCheckersLimitsIsRefusedNamingTheLimit) {
  std::istringstream in(std::string(1100, '[') + std::string(1100, ']') + "\n");  // deeper than 1024
  RecordReader reader(in, RecordReader::Mode::json, 4096);
  std::optional<LineError> error;
  EXPECT_TRUE(read_all(reader, &error).empty());
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->message.find("not accepted by prodsm's JSON check"), std::string::npos) << error->message;
}

}  // namespace
}  // namespace prodsm::tools
