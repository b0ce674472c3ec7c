// SPDX-License-Identifier: Apache-2.0
// S4–S7, E3, E5: the classification rules on hand-built responses — header precedence,
// case-insensitive names, trimmed values, malformed and missing headers, Retry-After,
// every status class — and parse_protocol_number.
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

Error append_error(const Response& r, bool sequenced = true) {
  auto a = classify_append(r, sequenced);
  EXPECT_FALSE(a.has_value());
  return a ? Error{} : a.error();
}

// ---- media_type ------------------------------------------------------------------------------

// The media type is what precedes a parameter, trimmed, case kept (what the JSON checks compare).
TEST(MediaType, IsTheTextBeforeAParameterTrimmed) {
  EXPECT_EQ(media_type("application/json"), "application/json");
  EXPECT_EQ(media_type(" Application/JSON ; charset=utf-8"), "Application/JSON");
  EXPECT_EQ(media_type("text/plain;"), "text/plain");
  EXPECT_EQ(media_type("\tapplication/x+json\t"), "application/x+json");
  EXPECT_EQ(media_type(""), "");
  EXPECT_EQ(media_type(";q=1"), "");
}

// ---- parse_protocol_number -----------------------------------------------------------------

TEST(ParseProtocolNumber, AcceptsPlainDecimalUpTo2Pow53Minus1) {
  EXPECT_EQ(parse_protocol_number("0"), 0U);
  EXPECT_EQ(parse_protocol_number("7"), 7U);
  EXPECT_EQ(parse_protocol_number("007"), 7U) << "leading zeros are still decimal";
  EXPECT_EQ(parse_protocol_number("9007199254740991"), 9007199254740991U);
  EXPECT_EQ(parse_protocol_number("0000000000000001"), 1U);
}

TEST(ParseProtocolNumber, RejectsSignsSpacesOtherFormsAndValuesAbove2Pow53Minus1) {
  for (const char* text :
       {"", "9007199254740992", "9999999999999999", "18446744073709551616", "99999999999999999999", "00000000000000001",
        "+1", "-1", " 1", "1 ", "1e3", "0x1", "abc", "1.0", "1,0", "1_0", "\xd9\xa1"}) {
    EXPECT_FALSE(parse_protocol_number(text).has_value()) << "'" << text << "'";
  }
  EXPECT_FALSE(parse_protocol_number(std::string_view("1\0", 2)).has_value());
}

// ---- S6 before S4 before E3 on 409 -----------------------------------------------------------

TEST(ClassifyAppendRules, S6_StreamClosedIsCheckedBeforeExpectedSeq) {
  const Error e = append_error(resp(409, {{"Producer-Expected-Seq", "3"},
                                          {"Producer-Received-Seq", "5"},
                                          {"Stream-Closed", "true"},
                                          {"Stream-Next-Offset", "final"}}));
  EXPECT_EQ(e.code, ErrorCode::stream_closed);
  EXPECT_EQ(e.final_offset, "final");
  EXPECT_EQ(e.expected_seq, 0U);
}

TEST(ClassifyAppendRules, S6_StreamClosedValueIsCaseInsensitiveAndTrimmed) {
  for (const char* value : {"true", "TRUE", "True", " true ", "\ttrue"}) {
    EXPECT_EQ(append_error(resp(409, {{"stream-closed", value}})).code, ErrorCode::stream_closed)
        << "'" << value << "'";
  }
}

TEST(ClassifyAppendRules, S6_OtherStreamClosedValuesCountAsAbsent) {
  for (const char* value : {"false", "1", "yes", "", "truee", "tru"}) {
    EXPECT_EQ(append_error(resp(409, {{"Stream-Closed", value}})).code, ErrorCode::conflict) << "'" << value << "'";
    EXPECT_EQ(append_error(resp(409, {{"Stream-Closed", value}, {"Producer-Expected-Seq", "2"}})).code,
              ErrorCode::sequence_gap);
  }
}

TEST(ClassifyAppendRules, S6_StreamClosedWithoutOffsetHasUnknownFinalOffset) {
  const Error e = append_error(resp(409, {{"Stream-Closed", "true"}}));
  EXPECT_EQ(e.code, ErrorCode::stream_closed);
  EXPECT_TRUE(e.final_offset.empty());
  EXPECT_NE(e.message.find("final offset unknown"), std::string::npos) << e.message;
}

