// SPDX-License-Identifier: Apache-2.0
// JSON values as a JSON-mode Durable Streams server keeps them (tools/src/json_values.hpp):
// the reference server parses every message and writes the value back with
// JSON.stringify, so numbers are doubles in their shortest form and object members
// come back in the server's order. `produce --json` refuses a number the server would
// change (nothing accepted is silently altered); `--verify` and `--resume` compare the
// forms of one value as equal.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "json_values.hpp"
#include "record_reader.hpp"

namespace prodsm::tools {
namespace {

TEST(JsonValues, AnIntegerPastTwoToThe53IsALossNamingTheDoubleItWouldBecome) {
  const auto loss = double_loss(R"({"id": 9007199254740993})");
  ASSERT_TRUE(loss.has_value());
  EXPECT_NE(loss->find("9007199254740993"), std::string::npos) << *loss;
  EXPECT_NE(loss->find("9007199254740992"), std::string::npos) << *loss;
  EXPECT_NE(loss->find("quote it as a string"), std::string::npos) << *loss;
  // The double it would become is written as a JavaScript server writes it.
  for (const auto& [text, kept] :
       std::vector<std::pair<std::string, std::string>>{{"1.2345678901234567e18", "1234567890123456800"},
                                                        {"-12345678901234567890123", "-1.2345678901234568e+22"},
                                                        {"0.30000000000000001", "0.3"},
                                                        {"0.000000123456789012345678", "1.2345678901234568e-7"},
                                                        {"0.00000123456789012345678", "0.0000012345678901234567"},
                                                        {"123456789.12345678901", "123456789.12345679"}}) {
    const auto l = double_loss(text);
    ASSERT_TRUE(l.has_value()) << text;
    EXPECT_NE(l->find("keeps it as " + kept + " ("), std::string::npos) << *l;
  }
}

TEST(JsonValues, NumbersThatRoundTripThroughADoubleAreNoLoss) {
  for (const char* text : {"9007199254740992", "-9007199254740992", "1.0", "0.1", "1e20", "-0", "0.30000000000000004",
                           "1e-320", "[1.7976931348623157e308]", "18446744073709549568",
                           // the fewest digits of a double above 1e17, where fixed notation
                           // would write every digit of its integer
                           "9.223372036854776e18", "1.8446744073709552e19", "1.2345678901234568e18",
                           // an integer beyond 64 bits that is exactly a double
                           "100000000000000000000", "-9223372036854776000"}) {
    EXPECT_EQ(double_loss(text), std::nullopt) << text;
  }
}

TEST(JsonValues, MoreDigitsThanADoubleKeepsOrAnUnderflowAreALoss) {
  for (const char* text : {"0.30000000000000001", "[1, 2, 1e-400]", "123456789012345678", "-9007199254740993",
                           "18446744073709551615", "12345678901234567890123", "-9223372036854775809"}) {
    EXPECT_NE(double_loss(text), std::nullopt) << text;
  }
}

TEST(JsonValues, ALongDigitRunIsSixteenDigitsWithDotsBetween) {
  EXPECT_FALSE(has_long_digit_run("123456789012345"));   // 15: always exact as a double
  EXPECT_TRUE(has_long_digit_run("1234567890123456"));   // 16
  EXPECT_TRUE(has_long_digit_run("1.234567890123456"));  // the dot does not end the run
  EXPECT_FALSE(has_long_digit_run("12345678, 12345678"));
}

TEST(JsonValues, ALargeNegativeExponentHasThreeDigits) {
  EXPECT_FALSE(has_large_negative_exponent("1e-99"));
  EXPECT_TRUE(has_large_negative_exponent("1e-100"));
  EXPECT_TRUE(has_large_negative_exponent("[2.5E-320]"));
  EXPECT_FALSE(has_large_negative_exponent("1e+320"));
  EXPECT_FALSE(has_large_negative_exponent("e-"));
  EXPECT_TRUE(may_lose_precision("1e-400"));
  EXPECT_FALSE(may_lose_precision(R"({"a": 1.5, "b": [1e-5, 12345]})"));
}

TEST(JsonValues, TheFormsOfOneValueHaveOneCanonicalForm) {
  const auto a = canonical_json(R"({ "b" : 1.0, "a" : [1e2, -0, "x"] })");
  const auto b = canonical_json(R"({"a":[100,0,"x"],"b":1})");
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->find(' '), std::string::npos) << "minified: " << *a;
  EXPECT_NE(canonical_json(R"({"a":[100,0,"y"],"b":1})"), a) << "another string is another value";
  EXPECT_NE(canonical_json("[1,2]"), canonical_json("[2,1]")) << "array order is the value's";
  EXPECT_EQ(canonical_json(R"({"k":1,"k":2})"), canonical_json(R"({"k":2})")) << "a repeated name keeps its last value";
}

TEST(JsonValues, CanonicalFormRefusesWhatIsNotOneValueOrNestsTooDeep) {
  EXPECT_EQ(canonical_json("1 2"), std::nullopt);
  EXPECT_EQ(canonical_json("{"), std::nullopt);
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(canonical_json(at_limit).has_value());
  const std::string past = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(canonical_json(past), std::nullopt);
}

// produce --json: a line whose number the server would store as another number is
// refused with its line number and the number named; everything before it is read.
TEST(JsonValues, TheRecordReaderRefusesALineTheServerWouldChange) {
  std::istringstream in("{\"n\": 1}\n{\"n\": 12345678901234567890.5}\n{\"n\": 3}\n");
  RecordReader reader(in, RecordReader::Mode::json, 1024);
  auto first = reader.next();
  ASSERT_TRUE(first.has_value() && first->has_value());
  EXPECT_EQ(**first, "{\"n\": 1}");
  auto second = reader.next();
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().line, 2U);
  EXPECT_NE(second.error().message.find("12345678901234567890.5"), std::string::npos) << second.error().message;
}

// What `prodsm read --json` prints for a stream holding 1e20 can be produced again: the
// integer beyond 64 bits is taken when a double holds it exactly, and otherwise refused
// naming the number (not "Problem while parsing a number").
TEST(JsonValues, AnIntegerBeyond64BitsIsJudgedLikeAnyNumber) {
  JsonLineValidator validator;
  EXPECT_EQ(validator.check("[1,100000000000000000000,-9223372036854776000]"), std::nullopt);
  const auto refused = validator.check("12345678901234567890123");
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("the number 12345678901234567890123 is not exactly a double"), std::string::npos) << *refused;
  EXPECT_NE(validator.check("0100000000000000000000"), std::nullopt) << "still not JSON";
}

TEST(JsonValues, TheValidatorTakesTheCommonLineWithoutTheSlowCheck) {
  JsonLineValidator validator;
  EXPECT_EQ(validator.check(R"({"ts": 1733300000123, "v": 0.25, "s": "12345678901234567890"})"), std::nullopt)
      << "a long digit run inside a string triggers the exact check, which finds every number exact";
  EXPECT_NE(validator.check("[1e-400]"), std::nullopt) << "an underflow to zero is caught through the exponent";
  EXPECT_EQ(validator.check("[0.0, -0.0, 5e-324]"), std::nullopt) << "zero and the least subnormal are exact";
}

}  // namespace
}  // namespace prodsm::tools
