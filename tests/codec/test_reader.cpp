// SPDX-License-Identifier: Apache-2.0
// ds::StreamReader on hand-built responses and virtual time (no network, D1-style):
// streamed data handed on as it arrives (issue 22), a re-read after a
// broken response that skips what was handed on and refuses changed data, and every
// bound (R3): bytes, empty responses, requests, the whole read's timeout.
#include <limits>

#include "prodsm/http/request_fields.hpp"
#include "reader_drive.hpp"

namespace prodsm::ds::test {
namespace {

TEST(StreamReader, BytesAreHandedOnAsTheyArriveAcrossResponses) {
  Drive d;
  EXPECT_EQ(d.request(), "-1");
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"ab", "c"});
  EXPECT_EQ(d.out, "abc");
  EXPECT_FALSE(d.reader.finished());
  EXPECT_EQ(d.request(), "o1");
  d.ok("o2", "de");
  ASSERT_TRUE(d.reader.finished());
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "abcde");
  const ReadSummary& s = **d.reader.result();
  EXPECT_EQ(s.next_offset, "o2");
  EXPECT_TRUE(s.up_to_date);
  EXPECT_EQ(s.bytes, 5u);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.retries, 0u);
}

// Issue 22: a page followed by bytes beyond its framing (a Content-Length one byte short of
// the data, the hostile server's read-short-length) may have lost bytes no header shows:
// the read fails, protocol_error, not retried — it never ends as a success.
TEST(StreamReader, Issue22_APageWithBytesBeyondItsFramingFailsTheRead) {
  Drive d;
  d.request();
  Response r = Drive::head(200, {{"Stream-Next-Offset", "o1"}});
  ASSERT_TRUE(d.reader.on_head(r));
  r.body_streamed = true;
  (void)d.reader.on_body(std::span<const char>("ab", 2));
  d.take_output();
  r.unsolicited_bytes_after = 1;
  d.reader.on_outcome(d.now, std::move(r));
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_FALSE(d.error().retryable);
  EXPECT_NE(d.error().message.find("beyond its framing"), std::string::npos) << d.error().message;
  EXPECT_FALSE(d.reader.poll_request(d.now).has_value()) << "not retried";
  EXPECT_EQ(d.reader.summary().requests, 1u);
}

TEST(StreamReader, JsonStreamsAreHandedOnElementByElement) {
  ReadOptions o;
  o.json = true;
  Drive d(o);
  d.options_json = true;
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}, {"Stream-Closed", "true"}}, {"[{\"a\"", ":1}, 2", ", \"x\"]"});
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "{\"a\":1}|2|\"x\"");
  EXPECT_EQ((*d.reader.result())->elements, 3u);
  EXPECT_TRUE((*d.reader.result())->closed);
}

// PROTOCOL.md, JSON mode: each page of a JSON stream is a JSON array, so a bytes-mode read
// of two pages would hand on "[1,2][3]", which is not one JSON text. A read that was not
// asked for JSON mode takes it from the stream's Content-Type, before any data is handed on.
TEST(StreamReader, AJsonStreamsContentTypeTurnsJsonModeOnBeforeAnyData) {
  Drive d;  // ReadOptions::json false, json_from_content_type by default
  d.options_json = true;
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", "Application/JSON; charset=utf-8"}}, {"[1,", "2]"});
  EXPECT_TRUE(d.reader.json());
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o2"}, {"Content-Type", "application/json"}, {"Stream-Up-To-Date", "true"}},
            {"[3]"});
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "1|2|3");
  EXPECT_TRUE((*d.reader.result())->json);
  EXPECT_EQ((*d.reader.result())->elements, 3u);

  // The same stream collected (no body sink): the same mode, one array.
  Drive collected;
  collected.options_json = true;
  collected.request();
  Response r = Drive::head(
      200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", "application/json"}, {"Stream-Up-To-Date", "true"}});
  r.body = "[{\"a\":1}, 4]";
  collected.reader.on_outcome(collected.now, std::move(r));
  collected.take_output();
  EXPECT_EQ(collected.out, "{\"a\":1}|4");
  EXPECT_TRUE(collected.reader.json());
}

