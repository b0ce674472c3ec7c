// SPDX-License-Identifier: Apache-2.0
// Response classification by status *and* body and headers (S7): acks, condition
// failures (E3), S2's error table (E2, E4), unknown codes, retry-after-ms, reads.
#include <gtest/gtest.h>

#include <chrono>

#include "helpers.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace {

namespace s2 = prodsm::s2;
using prodsm::Certainty;
using prodsm::ErrorCode;
using s2test::parse;
using s2test::response;
using s2test::unhex;

prodsm::http::Headers json_type() {
  return {{"content-type", "application/json"}};
}

std::string std_body(std::string_view code, std::string_view message = "m") {
  return R"({"code":")" + std::string{code} + R"(","message":")" + std::string{message} + R"("})";
}

TEST(S2CodecClassify, TwoHundredWithAnAppendAckIsTheAck) {
  // As s2-lite answers it (Proto: content-type application/protobuf).
  std::string ack;
  s2::encode(s2::AppendAck{{10, 1}, {13, 2}, {13, 2}}, ack);
  const auto raw =
      "HTTP/1.1 200 OK\r\ncontent-type: application/protobuf\r\ncontent-length: " + std::to_string(ack.size()) +
      "\r\n\r\n" + ack;
  const auto result = s2::classify_append(parse(raw));
  ASSERT_TRUE(result) << result.error().describe();
  EXPECT_EQ(result->start.seq_num, 10U);
  EXPECT_EQ(result->end.seq_num, 13U);
  EXPECT_EQ(s2::to_policy_ack(*result), (prodsm::S2Policy::Ack{10, 13}));
  // A JSON ack (when a server ignores Accept) is read too.
  const auto json = s2::classify_append(response(
      200,
      R"({"start":{"seq_num":1,"timestamp":5},"end":{"seq_num":4,"timestamp":6},"tail":{"seq_num":9,"timestamp":7}})",
      json_type()));
  ASSERT_TRUE(json) << json.error().describe();
  EXPECT_EQ(json->tail, (s2::StreamPosition{9, 7}));
}

TEST(E5, UndecodableTwoHundredIsAnIndefiniteProtocolError) {
  const auto garbage = s2::classify_append(response(200, unhex("0a05")));
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(garbage.error().certainty, Certainty::indefinite);  // a 200: it may have been appended
  EXPECT_EQ(garbage.error().http_status, 200);
  EXPECT_EQ(garbage.error().message,
            "append: HTTP 200 OK: AppendAck: length-delimited field longer than the bytes left at offset 1");
  EXPECT_EQ(s2::classify_append(response(200, "")).error().message,
            "append: HTTP 200 OK: AppendAck.start: missing (required) at offset 0");
  EXPECT_EQ(s2::classify_append(response(200, "{}", json_type())).error().message,
            "append: HTTP 200 OK: AppendAck: start or end missing");
  EXPECT_EQ(s2::classify_append(response(200, "x", {{"Content-Encoding", "gzip"}})).error().message,
            "append: HTTP 200 OK: unrequested Content-Encoding");
  const auto no_content = s2::classify_append(response(204));
  EXPECT_EQ(no_content.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(no_content.error().certainty, Certainty::indefinite);
}

TEST(E3, SeqNumMismatchIsConditionFailedDefiniteWithTheServersSeqNum) {
  const auto e = s2::classify_append(
      parse("HTTP/1.1 412 Precondition Failed\r\ncontent-type: application/json\r\ncontent-length: 24\r\n\r\n"
            R"({"seq_num_mismatch":17})"
            " "));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(e.error().certainty, Certainty::definite);
  EXPECT_FALSE(e.error().retryable);
  EXPECT_EQ(e.error().expected_seq, 17U);
  EXPECT_EQ(e.error().http_status, 412);
  EXPECT_EQ(e.error().message,
            "append: HTTP 412 Precondition Failed: seq_num_mismatch: match_seq_num did not match; the stream's next "
            "seq_num is 17");
  // Beyond 2^53: the full u64 is kept.
  EXPECT_EQ(s2::classify_append(response(412, R"({"seq_num_mismatch":18446744073709551615})")).error().expected_seq,
            18446744073709551615ULL);
}

// S4 on S2: told the append's match_seq_num, a seq_num_mismatch whose tail is below it
// (an append sent before this one did not land) is a gap, with both positions; a tail at
// or above it, a fencing mismatch, or no match_seq_num stay condition_failed (E3).
TEST(S4, ASeqNumMismatchBelowTheAppendsMatchSeqNumIsASequenceGap) {
  const auto gap = s2::classify_append(response(412, R"({"seq_num_mismatch":17})", json_type()), 20);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, ErrorCode::sequence_gap);
  EXPECT_EQ(gap.error().certainty, Certainty::definite);
  EXPECT_FALSE(gap.error().retryable);
  EXPECT_EQ(gap.error().expected_seq, 17U);
  EXPECT_EQ(gap.error().received_seq, 20U);
  EXPECT_EQ(gap.error().message,
            "append: HTTP 412 Precondition Failed: seq_num_mismatch: match_seq_num did not match; the stream's next "
            "seq_num is 17, below this append's match_seq_num 20: an append sent before it did not land");
  for (const std::uint64_t match : {17U, 16U, 0U}) {  // the tail at or above the append's start
    EXPECT_EQ(s2::classify_append(response(412, R"({"seq_num_mismatch":17})"), match).error().code,
              ErrorCode::condition_failed)
        << match;
  }
  EXPECT_EQ(s2::classify_append(response(412, R"({"seq_num_mismatch":17})")).error().code, ErrorCode::condition_failed);
  EXPECT_EQ(s2::classify_append(response(412, R"({"fencing_token_mismatch":"t"})"), 20).error().code,
            ErrorCode::condition_failed);
  EXPECT_EQ(s2::classify_append(response(412, R"({"seq_num_mismatch":"x"})"), 20).error().code,
            ErrorCode::condition_failed)
      << "a tail that is no number proves nothing";
}

