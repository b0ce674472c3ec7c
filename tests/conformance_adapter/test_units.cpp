// SPDX-License-Identifier: Apache-2.0
// Unit tests of the adapter's own pieces: base64, the error-code mapping, result
// serialization, UTF-8 and content-type checks, command field access. No network.
#include <gtest/gtest.h>

#include "prodsm/base64.hpp"
#include "protocol.hpp"

namespace prodsm::tools::dsconf {
namespace {

TEST(DsConformanceBase64, EncodesTheRfc4648Vectors) {
  EXPECT_EQ(base64::encode(""), "");
  EXPECT_EQ(base64::encode("f"), "Zg==");
  EXPECT_EQ(base64::encode("fo"), "Zm8=");
  EXPECT_EQ(base64::encode("foo"), "Zm9v");
  EXPECT_EQ(base64::encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64::encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64::encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64::encode(std::string("\x9b", 1)), "mw==");  // binary-data-integrity's 0x9B
}

TEST(DsConformanceBase64, DecodesAndRoundTripsEveryByteValue) {
  EXPECT_EQ(base64::decode("Zm9vYmFy"), "foobar");
  EXPECT_EQ(base64::decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64::decode(""), "");
  EXPECT_EQ(base64::decode("AAABm/WLZTs="), std::string("\x00\x00\x01\x9b\xf5\x8b\x65\x3b", 8));
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += 37) {
    const std::string part = all.substr(0, n);
    EXPECT_EQ(base64::decode(base64::encode(part)), part) << n;
  }
  EXPECT_EQ(base64::encode(all).substr(0, 12), "AAECAwQFBgcI");
}

TEST(DsConformanceBase64, RefusesAnythingButCanonicalPaddedBase64) {
  for (const char* bad : {"Zg=", "Zg", "Zg=a", "Z===", "====", "Zh==", "Zm9=", "Zm9v\n", "Zm 9v",
                          "Zm9v====", "Zg==Zg==", "Zm9-", "Zm9_", "Zm9v\xff"}) {
    EXPECT_FALSE(base64::decode(bad).has_value()) << bad;
  }
}

TEST(DsConformanceProtocol, ErrorCodesFollowTheSuitesStandardSet) {
  auto code = [](Error e, Operation op = Operation::other) {
    return error_result("append", e, op)["errorCode"].get<std::string>();
  };
  Error closed = make_error(ErrorCode::stream_closed, Certainty::definite, false, "closed");
  closed.final_offset = "0_5";
  const Json closed_result = error_result("append", closed);
  EXPECT_EQ(closed_result["errorCode"], "STREAM_CLOSED");
  EXPECT_EQ(closed_result["status"], 409);
  EXPECT_EQ(closed_result["commandType"], "append");
  EXPECT_EQ(closed_result["details"]["finalOffset"], "0_5");

  Error conflict =
      make_error(ErrorCode::conflict, Certainty::definite, false, "HTTP 409; server said \"Sequence conflict\"");
  conflict.http_status = 409;
  EXPECT_EQ(code(conflict), "SEQUENCE_CONFLICT");
  conflict.message = "HTTP 409; server said \"Content-type mismatch\"";
  EXPECT_EQ(code(conflict), "CONFLICT");

  Error gap = make_error(ErrorCode::sequence_gap, Certainty::definite, false, "gap");
  gap.expected_seq = 1;
  gap.received_seq = 2;
  const Json gap_result = error_result("append", gap);
  EXPECT_EQ(gap_result["errorCode"], "SEQUENCE_CONFLICT");
  EXPECT_EQ(gap_result["details"]["producerExpectedSeq"], 1);
  EXPECT_EQ(gap_result["details"]["producerReceivedSeq"], 2);

  Error stale = make_error(ErrorCode::stale_epoch, Certainty::definite, false, "fenced");
  stale.http_status = 403;
  stale.server_epoch = 7;
  const Json stale_result = error_result("idempotent-append", stale);
  EXPECT_EQ(stale_result["errorCode"], "UNEXPECTED_STATUS");
  EXPECT_EQ(stale_result["status"], 403);
  EXPECT_EQ(stale_result["details"]["producerEpoch"], 7);

  Error bad_request = make_error(ErrorCode::rejected, Certainty::definite, false, "HTTP 400");
  bad_request.http_status = 400;
  EXPECT_EQ(code(bad_request, Operation::read), "INVALID_OFFSET");
  EXPECT_EQ(code(bad_request), "UNEXPECTED_STATUS");
  EXPECT_EQ(error_result("append", bad_request)["status"], 400);

  EXPECT_EQ(code(make_error(ErrorCode::not_found, Certainty::definite, false, "")), "NOT_FOUND");
  EXPECT_EQ(code(make_error(ErrorCode::unavailable, Certainty::definite, true, "refused")), "NETWORK_ERROR");
  Error busy = make_error(ErrorCode::unavailable, Certainty::definite, true, "503");
  busy.http_status = 503;
  EXPECT_EQ(code(busy), "UNEXPECTED_STATUS");
  EXPECT_EQ(code(make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "reset")), "NETWORK_ERROR");
  EXPECT_EQ(code(make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "request timeout")), "TIMEOUT");
  EXPECT_EQ(code(make_error(ErrorCode::protocol_error, Certainty::indefinite, false, "")), "PARSE_ERROR");
  EXPECT_EQ(code(make_error(ErrorCode::invalid_ack, Certainty::indefinite, false, "")), "PARSE_ERROR");
  EXPECT_EQ(code(make_error(ErrorCode::delivery_timeout, Certainty::definite, false, "")), "TIMEOUT");
  EXPECT_EQ(code(make_error(ErrorCode::would_block, Certainty::definite, false, "")), "TIMEOUT");
  EXPECT_EQ(code(make_error(ErrorCode::invalid_record, Certainty::definite, false, "")), "INVALID_ARGUMENT");
  EXPECT_EQ(code(make_error(ErrorCode::closed, Certainty::definite, false, "")), "INTERNAL_ERROR");
  EXPECT_EQ(code(make_error(ErrorCode::aborted, Certainty::definite, false, "")), "INTERNAL_ERROR");
  EXPECT_FALSE(error_result("x", make_error(ErrorCode::closed, Certainty::definite, false, "")).contains("status"));
}

