// SPDX-License-Identifier: Apache-2.0
// Issue 22 (streaming reads), issue 15 (a JSON body that does not parse is a parse
// error): the elements of a streamed JSON array, whatever the piece boundaries, each
// validated before it is handed on; framing, truncation, corruption, depth and size limits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "prodsm/ds/detail/json_elements.hpp"
#include "prodsm/ds/detail/json_validity.hpp"

namespace prodsm::ds::test {
namespace {

using detail::JsonArraySplitter;
using detail::JsonValidity;

struct Split {
  std::vector<std::string> elements;
  std::optional<std::string> error;
};

/// Feeds `body` in pieces of `piece` bytes (0: whole), then finishes.
Split split(std::string_view body, std::size_t piece = 0, std::size_t max_element = 1 << 20) {
  JsonArraySplitter s(max_element);
  Split out;
  const std::size_t step = piece == 0 ? std::max<std::size_t>(body.size(), 1) : piece;
  for (std::size_t at = 0; at < body.size() && !out.error; at += step) {
    out.error = s.feed(std::span<const char>(body.data() + at, std::min(step, body.size() - at)));
    for (auto e : s.elements()) out.elements.emplace_back(e);
    s.clear_elements();
  }
  if (!out.error) out.error = s.finish();
  return out;
}

TEST(JsonArraySplitter, ElementsComeOutVerbatimWhateverThePieces) {
  const std::string body = R"( [ 1 , "a,]\"[" , {"k":[1,{"x":"}"}]} ,null, [ ] ,-2.5e3] )";
  const std::vector<std::string> want{"1", R"("a,]\"[")", R"({"k":[1,{"x":"}"}]})", "null", "[ ]", "-2.5e3"};
  for (const std::size_t piece : {0, 1, 2, 3, 7, 64}) {
    SCOPED_TRACE(piece);
    const Split s = split(body, piece);
    EXPECT_FALSE(s.error) << *s.error;
    EXPECT_EQ(s.elements, want);
  }
}

TEST(JsonArraySplitter, EmptyArrayAndEmptyBodyHoldNoElements) {
  for (const char* body : {"[]", " [ ] \n", "", "  \r\n"}) {
    const Split s = split(body, 1);
    EXPECT_FALSE(s.error) << body << ": " << *s.error;
    EXPECT_TRUE(s.elements.empty()) << body;
  }
}