TEST(E3, FencingTokenMismatchIsConditionFailedDefiniteNamingTheToken) {
  const auto e = s2::classify_append(response(412, R"({"fencing_token_mismatch":"writer-2"})", json_type()));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(e.error().certainty, Certainty::definite);
  EXPECT_FALSE(e.error().retryable);
  EXPECT_EQ(e.error().message,
            "append: HTTP 412 Precondition Failed: fencing_token_mismatch: the stream's fencing token is 'writer-2'");
  const auto other = s2::classify_append(response(412, "<html>nope</html>"));
  EXPECT_EQ(other.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(other.error().certainty, Certainty::definite);
  EXPECT_EQ(other.error().message,
            "append: HTTP 412 Precondition Failed: append condition failed (unrecognised body); server said "
            "\"<html>nope</html>\"");
}

struct Row {
  std::string_view code;
  int status;
  ErrorCode expected;
  Certainty certainty;
  bool retryable;
};

TEST(E2, EveryS2ErrorCodeAtItsStatusIsClassifiedAsS2Declares) {
  // s2 api/src/v1/error.rs: ErrorCode::status, is_retryable, has_no_side_effects.
  const Row rows[] = {
      {"access_token_not_found", 404, ErrorCode::not_found, Certainty::definite, false},
      {"authn", 401, ErrorCode::rejected, Certainty::definite, false},
      {"bad_frame", 400, ErrorCode::rejected, Certainty::definite, false},
      {"bad_header", 400, ErrorCode::rejected, Certainty::definite, false},
      {"bad_json", 400, ErrorCode::rejected, Certainty::definite, false},
      {"bad_path", 400, ErrorCode::rejected, Certainty::definite, false},
      {"bad_proto", 400, ErrorCode::rejected, Certainty::definite, false},
      {"bad_query", 400, ErrorCode::rejected, Certainty::definite, false},
      {"basin_deletion_pending", 409, ErrorCode::not_found, Certainty::definite, false},
      {"basin_not_found", 404, ErrorCode::not_found, Certainty::definite, false},
      {"client_hangup", 499, ErrorCode::connection_lost, Certainty::indefinite, false},
      {"decryption_failed", 400, ErrorCode::rejected, Certainty::definite, false},
      {"hot_server", 502, ErrorCode::unavailable, Certainty::definite, true},
      {"invalid", 422, ErrorCode::rejected, Certainty::definite, false},
      {"not_implemented", 501, ErrorCode::rejected, Certainty::definite, false},
      {"other", 500, ErrorCode::unavailable, Certainty::indefinite, true},
      {"permission_denied", 403, ErrorCode::rejected, Certainty::definite, false},
      {"quota_exhausted", 403, ErrorCode::rejected, Certainty::definite, false},
      {"rate_limited", 429, ErrorCode::unavailable, Certainty::definite, true},
      {"request_timeout", 408, ErrorCode::request_timeout, Certainty::indefinite, true},
      {"resource_already_exists", 409, ErrorCode::conflict, Certainty::definite, false},
      {"server_draining", 503, ErrorCode::unavailable, Certainty::definite, true},
      {"storage", 500, ErrorCode::unavailable, Certainty::indefinite, true},
      {"stream_deletion_pending", 409, ErrorCode::not_found, Certainty::definite, false},
      {"stream_not_found", 404, ErrorCode::not_found, Certainty::definite, false},
      {"transaction_conflict", 409, ErrorCode::unavailable, Certainty::definite, true},
      {"unavailable", 503, ErrorCode::unavailable, Certainty::indefinite, true},
      {"upstream_timeout", 504, ErrorCode::unavailable, Certainty::indefinite, true},
  };
  for (const Row& row : rows) {
    const auto e = s2::classify_append(response(row.status, std_body(row.code, "why"), json_type()));
    ASSERT_FALSE(e) << row.code;
    EXPECT_EQ(e.error().code, row.expected) << row.code;
    EXPECT_EQ(e.error().certainty, row.certainty) << row.code;
    EXPECT_EQ(e.error().retryable, row.retryable) << row.code;
    EXPECT_EQ(e.error().http_status, row.status) << row.code;
    EXPECT_NE(e.error().message.find(std::string{row.code} + ": why"), std::string::npos) << e.error().message;
  }
}

TEST(S7, TheSameStatusIsClassifiedByItsBody) {
  const auto draining = s2::classify_append(response(503, std_body("server_draining")));
  const auto unavailable = s2::classify_append(response(503, std_body("unavailable")));
  EXPECT_EQ(draining.error().certainty, Certainty::definite);
  EXPECT_EQ(unavailable.error().certainty, Certainty::indefinite);
  const auto conflict = s2::classify_append(response(409, std_body("transaction_conflict")));
  const auto exists = s2::classify_append(response(409, std_body("resource_already_exists")));
  EXPECT_TRUE(conflict.error().retryable);
  EXPECT_EQ(exists.error().code, ErrorCode::conflict);
  EXPECT_FALSE(exists.error().retryable);
  const auto deleting = s2::classify_append(response(409, std_body("stream_deletion_pending")));
  EXPECT_EQ(deleting.error().code, ErrorCode::not_found);
}

TEST(S7, AKnownCodeAtAnotherStatusFailsClosed) {
  // s2 sdk/src/error.rs server_classification_fails_closed_on_status_mismatch.
  const auto e = s2::classify_append(response(500, std_body("rate_limited")));
  EXPECT_EQ(e.error().code, ErrorCode::unavailable);
  EXPECT_FALSE(e.error().retryable);
  EXPECT_EQ(e.error().certainty, Certainty::indefinite);
  EXPECT_NE(e.error().message.find("rate_limited: m (a code of status 429); not retried"), std::string::npos)
      << e.error().message;
}

TEST(E4, UnknownCodesAndNonJsonBodiesAtRetryableStatusesAreRetryableAndIndefinite) {
  for (const int status : {408, 429, 500, 502, 503, 504}) {
    // 408 is a request timeout (E2: the request may have been applied); the rest unavailable.
    const ErrorCode code = status == 408 ? ErrorCode::request_timeout : ErrorCode::unavailable;
    const auto unknown = s2::classify_append(response(status, std_body("future_server_error")));
    EXPECT_EQ(unknown.error().code, code) << status;
    EXPECT_TRUE(unknown.error().retryable) << status;
    EXPECT_EQ(unknown.error().certainty, Certainty::indefinite) << status;
    const auto html = s2::classify_append(response(status, "<html>Bad Gateway</html>"));
    EXPECT_EQ(html.error().code, code) << status;
    EXPECT_TRUE(html.error().retryable) << status;
    EXPECT_EQ(html.error().certainty, Certainty::indefinite) << status;
  }
  const auto bad_request = s2::classify_append(response(400, "plain text"));
  EXPECT_EQ(bad_request.error().code, ErrorCode::rejected);
  EXPECT_FALSE(bad_request.error().retryable);
  EXPECT_EQ(bad_request.error().certainty, Certainty::indefinite);
  EXPECT_EQ(bad_request.error().message,
            "append: HTTP 400 Bad Request: error body is not S2's JSON; server said \"plain text\"");
  EXPECT_EQ(s2::classify_append(response(404, "{}")).error().code, ErrorCode::not_found);
  EXPECT_EQ(s2::classify_append(response(409, "")).error().code, ErrorCode::conflict);
  EXPECT_FALSE(s2::classify_append(response(507, "")).error().retryable);
  EXPECT_EQ(s2::classify_append(response(302, "")).error().code, ErrorCode::protocol_error);
}

TEST(E4, RetryAfterMsIsHonouredOnRetryableErrors) {
  const std::string body = std_body("rate_limited", "slow");
  const auto e = s2::classify_append(
      parse("HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after-ms: 250\r\n"
            "content-length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ErrorCode::unavailable);
  EXPECT_EQ(e.error().certainty, Certainty::definite);
  ASSERT_TRUE(e.error().retry_after_ns);
  EXPECT_EQ(*e.error().retry_after_ns, std::chrono::milliseconds{250});
  EXPECT_EQ(
      e.error().message,
      "append: HTTP 429 Too Many Requests: rate_limited: slow; retryable, nothing was applied; retry-after-ms 250");
  // Retry-After (seconds) when there is no retry-after-ms.
  const auto seconds = s2::classify_append(response(503, std_body("unavailable"), {{"Retry-After", "2"}}));
  EXPECT_EQ(*seconds.error().retry_after_ns, std::chrono::seconds{2});
  // Malformed, or on a terminal error: ignored. Over a day: a day (E4), said in the message.
  EXPECT_FALSE(
      s2::classify_append(response(503, std_body("unavailable"), {{"retry-after-ms", "-5"}})).error().retry_after_ns);
  const auto long_wait =
      s2::classify_append(response(503, std_body("unavailable"), {{"retry-after-ms", "86400001"}})).error();
  EXPECT_EQ(long_wait.retry_after_ns, std::chrono::hours{24});
  EXPECT_NE(long_wait.message.find("retry-after-ms 86400000 (capped: the server asked for longer)"), std::string::npos)
      << long_wait.message;
  EXPECT_FALSE(
      s2::classify_append(response(400, std_body("bad_proto"), {{"retry-after-ms", "5"}})).error().retry_after_ns);
}

TEST(S2CodecClassify, ReadsTailsAndCreates) {
  std::string batch;
  batch += unhex("0a 05 0803 2201 78");  // record {seq 3, body "x"}
  const auto read = s2::classify_read(response(200, batch));
  ASSERT_TRUE(read) << read.error().describe();
  ASSERT_EQ(read->batch.records.size(), 1U);
  EXPECT_EQ(read->batch.records[0].body, "x");
  EXPECT_FALSE(read->unwritten_tail);
  const auto beyond = s2::classify_read(response(416, R"({"tail":{"seq_num":4,"timestamp":9}})", json_type()));
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->unwritten_tail, (s2::StreamPosition{4, 9}));
  EXPECT_EQ(s2::classify_read(response(404, std_body("stream_not_found"))).error().code, ErrorCode::not_found);

  const auto tail = s2::classify_check_tail(response(200, R"({"tail":{"seq_num":12,"timestamp":3}})", json_type()));
  ASSERT_TRUE(tail);
  EXPECT_EQ(*tail, (s2::StreamPosition{12, 3}));
  EXPECT_EQ(s2::classify_check_tail(response(200, R"({"tail":5})")).error().code, ErrorCode::protocol_error);

  EXPECT_EQ(s2::classify_create_stream(response(201, R"({"name":"s"})")), true);
  EXPECT_EQ(s2::classify_create_stream(response(409, std_body("resource_already_exists"))), false);
  EXPECT_EQ(s2::classify_create_stream(response(404, std_body("basin_not_found"))).error().code, ErrorCode::not_found);
}

}  // namespace