TEST(DsConformanceProtocol, ResultsAreOneLineWithLineSeparatorsEscaped) {
  Json r{{"type", "read"}, {"data", "a\u2028b\u2029c\nd"}};
  const std::string line = serialize_line(r);
  EXPECT_EQ(line, R"({"type":"read","data":"a\u2028b\u2029c\nd"})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(Json::parse(line)["data"], "a\u2028b\u2029c\nd");
  // Invalid UTF-8 never makes the serializer throw.
  EXPECT_NO_THROW(serialize_line(Json{{"data", std::string("\xff\xfe", 2)}}));
}

TEST(DsConformanceProtocol, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("Hello 世界 🌍 Привет мир"));
  EXPECT_FALSE(is_valid_utf8("\x9b"));
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe4\xb8"));          // truncated
}

TEST(DsConformanceProtocol, JsonContentTypes) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("application/json; charset=utf-8"));
  EXPECT_TRUE(is_json_content_type("Application/VND.API+JSON"));
  EXPECT_TRUE(is_json_content_type("application/hal+json"));
  EXPECT_FALSE(is_json_content_type("text/json"));
  EXPECT_FALSE(is_json_content_type("application/atom+xml"));
  EXPECT_FALSE(is_json_content_type("text/plain"));
  // PROTOCOL.md section 9.1: the server keeps JSON messages for application/json only.
  EXPECT_TRUE(ds::stores_json_messages("Application/JSON; charset=utf-8"));
  EXPECT_FALSE(ds::stores_json_messages("application/hal+json"));
  EXPECT_FALSE(ds::stores_json_messages("application/json-patch+json"));
  EXPECT_FALSE(ds::stores_json_messages("text/plain"));
}

TEST(DsConformanceProtocol, CommandFieldsAreTypedAndNamedInErrors) {
  const Json c = Json::parse(R"({"a":2.0,"b":2.5,"c":"x","d":-1,"e":null,"h":{"X-A":"1"},"g":{"X":1}})");
  EXPECT_EQ(optional_integer(c, "a", 0, 10), 2);
  EXPECT_EQ(optional_integer(c, "e", 0, 10), std::nullopt);
  EXPECT_EQ(optional_integer(c, "missing", 0, 10), std::nullopt);
  EXPECT_THROW((void)optional_integer(c, "b", 0, 10), ArgumentError);
  EXPECT_THROW((void)optional_integer(c, "c", 0, 10), ArgumentError);
  try {
    (void)optional_integer(c, "d", 0, 10);
    FAIL() << "no error";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("d: "), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)required_string(c, "missing"), ArgumentError);
  EXPECT_THROW((void)optional_bool(c, "c"), ArgumentError);
  EXPECT_EQ(string_map(c, "h").size(), 1u);
  EXPECT_THROW((void)string_map(c, "g"), ArgumentError);
}

}  // namespace
}  // namespace prodsm::tools::dsconf