TEST(ClassifyAppendRules, S4_GapHeadersAreCaseInsensitive) {
  const Error e = append_error(resp(409, {{"PRODUCER-EXPECTED-SEQ", " 4 "}, {"producer-received-seq", "9"}}));
  EXPECT_EQ(e.code, ErrorCode::sequence_gap);
  EXPECT_EQ(e.expected_seq, 4U);
  EXPECT_EQ(e.received_seq, 9U);
}

TEST(ClassifyAppendRules, S4_GapWithoutReceivedSeqStillCarriesExpected) {
  const Error e = append_error(resp(409, {{"Producer-Expected-Seq", "4"}}));
  EXPECT_EQ(e.code, ErrorCode::sequence_gap);
  EXPECT_EQ(e.expected_seq, 4U);
  EXPECT_EQ(e.received_seq, 0U);
}

TEST(ClassifyAppendRules, E5_MalformedExpectedSeqIsProtocolErrorNamingTheValue) {
  const Error e = append_error(resp(409, {{"Producer-Expected-Seq", "abc"}}));
  EXPECT_EQ(e.code, ErrorCode::protocol_error);
  EXPECT_EQ(e.certainty, Certainty::indefinite);
  EXPECT_FALSE(e.retryable);
  EXPECT_EQ(e.http_status, 409);
  EXPECT_EQ(e.message,
            "append: HTTP 409 Conflict: Producer-Expected-Seq: not a decimal number in "
            "0..2^53-1: 'abc'");
}

TEST(ClassifyAppendRules, E5_NumbersAbove2Pow53Minus1InProducerHeadersAreProtocolErrors) {
  EXPECT_EQ(append_error(resp(409, {{"Producer-Expected-Seq", "9007199254740992"}})).code, ErrorCode::protocol_error);
  EXPECT_EQ(
      append_error(resp(409, {{"Producer-Expected-Seq", "1"}, {"Producer-Received-Seq", "18446744073709551616"}})).code,
      ErrorCode::protocol_error);
  EXPECT_EQ(append_error(resp(403, {{"Producer-Epoch", "9007199254740992"}})).code, ErrorCode::protocol_error);
  EXPECT_EQ(append_error(resp(403, {{"Producer-Epoch", "-1"}})).code, ErrorCode::protocol_error);
  EXPECT_EQ(append_error(resp(403, {{"Producer-Epoch", "9007199254740991"}})).server_epoch, 9007199254740991U);
}

TEST(ClassifyAppendRules, E3_Plain409IsConflictQuotingAtMost200BodyBytes) {
  const Error e = append_error(resp(409, {}, std::string(1000, 'x')));
  EXPECT_EQ(e.code, ErrorCode::conflict);
  EXPECT_NE(e.message.find(std::string(200, 'x') + "..."), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find(std::string(201, 'x')), std::string::npos);
}