TEST(StreamReader, BytesStreamsAndAnOptOutKeepBytesMode) {
  for (const bool opt_out : {false, true}) {
    SCOPED_TRACE(opt_out);
    ReadOptions o;
    o.json_from_content_type = !opt_out;
    Drive d(o);
    d.request();
    // A +json type is a bytes stream (the reference server stores it as sent).
    const std::string type = opt_out ? "application/json" : "application/vnd.x+json";
    d.respond(200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", type}, {"Stream-Up-To-Date", "true"}}, {"[1]"});
    ASSERT_TRUE(d.ok()) << d.error().describe();
    EXPECT_EQ(d.out, "[1]");
    EXPECT_FALSE(d.reader.json());
    EXPECT_FALSE((*d.reader.result())->json);
  }
}

TEST(ReadCollector, JoinsTheElementsOfAReadThatTurnedJsonModeOn) {
  ReadCollector c(false);
  c.add(ReadChunk{"1", std::nullopt, true});
  c.add(ReadChunk{"2", std::nullopt, true});
  ReadSummary s;
  s.json = true;
  EXPECT_EQ(c.finish(s).body, "[1,2]");
  ReadCollector empty(false);
  EXPECT_EQ(empty.finish(s).body, "[]") << "a JSON stream with no values is an empty array";
  ReadCollector bytes(false);
  bytes.add(ReadChunk{"[1][2]", std::nullopt, false});
  EXPECT_EQ(bytes.finish(ReadSummary{}).body, "[1][2]");
}

TEST(StreamReader, Issue15_AJsonBodyThatDoesNotParseIsAProtocolErrorAndNotRetried) {
  ReadOptions o;
  o.json = true;
  Drive d(o, "/j");
  d.request();
  d.ok("o1", R"([{"data":"va)");  // truncated (truncateBodyBytes)
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_NE(d.error().message.find("read /j: "), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("truncated"), std::string::npos) << d.error().message;
  EXPECT_EQ(d.error().failure, ReadFailure::other) << "an array that breaks off is a bad response, not a bytes stream";
  EXPECT_EQ(d.reader.summary().requests, 1u);
}

// JSON mode asked of a stream whose pages are not arrays (a bytes stream read with --json)
// is the caller's mismatch, told apart from a malformed response by ReadFailure::not_json,
// so a caller need not read the message (the CLI's exit 2). Only the first page of a read
// asked for JSON can show it: once values were handed on, or under a JSON Content-Type,
// a page that is not an array is the server's fault.
TEST(StreamReader, JsonModeOnAStreamThatIsNotJsonIsToldApartFromABadResponse) {
  ReadOptions o;
  o.json = true;
  Drive first(o);
  first.request();
  first.ok("o1", "plain text\n");
  ASSERT_TRUE(first.reader.finished());
  EXPECT_EQ(first.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(first.error().failure, ReadFailure::not_json) << first.error().message;
  EXPECT_EQ(first.out, "");

  Drive later(o);
  later.options_json = true;
  later.request();
  later.ok("o1", "[1]", false);
  later.request();
  later.ok("o2", "2");
  ASSERT_TRUE(later.reader.finished());
  EXPECT_EQ(later.out, "1");
  EXPECT_EQ(later.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(later.error().failure, ReadFailure::other) << later.error().message;

  // A bytes stream's Content-Type tells it before the body: a body that looks like JSON
  // ("[1,2]\n[3]\n", two lines produced as bytes) is not cut into values until it breaks.
  Drive typed(o);
  typed.options_json = true;
  typed.request();
  typed.respond(200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", "application/octet-stream"}},
                {"[1,2]\n", "[3]\n"});
  ASSERT_TRUE(typed.reader.finished());
  EXPECT_EQ(typed.error().failure, ReadFailure::not_json) << typed.error().message;
  EXPECT_EQ(typed.out, "");
  // A +json type is stored as sent (PROTOCOL.md section 9.1): a record "[1,2]" would be
  // handed on as the values 1 and 2. Refused the same way.
  Drive plus_json(o);
  plus_json.options_json = true;
  plus_json.request();
  plus_json.respond(
      200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", "application/vnd.x+json"}, {"Stream-Up-To-Date", "true"}},
      {"[1,2]\n"});
  ASSERT_TRUE(plus_json.reader.finished());
  EXPECT_EQ(plus_json.error().failure, ReadFailure::not_json) << plus_json.error().message;
  EXPECT_EQ(plus_json.out, "");

  Drive by_type;  // JSON mode by the stream's Content-Type, over a body that is no array
  by_type.request();
  by_type.respond(200, {{"Stream-Next-Offset", "o1"}, {"Content-Type", "application/json"}}, {"plain"});
  ASSERT_TRUE(by_type.reader.finished());
  EXPECT_EQ(by_type.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(by_type.error().failure, ReadFailure::other) << "the server's fault, not the caller's mode";
}

TEST(StreamReader, ABrokenResponseIsReadAgainAndWhatWasHandedOnIsSkipped) {
  Drive d;
  d.request();
  d.broken("o1", {"hello ", "wor"}, lost());
  EXPECT_EQ(d.out, "hello wor");
  EXPECT_EQ(d.request(), "-1") << "read again from the same offset";
  d.respond(200, {{"Stream-Next-Offset", "o1"}, {"Stream-Up-To-Date", "true"}}, {"hel", "lo world"});
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "hello world") << "nothing twice, nothing lost";
  EXPECT_EQ((*d.reader.result())->bytes, 11u);
}

TEST(StreamReader, AReReadShorterThanWhatWasHandedOnContinuesIntoTheNextResponse) {
  Drive d;
  d.request();
  d.broken("o2", {"abcdef"}, lost());
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"abc"});  // the server now answers in smaller chunks
  // "abcdef" was handed on, o1 is after "abc" only: not yet an offset to hand on.
  EXPECT_TRUE(d.reader.catching_up()) << "o1 is behind what was handed on";
  EXPECT_EQ(d.request(), "o1");
  d.ok("o2", "defgh");
  EXPECT_FALSE(d.reader.catching_up());
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "abcdefgh");
}