TEST(JsonArraySplitter, TruncatedBodiesAreErrors) {
  // The conformance suite's truncateBodyBytes cases: the body ends inside the array.
  for (const char* body : {"[", R"([{"key":"some)", R"([{"item":1},{"it)", "[1,", "[1"}) {
    const Split s = split(body, 3);
    ASSERT_TRUE(s.error) << body;
    EXPECT_NE(s.error->find("truncated"), std::string::npos) << *s.error;
  }
}

TEST(JsonArraySplitter, CorruptedAndMisframedBodiesAreErrors) {
  struct Case {
    const char* body;
    const char* gist;
  };
  for (const Case& c :
       {Case{"XY\"valid\": \"json\"}]", "does not start with '['"}, Case{"[1,,2]", "element 1: missing"},
        Case{"[1,]", "missing before the closing ']'"}, Case{"[1] x", "after the JSON array"},
        Case{"[1][2]", "after the JSON array"}, Case{R"([{"a":ZZ}])", "element 0"}, Case{"[1 2]", "element 0"},
        Case{"[tru]", "element 0"}, Case{"[\"\xff\"]", "element 0"}, Case{"{\"a\":1}", "does not start with '['"}}) {
    SCOPED_TRACE(c.body);
    const Split s = split(c.body);
    ASSERT_TRUE(s.error);
    EXPECT_NE(s.error->find(c.gist), std::string::npos) << *s.error;
  }
}

TEST(JsonArraySplitter, ElementsBeforeABadOneAreKeptAndTheBadOneIsNot) {
  const Split s = split(R"([1,"two",{bad}])");
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.elements, (std::vector<std::string>{"1", R"("two")"}));
}

// A JSON-mode server stores numbers as doubles and writes 1e20 back as
// 100000000000000000000 (and -9223372036854775808 as -9223372036854776000): valid JSON
// (RFC 8259 sets no range) that simdjson's DOM refuses as an integer beyond 64 bits. A
// read must take them — `prodsm read`, --verify and --resume of a stream prodsm itself
// produced failed on them — while a number that is not JSON stays an error.
TEST(JsonArraySplitter, IntegersBeyond64BitsAreValidElements) {
  const std::string body =
      R"([1,100000000000000000000,-9223372036854776000,{"n":[123456789012345678901234567890]},"1e400 in a string"])";
  const std::vector<std::string> want{"1", "100000000000000000000", "-9223372036854776000",
                                      R"({"n":[123456789012345678901234567890]})", R"("1e400 in a string")"};
  for (const std::size_t piece : {0, 1, 5}) {
    SCOPED_TRACE(piece);
    const Split s = split(body, piece);
    EXPECT_FALSE(s.error) << *s.error;
    EXPECT_EQ(s.elements, want);
  }
  for (const char* bad : {"[01]", "[1.]", "[-]", "[100000000000000000000x]", "[0100000000000000000000]",
                          "[100000000000000000000.]", "[--100000000000000000000]"}) {
    SCOPED_TRACE(bad);
    const Split s = split(bad);
    ASSERT_TRUE(s.error);
    EXPECT_NE(s.error->find("element 0"), std::string::npos) << *s.error;
  }
}

// A JSON-mode server written in JavaScript stores a string with a lone surrogate (a
// producer that cut an emoji in half) and writes it back escaped: "\ud800". That is JSON
// by RFC 8259's grammar; a read stopped at it ("Problem while parsing a string") could not
// get past that value. The read passes it on as the server sent it; anything else that is
// not JSON stays an error, and a text with nothing to replace is left to simdjson alone.
TEST(JsonArraySplitter, ALoneSurrogatesEscapeIsAValidElement) {
  const std::string body = R"(["\ud800x","\uDC00",{"k":"a\udbff"},"\ud83d\ude00","\\ud800","\ud800\ud800"])";
  const std::vector<std::string> want{R"("\ud800x")",      R"("\uDC00")",  R"({"k":"a\udbff"})",
                                      R"("\ud83d\ude00")", R"("\\ud800")", R"("\ud800\ud800")"};
  for (const std::size_t piece : {0, 1, 7}) {
    SCOPED_TRACE(piece);
    const Split s = split(body, piece);
    EXPECT_FALSE(s.error) << *s.error;
    EXPECT_EQ(s.elements, want);
  }
  for (const char* bad : {R"(["\ud800)", R"(["\ud800" x])", R"(["\ud80"])", R"(["\uZZZZ"])", "[\"\\ud800\xff\"]"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(split(bad).error);
  }
  EXPECT_EQ(detail::lone_surrogates_replaced(R"("\ud800")"), std::optional<std::string>(R"("\ufffd")"));
  EXPECT_EQ(detail::lone_surrogates_replaced(R"("\ud83d\ude00")"), std::nullopt) << "a pair is one code point";
  EXPECT_EQ(detail::lone_surrogates_replaced(R"("\\ud800")"), std::nullopt) << "an escaped backslash, then text";
  // Records are prodsm's own: the submit rule (JsonValidity) still refuses them (B5).
  JsonValidity v;
  EXPECT_TRUE(v.check(R"("\ud800")").has_value());
}

// B5: the one JSON rule (JsonValidity) that the submit check, the read splitter and
// produce's line check share. One validity judges texts of every size in turn: its
// reused buffers must not let one text's bytes stand in for another's.
TEST(JsonValidity, B5_JudgesEachTextOnItsOwnWhateverCameBefore) {
  JsonValidity v;
  const std::string big = "[" + std::string(10'000, '1') + "]";  // an integer of 10,000 digits: JSON
  EXPECT_FALSE(v.check(big));
  for (const char* good : {"1", " {\"a\":[true,null]} ", "\"\"", "100000000000000000000", "-9223372036854776000",
                           "[1e308]", "\"\\u00e9\""}) {
    SCOPED_TRACE(good);
    EXPECT_FALSE(v.check(good));
  }
  for (const char* bad : {"", " ", "1 2", "[1", "{\"a\"}", "01", "100000000000000000000x", "\"\xff\"", "tru", "[1]]"}) {
    SCOPED_TRACE(bad);
    const auto refusal = v.check(bad);
    ASSERT_TRUE(refusal);
    EXPECT_FALSE(refusal->out_of_memory);
    EXPECT_FALSE(refusal->reason.empty());
  }
  // A prefix of the big text, judged after it: the bytes past its end are not read.
  EXPECT_TRUE(v.check(std::string_view(big).substr(0, 5000)));
  const std::string deep = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_TRUE(v.check(deep));  // deeper than 1024 levels
}

TEST(JsonArraySplitter, R3_DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "[" + std::string(100'000, '[') + std::string(100'000, ']') + "]";
  const Split s = split(deep, 4096, 1 << 20);
  ASSERT_TRUE(s.error);
  EXPECT_NE(s.error->find("element 0"), std::string::npos) << *s.error;
}

TEST(JsonArraySplitter, R3_AnElementLargerThanTheLimitIsAnError) {
  const std::string body = "[\"" + std::string(1000, 'x') + "\"]";
  const Split s = split(body, 100, 500);
  ASSERT_TRUE(s.error);
  EXPECT_NE(s.error->find("larger than the limit of 500 bytes"), std::string::npos) << *s.error;
  EXPECT_FALSE(split(body, 100, 1002).error);
}

}  // namespace
}  // namespace prodsm::ds::test