TEST(ClassifyAppendRules, RejectedBodyTextIsEscapedNotCopiedRaw) {
  const Error e = append_error(resp(400, {}, std::string("bad\r\nX-Injected: 1\0\xff", 21)));
  EXPECT_EQ(e.code, ErrorCode::rejected);
  EXPECT_EQ(e.message.find('\r'), std::string::npos);
  EXPECT_EQ(e.message.find('\n'), std::string::npos);
  EXPECT_NE(e.message.find("\\x0D\\x0A"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\\xFF"), std::string::npos) << e.message;
}

// ---- S5 ------------------------------------------------------------------------------------

TEST(ClassifyAppendRules, S5_Forbidden403WithoutProducerEpochIsRejected) {
  const Error e = append_error(resp(403, {}, "Forbidden by policy"));
  EXPECT_EQ(e.code, ErrorCode::rejected);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_NE(e.message.find("Forbidden by policy"), std::string::npos);
}

TEST(ClassifyAppendRules, S5_StaleEpochMessageNamesServerEpoch) {
  const Error e = append_error(resp(403, {{"producer-epoch", "12"}}));
  EXPECT_EQ(e.code, ErrorCode::stale_epoch);
  EXPECT_EQ(e.server_epoch, 12U);
  EXPECT_NE(e.message.find("12"), std::string::npos);
}

// ---- success needs its offset (S3, S7) ------------------------------------------------------

TEST(ClassifyAppendRules, S7_SuccessWithoutNextOffsetIsProtocolError) {
  for (const auto& r :
       {resp(200), resp(200, {{"Stream-Next-Offset", ""}}), resp(200, {{"Stream-Next-Offset", "   "}})}) {
    const Error e = append_error(r);
    EXPECT_EQ(e.code, ErrorCode::protocol_error);
    EXPECT_EQ(e.certainty, Certainty::indefinite);
    EXPECT_EQ(e.message, "append: HTTP 200 OK: missing or empty Stream-Next-Offset header");
  }
  EXPECT_EQ(append_error(resp(204), false).code, ErrorCode::protocol_error);
}

TEST(ClassifyAppendRules, S3_SequencedNoContentIsDuplicateEvenWithoutHeaders) {
  auto ack = classify_append(resp(204), true);
  ASSERT_TRUE(ack.has_value());
  EXPECT_TRUE(ack->duplicate);
  EXPECT_TRUE(ack->next_offset.empty());
}

TEST(ClassifyAppendRules, S7_OffsetHeaderIsCaseInsensitiveAndTrimmed) {
  auto ack = classify_append(resp(204, {{"stream-next-offset", "  abc_1\t"}}), false);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->next_offset, "abc_1");
  auto ok200 = classify_append(resp(200, {{"STREAM-NEXT-OFFSET", "o"}}), false);
  ASSERT_TRUE(ok200.has_value()) << "200 also acknowledges a plain append (older servers)";
  EXPECT_FALSE(ok200->duplicate);
}

TEST(ClassifyAppendRules, FirstOfRepeatedHeadersWins) {
  auto ack = classify_append(resp(204, {{"Stream-Next-Offset", "first"}, {"Stream-Next-Offset", "second"}}), false);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->next_offset, "first");
}

// ---- Retry-After and status classes (S7) -----------------------------------------------------

// E4: a server asking for longer than a day is taken to ask for a day (http::retry_after),
// not ignored (which retried at once); an HTTP-date needs the response's Date to measure it.
TEST(ClassifyAppendRules, S7_RetryAfterDeltaSecondsCappedAtOneDay) {
  struct Case {
    const char* value;
    std::optional<std::chrono::seconds> expected;
  };
  for (const Case c :
       {Case{"0", std::chrono::seconds{0}}, Case{"2", std::chrono::seconds{2}}, Case{" 30 ", std::chrono::seconds{30}},
        Case{"86400", std::chrono::seconds{86400}}, Case{"86401", std::chrono::seconds{86400}},
        Case{"Wed, 21 Oct 2015 07:28:00 GMT", std::nullopt}, Case{"-1", std::nullopt}, Case{"1.5", std::nullopt},
        Case{"", std::nullopt}, Case{"99999999999999999999", std::chrono::seconds{86400}}}) {
    for (const int status : {503, 429}) {
      const Error e = append_error(resp(status, {{"Retry-After", c.value}}));
      EXPECT_EQ(e.code, ErrorCode::unavailable);
      EXPECT_EQ(e.certainty, Certainty::definite);
      EXPECT_TRUE(e.retryable);
      EXPECT_EQ(e.retry_after_ns, c.expected) << "'" << c.value << "' on " << status;
    }
  }
}

TEST(ClassifyAppendRules, S7_OtherServerErrorsAreIndefiniteAndIgnoreRetryAfter) {
  for (const int status : {500, 501, 502, 504, 507, 599}) {
    const Error e = append_error(resp(status, {{"Retry-After", "5"}}));
    EXPECT_EQ(e.code, ErrorCode::unavailable) << status;
    EXPECT_EQ(e.certainty, Certainty::indefinite) << status;
    EXPECT_TRUE(e.retryable);
    EXPECT_FALSE(e.retry_after_ns.has_value());
    EXPECT_EQ(e.http_status, status);
  }
}