TEST(StreamReader, JsonElementsHandedOnBeforeABreakAreSkippedOnTheReRead) {
  ReadOptions o;
  o.json = true;
  Drive d(o);
  d.options_json = true;
  d.request();
  d.broken("o1", {"[1,2,", "3"}, lost());  // "3" is not complete yet: not handed on
  EXPECT_EQ(d.out, "1|2");
  d.request();
  d.ok("o1", "[1,2,3,4]");
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "1|2|3|4");
}

TEST(StreamReader, Issue22_DataThatChangesOnAReReadIsRefused) {
  Drive d;
  d.request();
  d.broken("o1", {"hello"}, lost());
  d.request();
  d.ok("o1", "HELLO world");
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_NE(d.error().message.find("different data"), std::string::npos) << d.error().message;
  EXPECT_EQ(d.out, "hello") << "nothing of the changed data is handed on";
}

TEST(StreamReader, DataWithoutAdvancingTheOffsetIsRefusedBeforeItIsHandedOn) {
  Drive d;
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"a"});
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"again"});
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_NE(d.error().message.find("without advancing Stream-Next-Offset"), std::string::npos);
  EXPECT_EQ(d.out, "a");
}

TEST(StreamReader, Issue22_AnEmptyResponseThatDoesNotAdvanceEndsTheRead) {
  Drive d;
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"a"});
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {});
  ASSERT_TRUE(d.reader.finished());
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.out, "a");
}

TEST(StreamReader, Issue22_R3_EmptyResponsesThatKeepAdvancingEndTheRead) {
  ReadOptions o;
  o.max_empty_responses = 4;
  Drive d(o);
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(d.reader.finished());
    d.request();
    d.respond(200, {{"Stream-Next-Offset", "o" + std::to_string(i)}}, {});
  }
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_NE(d.error().message.find("5 responses in a row carried no data"), std::string::npos) << d.error().message;
  EXPECT_EQ(d.reader.summary().requests, 5u);
}

TEST(StreamReader, R3_MoreThanMaxBytesIsAnError) {
  ReadOptions o;
  o.max_bytes = 4;
  Drive d(o);
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"abc", "de"});
  ASSERT_TRUE(d.reader.finished());
  EXPECT_NE(d.error().message.find("read limit of 4 bytes (max_bytes)"), std::string::npos) << d.error().message;
  EXPECT_EQ(d.error().failure, ReadFailure::max_bytes);
  EXPECT_EQ(d.out, "abcd") << "a bytes stream hands on exactly max_bytes, as head -c would";

  // A JSON element is whole or not at all: the one that would pass the limit is not handed on.
  o.json = true;
  Drive json(o);
  json.options_json = true;
  json.request();
  json.respond(200, {{"Stream-Next-Offset", "o1"}}, {"[12,", "345]"});
  ASSERT_TRUE(json.reader.finished());
  EXPECT_EQ(json.error().failure, ReadFailure::max_bytes);
  EXPECT_EQ(json.out, "12");

  // Exactly max_bytes in the stream is no failure.
  o.json = false;
  Drive exact(o);
  exact.request();
  exact.ok("o1", "abcd");
  ASSERT_TRUE(exact.ok()) << exact.error().describe();
  EXPECT_EQ(exact.out, "abcd");
}