TEST(ClassifyAppendRules, S7_ClientErrorsAreRejectedAndNotFoundIs404Or410) {
  for (const int status : {400, 401, 405, 411, 413, 414, 415, 422, 499}) {
    const Error e = append_error(resp(status));
    EXPECT_EQ(e.code, ErrorCode::rejected) << status;
    EXPECT_EQ(e.certainty, Certainty::definite);
    EXPECT_FALSE(e.retryable);
  }
  for (const int status : {404, 410}) {
    EXPECT_EQ(append_error(resp(status)).code, ErrorCode::not_found) << status;
  }
}

// E2: a 408 (a proxy's or the server's request timeout) may come after the body was
// applied: indefinite and retryable, resent only where a resend is safe (E4).
TEST(ClassifyAppendRules, E2_RequestTimeoutIsIndefiniteAndRetryable) {
  const Error e = append_error(resp(408));
  EXPECT_EQ(e.code, ErrorCode::request_timeout);
  EXPECT_EQ(e.certainty, Certainty::indefinite);
  EXPECT_TRUE(e.retryable);
  EXPECT_EQ(e.http_status, 408);
}

TEST(ClassifyAppendRules, S7_AnythingElseIsProtocolError) {
  for (const int status : {0, -1, 1, 99, 100, 101, 199, 201, 202, 206, 301, 304, 600, 999, 1000, 70000}) {
    const Error e = append_error(resp(status, {{"Stream-Next-Offset", "x"}}));
    EXPECT_EQ(e.code, ErrorCode::protocol_error) << status;
    EXPECT_EQ(e.certainty, Certainty::indefinite);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.http_status, (status >= 0 && status <= 0xFFFF) ? status : 0) << status;
  }
}

TEST(ClassifyAppendRules, MessagesNameOperationAndStatus) {
  EXPECT_EQ(append_error(resp(404)).message, "append: HTTP 404 Not Found: the stream does not exist");
  EXPECT_EQ(append_error(resp(410)).message, "append: HTTP 410 Gone: the stream is gone");
  EXPECT_EQ(append_error(resp(503, {{"Retry-After", "2"}})).message,
            "append: HTTP 503 Service Unavailable: service unavailable; Retry-After 2 s");
  EXPECT_EQ(append_error(resp(409, {{"Producer-Expected-Seq", "1"}, {"Producer-Received-Seq", "5"}})).message,
            "append: HTTP 409 Conflict: producer sequence gap; the server expected seq 1, "
            "received 5");
  EXPECT_EQ(append_error(resp(722)).message, "append: HTTP 722: unexpected status for append");
}

// ---- the other operations ------------------------------------------------------------------

TEST(ClassifyCreateRules, StatusesOtherThan201And200AreErrors) {
  EXPECT_EQ(classify_create(resp(204)).error().code, ErrorCode::protocol_error);
  EXPECT_EQ(classify_create(resp(409, {{"Stream-Closed", "true"}})).error().code, ErrorCode::conflict)
      << "a create conflict is about configuration, not S6";
  EXPECT_EQ(classify_create(resp(403, {{"Producer-Epoch", "3"}})).error().code, ErrorCode::rejected);
  EXPECT_EQ(classify_create(resp(400, {}, "Invalid Stream-TTL")).error().code, ErrorCode::rejected);
  const Error busy = classify_create(resp(429, {{"Retry-After", "3"}})).error();
  EXPECT_EQ(busy.code, ErrorCode::unavailable);
  EXPECT_EQ(busy.retry_after_ns, std::chrono::seconds{3});
  EXPECT_EQ(classify_create(resp(502)).error().certainty, Certainty::indefinite);
  EXPECT_TRUE(classify_create(resp(201)).has_value()) << "Stream-Next-Offset is optional";
  EXPECT_TRUE(classify_create(resp(201))->next_offset.empty());
}

TEST(ClassifyCloseRules, SuccessAndProducerErrors) {
  auto ok = classify_close(resp(200, {{"Stream-Next-Offset", "f"}}), true);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->final_offset, "f");
  EXPECT_TRUE(classify_close(resp(204), false)->final_offset.empty());
  EXPECT_EQ(classify_close(resp(403, {{"Producer-Epoch", "2"}}), true).error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(classify_close(resp(409, {{"Stream-Closed", "true"}, {"Producer-Expected-Seq", "1"}}), true).error().code,
            ErrorCode::stream_closed);
  EXPECT_EQ(classify_close(resp(409), false).error().code, ErrorCode::conflict);
  EXPECT_EQ(classify_close(resp(201), false).error().code, ErrorCode::protocol_error);
  EXPECT_EQ(classify_close(resp(404), false).error().message, "close: HTTP 404 Not Found: the stream does not exist");
}

TEST(ClassifyHeadRules, NeedsNextOffsetAndToleratesMissingContentType) {
  EXPECT_EQ(classify_head(resp(200)).error().code, ErrorCode::protocol_error);
  auto r = classify_head(resp(200, {{"stream-next-offset", "o"}, {"stream-closed", "TRUE"}}));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->content_type.empty());
  EXPECT_TRUE(r->closed);
  EXPECT_EQ(classify_head(resp(204, {{"Stream-Next-Offset", "o"}})).error().code, ErrorCode::protocol_error);
  EXPECT_EQ(classify_head(resp(410)).error().code, ErrorCode::not_found);
  EXPECT_EQ(classify_head(resp(503)).error().code, ErrorCode::unavailable);
  // E2: a read or a HEAD changes nothing, so its 5xx or 408 is definite and never says
  // "may have been applied"; an append's is indefinite.
  for (const int status : {500, 502, 408}) {
    SCOPED_TRACE(status);
    const Error read = classify_read(resp(status)).error();
    EXPECT_EQ(read.certainty, Certainty::definite);
    EXPECT_TRUE(read.retryable);
    EXPECT_EQ(read.message.find("may have been applied"), std::string::npos) << read.message;
    EXPECT_EQ(classify_head(resp(status)).error().certainty, Certainty::definite);
    EXPECT_EQ(append_error(resp(status)).certainty, Certainty::indefinite);
  }
}

TEST(ClassifyReadRules, NeedsNextOffsetAndReadsFlags) {
  EXPECT_EQ(classify_read(resp(200, {}, "data")).error().code, ErrorCode::protocol_error);
  auto r = classify_read(resp(200, {{"Stream-Next-Offset", "o"}, {"Stream-Up-To-Date", "TRUE"}}, "data"));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->up_to_date);
  EXPECT_FALSE(r->closed);
  EXPECT_EQ(r->body, "data");
  auto partial = classify_read(resp(200, {{"Stream-Next-Offset", "o"}, {"Stream-Up-To-Date", "false"}}));
  ASSERT_TRUE(partial.has_value());
  EXPECT_FALSE(partial->up_to_date);
  EXPECT_EQ(classify_read(resp(410)).error().code, ErrorCode::not_found);
  EXPECT_EQ(classify_read(resp(304)).error().code, ErrorCode::protocol_error);
}

TEST(ClassifyReadRules, UnrequestedCompressionIsProtocolError) {
  const Error e = classify_read(resp(200, {{"Stream-Next-Offset", "o"}, {"Content-Encoding", "gzip"}}, "\x1f")).error();
  EXPECT_EQ(e.code, ErrorCode::protocol_error);
  EXPECT_NE(e.message.find("Content-Encoding 'gzip'"), std::string::npos) << e.message;
  EXPECT_TRUE(classify_read(resp(200, {{"Stream-Next-Offset", "o"}, {"content-encoding", "Identity"}})).has_value());
}

TEST(ClassifyDeleteRules, Success200Or204AndErrors) {
  EXPECT_TRUE(classify_delete(resp(200)).has_value());
  EXPECT_TRUE(classify_delete(resp(204)).has_value());
  EXPECT_EQ(classify_delete(resp(202)).error().code, ErrorCode::protocol_error);
  EXPECT_EQ(classify_delete(resp(410)).error().code, ErrorCode::not_found);
  EXPECT_EQ(classify_delete(resp(503)).error().code, ErrorCode::unavailable);
  EXPECT_EQ(classify_delete(resp(405)).error().message, "delete: HTTP 405 Method Not Allowed: rejected");
}

TEST(ResponseHeaderLookup, CaseInsensitiveFirstMatch) {
  const Response r = resp(200, {{"content-type", "a"}, {"Content-Type", "b"}});
  EXPECT_EQ(r.header("CONTENT-TYPE"), std::optional<std::string_view>{"a"});
  EXPECT_FALSE(r.header("Content-Typ").has_value());
  EXPECT_FALSE(r.header("").has_value());
}

}  // namespace
}  // namespace prodsm::ds::test