// PROTOCOL.md, Offsets: offsets are lexicographically sortable and strictly increasing. A
// page whose Stream-Next-Offset is before the offset it was read from would hand on again
// what came before it (a server cycling between two offsets repeated its data until a
// bound ended the read, exit 0): refused before any of its data is handed on.
TEST(StreamReader, E5_ANextOffsetBeforeTheOffsetReadFromIsRefusedBeforeItsData) {
  Drive d;
  d.request();
  d.ok("o6", "rec-A", false);
  EXPECT_EQ(d.request(), "o6");
  d.ok("o3", "rec-B");
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::protocol_error);
  EXPECT_NE(d.error().message.find("Stream-Next-Offset (o3) is before the offset read from (o6)"), std::string::npos)
      << d.error().message;
  EXPECT_EQ(d.out, "rec-A");

  Drive empty;  // an empty page going backwards is refused too: the read would go back
  empty.request();
  empty.ok("o6", "a", false);
  empty.request();
  empty.ok("o3", "", false);
  ASSERT_TRUE(empty.reader.finished());
  EXPECT_EQ(empty.error().code, ErrorCode::protocol_error);

  // An offset past the tail (the caller's), clamped by the server: an empty page that ends
  // at the tail, before anything was handed on, is taken, and the read goes on from there.
  ReadOptions past;
  past.offset = "o9";
  Drive clamped(past);
  EXPECT_EQ(clamped.request(), "o9");
  clamped.ok("o5", "", false);
  ASSERT_FALSE(clamped.reader.finished()) << clamped.error().describe();
  EXPECT_EQ(clamped.request(), "o5");
  clamped.ok("o7", "new");
  ASSERT_TRUE(clamped.ok()) << clamped.error().describe();
  EXPECT_EQ(clamped.out, "new");
  Drive clamped_data(past);  // ... but a page of data before the offset asked is refused
  clamped_data.request();
  clamped_data.ok("o5", "old");
  ASSERT_TRUE(clamped_data.reader.finished());
  EXPECT_EQ(clamped_data.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(clamped_data.out, "");

  Drive collected;  // a collected body (no sink) takes the same check
  collected.request();
  collected.ok("o6", "a", false);
  collected.request();
  Response r = Drive::head(200, {{"Stream-Next-Offset", "o3"}});
  r.body = "b";
  collected.reader.on_outcome(collected.now, std::move(r));
  collected.take_output();
  ASSERT_TRUE(collected.reader.finished());
  EXPECT_EQ(collected.out, "a");
}

TEST(StreamReader, R3_D3_TheWholeReadHasATimeout) {
  ReadOptions o;
  o.timeout_ns = 10s;
  Drive d(o);
  d.request();
  ASSERT_TRUE(d.reader.next_deadline());
  EXPECT_EQ(*d.reader.next_deadline(), kT0 + 10s);
  d.reader.handle_timeout(kT0 + 9s);
  EXPECT_FALSE(d.reader.finished()) << "never early (D3)";
  d.reader.handle_timeout(kT0 + 10s);
  ASSERT_TRUE(d.reader.finished());
  EXPECT_TRUE(d.reader.timed_out());
  EXPECT_EQ(d.error().code, ErrorCode::cancelled);
  EXPECT_EQ(d.error().failure, ReadFailure::timeout);
  // The late outcome and body of the request in flight change nothing; the body is abandoned.
  Response late = Drive::head(200, {{"Stream-Next-Offset", "o1"}});
  EXPECT_TRUE(d.reader.on_head(late));
  EXPECT_FALSE(d.reader.on_body(std::span<const char>("x", 1)));
  d.ok("o1", "x");
  EXPECT_EQ(d.out, "");
}

// The drive rule hands on output() after every input. A timeout in the middle of a body
// is an input that adds nothing: output() must not still hold the last piece, which the
// driver handed on already (`prodsm read --timeout-ms` wrote it twice) and whose bytes
// the transport has reused since.
TEST(StreamReader, R3_ATimeoutMidBodyHandsOnNothingTwice) {
  for (const bool json : {false, true}) {
    SCOPED_TRACE(json);
    ReadOptions o;
    o.timeout_ns = 10s;
    o.json = json;
    Drive d(o);
    d.options_json = json;
    d.request();
    ASSERT_TRUE(d.reader.on_head(Drive::head(200, {{"Stream-Next-Offset", "o1"}})));
    const std::string piece = json ? "[1,2," : "abc";
    EXPECT_TRUE(d.reader.on_body(std::span<const char>(piece.data(), piece.size())));
    d.take_output();
    EXPECT_EQ(d.out, json ? "1|2" : "abc");
    d.reader.handle_timeout(kT0 + 10s);
    ASSERT_TRUE(d.reader.finished());
    EXPECT_TRUE(d.reader.output().empty()) << "the piece before the timeout was handed on already";
    d.take_output();
    EXPECT_EQ(d.out, json ? "1|2" : "abc");
  }
}

TEST(StreamReader, R3_MaxRequestsBoundsTheRead) {
  ReadOptions o;
  o.max_requests = 2;
  Drive d(o);
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"a"});
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o2"}}, {"b"});
  EXPECT_FALSE(d.reader.poll_request(d.now).has_value());
  ASSERT_TRUE(d.reader.finished());
  EXPECT_NE(d.error().message.find("max_requests (2)"), std::string::npos) << d.error().message;
}

TEST(StreamReader, ACollectedBodyTakesTheSamePath) {
  Drive d;
  d.request();
  Response r = Drive::head(200, {{"Stream-Next-Offset", "o1"}, {"Stream-Up-To-Date", "true"}});
  r.body = "whole";
  d.reader.on_outcome(d.now, std::move(r));
  d.take_output();
  EXPECT_EQ(d.out, "whole");
  EXPECT_TRUE(d.ok());
}

TEST(StreamReader, AStopByTheConsumerEndsTheRead) {
  Drive d;
  d.request();
  d.reader.stop(make_error(ErrorCode::cancelled, Certainty::definite, false, "output failed"));
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().message, "output failed");
  EXPECT_EQ(d.error().failure, ReadFailure::other);
  EXPECT_FALSE(d.reader.poll_request(d.now).has_value());
}

TEST(StreamReader, B3_InvalidOptionsAreRefusedNamingTheField) {
  const StreamUrl url{"h", 80, "/s", false};
  ReadOptions o;
  o.max_requests = 0;
  EXPECT_EQ(StreamReader::create(url, o, kT0).error(), "max_requests: must be in 1..4294967296 (got 0)");
  o = {};
  o.timeout_ns = 0ns;
  EXPECT_NE(StreamReader::create(url, o, kT0).error().find("timeout_ns"), std::string::npos);
  o = {};
  o.offset = "";
  EXPECT_NE(StreamReader::create(url, o, kT0).error().find("offset"), std::string::npos);
  o = {};
  o.retry.max_attempts = 0;
  EXPECT_NE(StreamReader::create(url, o, kT0).error().find("retry.max_attempts"), std::string::npos);
  // E4: held to a producer's RetryPolicy bounds: a pause between retries, a sane multiplier.
  o = ReadOptions{};
  o.retry.backoff_initial_ns = Duration{0};
  o.retry.backoff_max_ns = Duration{0};
  EXPECT_EQ(StreamReader::create(url, o, kT0).error().rfind("retry.backoff_max_ns: must be in 1000..", 0), 0U);
  o = ReadOptions{};
  o.retry.backoff_multiplier = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(StreamReader::create(url, o, kT0).error().rfind("retry.backoff_multiplier: must be in 1.0..16.0", 0), 0U);
  o.retry.backoff_multiplier = 100.0;
  EXPECT_EQ(StreamReader::create(url, o, kT0).error().rfind("retry.backoff_multiplier: must be in 1.0..16.0", 0), 0U);
  // R3: extra headers are bounded as a header provider's are (http::check_extra_header_bounds).
  o = {};
  o.retry_timeout_ns = -1ns;
  EXPECT_EQ(StreamReader::create(url, o, kT0).error(), "retry_timeout_ns: must be in 0..24 h (got -1 ns)");
  o = {};
  o.request.extra_headers.assign(http::kMaxProvidedFields, {"X-A", "1"});
  EXPECT_TRUE(StreamReader::create(url, o, kT0).has_value()) << "at the limit";
  o.request.extra_headers.push_back({"X-A", "1"});
  EXPECT_EQ(StreamReader::create(url, o, kT0).error(), "request.extra_headers: more than 64 headers (got 65)");
}

}  // namespace
}  // namespace prodsm::ds::test
