// SPDX-License-Identifier: Apache-2.0
// ResponseParser framing (Content-Length, chunked, EOF-delimited, HEAD, interim 1xx,
// pipelining) and R3/E5: malformed, truncated and oversized responses fail with a
// protocol_error value instead of crashing or growing without bound.
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

using State = ResponseParser::State;

void expect_protocol_failure(const ResponseParser& p, std::string_view text_part) {
  ASSERT_EQ(p.state(), State::failed);
  EXPECT_EQ(p.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(p.error().certainty, Certainty::indefinite);
  EXPECT_FALSE(p.error().retryable);
  EXPECT_NE(p.error().message.find(text_part), std::string::npos) << p.error().message;
}

// ---- bodies --------------------------------------------------------------------------------

TEST(ParserFraming, ContentLengthBody) {
  const std::string bytes = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nStream-Next-Offset: x\r\n\r\nhello";
  ResponseParser p;
  EXPECT_EQ(p.feed(span_of(bytes)), bytes.size());
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_EQ(p.response().status, 200);
  EXPECT_EQ(p.response().body, "hello");
  EXPECT_TRUE(p.response().keep_alive);
  EXPECT_EQ(p.response().header("stream-next-offset"), std::optional<std::string_view>{"x"});
  ASSERT_EQ(p.response().headers.size(), 2U);
  EXPECT_EQ(p.response().headers[0], (Header{"Content-Length", "5"}));
}

TEST(ParserFraming, ContentLengthZeroCompletesAtTheBlankLine) {
  const std::string bytes = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  auto p = parse_text(bytes);
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_TRUE(p.response().body.empty());
}

TEST(ParserFraming, ChunkedBodyWithExtensionsAndTrailersIsDecoded) {
  const std::string bytes =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
  ResponseParser p;
  EXPECT_EQ(p.feed(span_of(bytes)), bytes.size());
  ASSERT_EQ(p.state(), State::complete) << p.error().describe();
  EXPECT_EQ(p.response().body, "hello world");
  EXPECT_FALSE(p.response().header("X-Trailer").has_value()) << "trailers are not merged";
}

TEST(ParserFraming, EofDelimitedBodyCompletesOnFinishEof) {
  const std::string bytes = "HTTP/1.1 200 OK\r\nStream-Next-Offset: o\r\n\r\nsome bytes";
  ResponseParser p;
  EXPECT_EQ(p.feed(span_of(bytes)), bytes.size());
  EXPECT_EQ(p.state(), State::incomplete);
  EXPECT_EQ(p.feed(span_of(" and more")), 9U);
  p.finish_eof();
  ASSERT_EQ(p.state(), State::complete) << p.error().describe();
  EXPECT_EQ(p.response().body, "some bytes and more");
  EXPECT_FALSE(p.response().keep_alive) << "the connection ended the body";
}

TEST(ParserFraming, HeadResponseSkipsTheAnnouncedBody) {
  for (const char* framing : {"Content-Length: 10\r\n", "Transfer-Encoding: chunked\r\n", ""}) {
    const std::string first = std::string("HTTP/1.1 200 OK\r\n") + framing + "\r\n";
    const std::string bytes = first + "HTTP/1.1 204 No Content\r\n\r\n";
    ResponseParser p;
    p.reset(/*head_request=*/true);
    EXPECT_EQ(p.feed(span_of(bytes)), first.size()) << framing;
    ASSERT_EQ(p.state(), State::complete);
    EXPECT_TRUE(p.response().body.empty());
    EXPECT_TRUE(p.response().keep_alive);
  }
}

TEST(ParserFraming, HeadCaptureWithoutHeadFlagIsEofDelimited) {
  // The same bytes read as a GET answer: the body runs to the end of the connection.
  const std::string bytes = load_capture("head_200");
  ResponseParser p;
  EXPECT_EQ(p.feed(span_of(bytes)), bytes.size());
  EXPECT_EQ(p.state(), State::incomplete);
  p.finish_eof();
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_FALSE(p.response().keep_alive);
}

TEST(ParserFraming, NoContentAndNotModifiedHaveNoBodyWhateverTheHeaders) {
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    const std::string first = std::string("HTTP/1.1 ") + status + "\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string bytes = first + "5\r\nhello\r\n0\r\n\r\n";
    ResponseParser p;
    EXPECT_EQ(p.feed(span_of(bytes)), first.size()) << status;
    EXPECT_EQ(p.state(), State::complete);
    EXPECT_TRUE(p.response().body.empty());
  }
}

TEST(ParserFraming, ConnectionCloseAndHttp10AreNotKeepAlive) {
  auto close = parse_text(load_capture("connection_close_request_204"));
  ASSERT_EQ(close.state(), State::complete);
  EXPECT_FALSE(close.response().keep_alive);
  auto old = parse_text("HTTP/1.0 204 No Content\r\n\r\n");
  ASSERT_EQ(old.state(), State::complete);
  EXPECT_FALSE(old.response().keep_alive);
  auto old_keep = parse_text("HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_TRUE(old_keep.response().keep_alive);
  EXPECT_TRUE(parse_text(load_capture("append_plain_204")).response().keep_alive);
}

// ---- headers -------------------------------------------------------------------------------

TEST(ParserHeaders, NamesAndValuesSplitAcrossFeedsAreJoined) {
  const std::string bytes = "HTTP/1.1 204 No Content\r\nStream-Next-Offset: 0001_0002\r\nX-B: v\r\n\r\n";
  for (std::size_t cut1 = 1; cut1 < bytes.size(); ++cut1) {
    for (const std::size_t cut2 : {cut1 + 1, cut1 + 3, bytes.size()}) {
      if (cut2 > bytes.size()) continue;
      ResponseParser p;
      std::size_t used = p.feed(span_of(std::string_view(bytes).substr(0, cut1)));
      used += p.feed(span_of(std::string_view(bytes).substr(cut1, cut2 - cut1)));
      used += p.feed(span_of(std::string_view(bytes).substr(cut2)));
      ASSERT_EQ(p.state(), State::complete) << cut1 << "," << cut2;
      EXPECT_EQ(used, bytes.size());
      ASSERT_EQ(p.response().headers.size(), 2U) << cut1 << "," << cut2;
      EXPECT_EQ(p.response().headers[0], (Header{"Stream-Next-Offset", "0001_0002"}));
      EXPECT_EQ(p.response().headers[1], (Header{"X-B", "v"}));
    }
  }
}

TEST(ParserHeaders, EmptyValuesAndSurroundingWhitespace) {
  auto p = parse_text(
      "HTTP/1.1 204 No Content\r\nX-Empty:\r\nX-Spaces:    \r\nStream-Next-Offset: \t o p \t\r\n"
      "X-Last: z\r\n\r\n");
  ASSERT_EQ(p.state(), State::complete) << p.error().describe();
  const Headers expected = {{"X-Empty", ""}, {"X-Spaces", ""}, {"Stream-Next-Offset", "o p"}, {"X-Last", "z"}};
  EXPECT_EQ(p.response().headers, expected);
}

TEST(ParserHeaders, NamesKeepTheirCaseAndOrder) {
  const Response r = parse_capture("append_producer_200");
  ASSERT_GE(r.headers.size(), 3U);
  EXPECT_EQ(r.headers[0].name, "access-control-allow-origin");
  bool found = false;
  for (const Header& h : r.headers) found = found || h.name == "Stream-Next-Offset";
  EXPECT_TRUE(found);
}

// ---- interim responses ---------------------------------------------------------------------

TEST(ParserInterim, InterimResponsesBeforeTheFinalOneAreSkipped) {
  const std::string bytes =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX-A: 1\r\n\r\n"
      "HTTP/1.1 204 No Content\r\nStream-Next-Offset: o\r\n\r\n";
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{5}, bytes.size()}) {
    const auto outcomes = parse_all(bytes, false, chunk);
    ASSERT_EQ(outcomes.size(), 1U);
    ASSERT_EQ(outcomes[0].state, State::complete);
    EXPECT_EQ(outcomes[0].consumed, bytes.size());
    EXPECT_EQ(outcomes[0].response.status, 204);
    EXPECT_EQ(outcomes[0].response.headers, (Headers{{"Stream-Next-Offset", "o"}}));
  }
}

TEST(ParserInterim, TooManyInterimResponsesFail) {
  std::string bytes;
  for (int i = 0; i < 17; ++i) bytes += "HTTP/1.1 100 Continue\r\n\r\n";
  bytes += "HTTP/1.1 204 No Content\r\n\r\n";
  expect_protocol_failure(parse_text(bytes), "interim");
}

TEST(ParserInterim, SwitchingProtocolsFails) {
  expect_protocol_failure(parse_text("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"),
                          "101");
  expect_protocol_failure(parse_text("HTTP/1.1 101 Switching Protocols\r\n\r\n"), "101");
}

// ---- pipelining ------------------------------------------------------------------------------

TEST(ParserPipelining, TwoResponsesInOneBufferParseOneAfterTheOther) {
  const std::string first = load_capture("append_plain_204");
  const std::string second = load_capture("get_bytes_catchup_200");
  const std::string bytes = first + second;
  ResponseParser p;
  const std::size_t used = p.feed(span_of(bytes));
  EXPECT_EQ(used, first.size()) << "feed stops right after the first response";
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_EQ(p.response().status, 204);
  EXPECT_EQ(p.feed(span_of(std::string_view(bytes).substr(used))), 0U) << "nothing more is consumed until reset";
  p.reset();
  EXPECT_EQ(p.feed(span_of(std::string_view(bytes).substr(used))), second.size());
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_EQ(p.response().status, 200);
  EXPECT_EQ(p.response().body, "hello world!");
}

TEST(ParserPipelining, RecordedPipelinedResponsesSplitExactly) {
  struct Case {
    const char* capture;
    std::vector<int> statuses;
  };
  for (const Case& c : {Case{"pipelined_post_get", {204, 200}}, Case{"pipelined_producer_5", {200, 200, 200, 200, 200}},
                        Case{"pipelined_delayed_first", {200, 409}}, Case{"keepalive_sequential_3", {503, 204, 200}}}) {
    const std::string bytes = load_capture(c.capture);
    const auto outcomes = parse_all(bytes, false, bytes.size());
    ASSERT_EQ(outcomes.size(), c.statuses.size()) << c.capture;
    std::size_t total = 0;
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      ASSERT_EQ(outcomes[i].state, State::complete) << c.capture << " #" << i;
      EXPECT_EQ(outcomes[i].response.status, c.statuses[i]) << c.capture << " #" << i;
      total += outcomes[i].consumed;
    }
    EXPECT_EQ(total, bytes.size()) << c.capture;
  }
}

// ---- every capture: byte at a time == whole ---------------------------------------------------

TEST(ParserCaptures, EveryCaptureFedByteByByteOrInPiecesEqualsFedWhole) {
  const auto names = capture_names();
  ASSERT_GE(names.size(), 100U);
  for (const std::string& name : names) {
    const std::string bytes = load_capture(name);
    const bool head = is_head_capture(name);
    const auto whole = parse_all(bytes, head, bytes.size() + 1);
    ASSERT_FALSE(whole.empty());
    if (!bytes.empty()) {
      for (const Outcome& o : whole) {
        EXPECT_EQ(o.state, State::complete) << name << ": " << o.error;
      }
    }
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{64}}) {
      EXPECT_EQ(parse_all(bytes, head, chunk), whole) << name << " in pieces of " << chunk;
    }
  }
}

TEST(ParserCaptures, ParsedCaptureHasExpectedStatusHeadersAndBody) {
  const Response r = parse_capture("append_producer_gap_409");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body, "Producer sequence gap");
  EXPECT_EQ(r.header("Producer-Expected-Seq"), std::optional<std::string_view>{"1"});
  EXPECT_EQ(r.header("producer-received-seq"), std::optional<std::string_view>{"5"});
  EXPECT_EQ(r.header("Transfer-Encoding"), std::optional<std::string_view>{"chunked"});
  EXPECT_EQ(r.headers.size(), 13U);
}

// ---- truncation (E5) --------------------------------------------------------------------------

TEST(ParserTruncation, E5_EveryTruncatedCaptureFailsOnEof) {
  for (const char* name : {"append_plain_204", "append_producer_200", "append_producer_gap_409", "get_json_catchup_200",
                           "fault_503_retry_after", "put_create_201", "expect_100_continue", "head_200"}) {
    const std::string bytes = load_capture(name);
    for (std::size_t len = 0; len < bytes.size(); ++len) {
      ResponseParser p;
      p.reset(is_head_capture(name));
      EXPECT_EQ(p.feed(span_of(std::string_view(bytes).substr(0, len))), len);
      ASSERT_EQ(p.state(), State::incomplete) << name << " cut at " << len;
      p.finish_eof();
      ASSERT_EQ(p.state(), State::failed) << name << " cut at " << len;
      EXPECT_EQ(p.error().code, ErrorCode::protocol_error);
      EXPECT_EQ(p.error().certainty, Certainty::indefinite);
      EXPECT_NE(p.error().message.find("connection closed before the response completed"), std::string::npos)
          << p.error().message;
    }
  }
}

TEST(ParserTruncation, E5_ContentLengthBodyCutShortFails) {
  ResponseParser p;
  p.feed(span_of("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"));
  EXPECT_EQ(p.state(), State::incomplete);
  p.finish_eof();
  expect_protocol_failure(p, "in the body");
}

TEST(ParserTruncation, E5_EofBeforeAnyByteFails) {
  ResponseParser p;
  p.finish_eof();
  expect_protocol_failure(p, "no response bytes");
}

// ---- limits (R3) ------------------------------------------------------------------------------

TEST(ParserLimits, R3_TooManyHeadersFail) {
  ResponseLimits limits;
  limits.max_headers = 3;
  const std::string three = "HTTP/1.1 204 No Content\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
  EXPECT_EQ(parse_text(three, false, limits).state(), State::complete);
  const std::string four = "HTTP/1.1 204 No Content\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
  expect_protocol_failure(parse_text(four, false, limits), "more than 3 header fields");
  // The recorded responses carry 11-14 headers.
  limits.max_headers = 8;
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{4096}}) {
    const auto o = parse_all(load_capture("append_producer_200"), false, chunk, limits);
    EXPECT_EQ(o.back().state, State::failed);
  }
}

TEST(ParserLimits, R3_TooManyTrailerFieldsFail) {
  ResponseLimits limits;
  limits.max_headers = 2;
  const std::string bytes = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT1: a\r\nT2: b\r\n\r\n";
  expect_protocol_failure(parse_text(bytes, false, limits), "header fields");
}

TEST(ParserLimits, R3_OversizedHeaderBlockFails) {
  ResponseLimits limits;
  limits.max_header_bytes = 100;
  const std::string ok = "HTTP/1.1 204 No Content\r\nStream-Next-Offset: o\r\n\r\n";
  EXPECT_EQ(parse_text(ok, false, limits).state(), State::complete);
  const std::string big = "HTTP/1.1 204 No Content\r\nX-Big: " + std::string(200, 'v') + "\r\n\r\n";
  expect_protocol_failure(parse_text(big, false, limits), "header block exceeds 100 bytes");
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{13}}) {
    const auto o = parse_all(big, false, chunk, limits);
    EXPECT_EQ(o.back().state, State::failed);
    EXPECT_NE(o.back().error.find("header block exceeds 100 bytes"), std::string::npos);
  }
  // Many small headers add up too, and so does a long status line.
  std::string many = "HTTP/1.1 204 No Content\r\n";
  for (int i = 0; i < 20; ++i) many += "X: 1\r\n";
  expect_protocol_failure(parse_text(many + "\r\n", false, limits), "header block exceeds");
  expect_protocol_failure(parse_text("HTTP/1.1 204 " + std::string(150, 'R') + "\r\n\r\n", false, limits),
                          "header block exceeds");
}

TEST(ParserLimits, R3_DefaultHeaderLimitStopsAHugeHeaderEarly) {
  const std::string big = "HTTP/1.1 204 No Content\r\nX-Big: " + std::string(1 << 20, 'v');
  ResponseParser p;
  const std::size_t used = p.feed(span_of(big));
  expect_protocol_failure(p, "header block exceeds 16384 bytes");
  EXPECT_LE(used, std::size_t{17 * 1024});
}

TEST(ParserLimits, R3_OversizedContentLengthBodyFailsBeforeTheBodyArrives) {
  ResponseLimits limits;
  limits.max_body_bytes = 100;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n";
  ResponseParser p(limits);
  p.feed(span_of(head));
  expect_protocol_failure(p, "response body of 101 bytes exceeds the limit of 100 bytes");
  const std::string exact = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b');
  EXPECT_EQ(parse_text(exact, false, limits).state(), State::complete);
  // HEAD: the announced length is not a body.
  EXPECT_EQ(parse_text(head, true, limits).state(), State::complete);
}

TEST(ParserLimits, R3_OversizedChunkedBodyFails) {
  ResponseLimits limits;
  limits.max_body_bytes = 10;
  const std::string one_big = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n" + std::string(11, 'x');
  expect_protocol_failure(parse_text(one_big, false, limits), "exceeds the limit of 10 bytes");
  const std::string many_small =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n";
  expect_protocol_failure(parse_text(many_small, false, limits), "exceeds the limit of 10 bytes");
  const std::string fits = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n5\r\nabcde\r\n0\r\n\r\n";
  EXPECT_EQ(parse_text(fits, false, limits).state(), State::complete);
}

TEST(ParserLimits, R3_OversizedEofDelimitedBodyFails) {
  ResponseLimits limits;
  limits.max_body_bytes = 10;
  ResponseParser p(limits);
  p.feed(span_of("HTTP/1.1 200 OK\r\n\r\n0123456789"));
  EXPECT_EQ(p.state(), State::incomplete);
  p.feed(span_of("!"));
  expect_protocol_failure(p, "exceeds the limit of 10 bytes");
}

// ---- hostile input (E5) -----------------------------------------------------------------------

TEST(ParserHostile, E5_BadStatusLinesFail) {
  for (const char* bytes :
       {"HTTP/1.1 2000 OK\r\n\r\n", "HTTX/1.1 200 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1\r\n\r\n",
        "HTTP/x.1 200 OK\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", " HTTP/1.1 200 OK\r\n", "HTTP/1.1 20 OK\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"}) {
    SCOPED_TRACE(bytes);
    auto p = parse_text(bytes);
    if (p.state() == State::incomplete) p.finish_eof();
    expect_protocol_failure(p, "malformed HTTP response");
  }
}

TEST(ParserHostile, E5_BadHeaderSyntaxFails) {
  for (const char* bytes : {"HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
                            "HTTP/1.1 200 OK\r\n: novalue\r\n\r\n", "HTTP/1.1 200 OK\r\nX\x01Y: v\r\n\r\n"}) {
    SCOPED_TRACE(bytes);
    expect_protocol_failure(parse_text(bytes), "malformed HTTP response");
  }
  const std::string nul = std::string("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27);
  expect_protocol_failure(parse_text(nul), "malformed HTTP response");
}

TEST(ParserHostile, E5_OnlyHttp1ResponsesAreAccepted) {
  for (const char* bytes : {"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
                            "HTTP/0.9 200 OK\r\nContent-Length: 0\r\n\r\n", "HTTP/9.9 204 No Content\r\n\r\n"}) {
    SCOPED_TRACE(bytes);
    expect_protocol_failure(parse_text(bytes), "unsupported HTTP version");
  }
  EXPECT_EQ(parse_text("\r\nHTTP/1.1 204 No Content\r\n\r\n").state(), State::complete)
      << "a stray CRLF before a response is tolerated";
}

TEST(ParserHostile, E5_TransferCodingsOtherThanChunkedFail) {
  for (const char* coding : {"gzip", "gzip, chunked", "chunked, gzip", "identity", "chunked,"}) {
    SCOPED_TRACE(coding);
    const std::string bytes = std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + coding + "\r\n\r\n0\r\n\r\n";
    expect_protocol_failure(parse_text(bytes), "unsupported Transfer-Encoding");
  }
  EXPECT_EQ(parse_text("HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n").state(), State::complete);
  EXPECT_EQ(parse_text("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", true).state(), State::complete)
      << "HEAD: no body, so its coding does not matter";
}

TEST(ParserHostile, E5_ChunkSizeOverflowFails) {
  expect_protocol_failure(parse_text("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"),
                          "malformed HTTP response");
  expect_protocol_failure(parse_text("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                          "malformed HTTP response");
}

TEST(ParserHostile, E5_BadOrConflictingContentLengthFails) {
  for (const char* bytes :
       {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: "
        "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"}) {
    expect_protocol_failure(parse_text(bytes), "malformed HTTP response");
  }
}

TEST(ParserHostile, E5_HostileProtocolHeadersParseButClassifyAsProtocolErrors) {
  // Framing is fine; the numbers are not: the classifier refuses them (E5).
  struct Case {
    const char* bytes;
    bool sequenced;
    const char* text;
  };
  for (const Case& c : {
           Case{"HTTP/1.1 409 Conflict\r\nProducer-Expected-Seq: 9007199254740992\r\n"
                "Producer-Received-Seq: 1\r\nContent-Length: 0\r\n\r\n",
                true,
                "Producer-Expected-Seq: not a decimal number in 0..2^53-1: "
                "'9007199254740992'"},
           Case{"HTTP/1.1 409 Conflict\r\nProducer-Expected-Seq: 1\r\n"
                "Producer-Received-Seq: 123456789012345678901234567890\r\n\r\n",
                true, "Producer-Received-Seq: not a decimal number"},
           Case{"HTTP/1.1 403 Forbidden\r\nProducer-Epoch: 1e3\r\nContent-Length: 0\r\n\r\n", true,
                "Producer-Epoch: not a decimal number in 0..2^53-1: '1e3'"},
           Case{"HTTP/1.1 200 OK\r\nProducer-Epoch: 0\r\nProducer-Seq: 0\r\n"
                "Content-Length: 0\r\n\r\n",
                true, "missing or empty Stream-Next-Offset header"},
           Case{"HTTP/1.1 204 No Content\r\nStream-Next-Offset:\r\n\r\n", false,
                "missing or empty Stream-Next-Offset header"},
       }) {
    SCOPED_TRACE(c.bytes);
    auto p = parse_text(c.bytes);
    if (p.state() == State::incomplete) p.finish_eof();
    ASSERT_EQ(p.state(), State::complete) << p.error().describe();
    auto ack = classify_append(p.response(), c.sequenced);
    ASSERT_FALSE(ack.has_value());
    EXPECT_EQ(ack.error().code, ErrorCode::protocol_error);
    EXPECT_EQ(ack.error().certainty, Certainty::indefinite);
    EXPECT_NE(ack.error().message.find(c.text), std::string::npos) << ack.error().message;
  }
}

TEST(ParserHostile, E5_GarbageBytesFail) {
  std::string garbage;
  for (int i = 0; i < 512; ++i) garbage += static_cast<char>((i * 37 + 11) & 0xFF);
  auto p = parse_text(garbage);
  if (p.state() == State::incomplete) p.finish_eof();
  expect_protocol_failure(p, "malformed HTTP response");
}

// ---- API behaviour ---------------------------------------------------------------------------

TEST(ParserApi, FeedAfterCompleteOrFailedConsumesNothing) {
  auto done = parse_text("HTTP/1.1 204 No Content\r\n\r\n");
  ASSERT_EQ(done.state(), State::complete);
  EXPECT_EQ(done.feed(span_of("HTTP/1.1 204 No Content\r\n\r\n")), 0U);
  auto bad = parse_text("nope\r\n\r\n");
  ASSERT_EQ(bad.state(), State::failed);
  EXPECT_EQ(bad.feed(span_of("HTTP/1.1 204 No Content\r\n\r\n")), 0U);
  bad.finish_eof();
  EXPECT_EQ(bad.state(), State::failed);
  done.finish_eof();
  EXPECT_EQ(done.state(), State::complete) << "EOF after a complete response changes nothing";
}

TEST(ParserApi, EmptyFeedIsNotEof) {
  ResponseParser p;
  EXPECT_EQ(p.feed({}), 0U);
  EXPECT_EQ(p.state(), State::incomplete);
  p.feed(span_of("HTTP/1.1 200 OK\r\n\r\nab"));
  EXPECT_EQ(p.feed({}), 0U);
  EXPECT_EQ(p.state(), State::incomplete);
}

TEST(ParserApi, TakeResponseKeepsStateCompleteUntilReset) {
  auto p = parse_text(load_capture("get_bytes_catchup_200"));
  ASSERT_EQ(p.state(), State::complete);
  const Response taken = p.take_response();
  EXPECT_EQ(taken.body, "hello world!");
  EXPECT_EQ(p.state(), State::complete);
  p.reset();
  EXPECT_EQ(p.state(), State::incomplete);
  EXPECT_TRUE(p.response().headers.empty());
}

TEST(ParserApi, ResetAfterFailureParsesTheNextResponse) {
  auto p = parse_text("garbage\r\n\r\n");
  ASSERT_EQ(p.state(), State::failed);
  p.reset();
  EXPECT_EQ(p.state(), State::incomplete);
  EXPECT_EQ(p.error(), Error{});
  p.feed(span_of(load_capture("append_plain_204")));
  ASSERT_EQ(p.state(), State::complete);
  EXPECT_EQ(p.response().status, 204);
}

TEST(ParserApi, MovedParserContinuesAndMovedFromParserIsInert) {
  const std::string bytes = load_capture("get_json_catchup_200");
  ResponseParser a;
  a.feed(span_of(std::string_view(bytes).substr(0, 100)));
  ResponseParser b(std::move(a));
  b.feed(span_of(std::string_view(bytes).substr(100)));
  ASSERT_EQ(b.state(), State::complete);
  EXPECT_EQ(b.response().body, R"([1,2,{"a":1},[3,4]])");
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from object must stay safe to use.
  EXPECT_EQ(a.state(), State::failed);
  EXPECT_EQ(a.feed(span_of(bytes)), 0U);
  a.finish_eof();
  a.reset();
  EXPECT_TRUE(a.response().headers.empty());
  EXPECT_EQ(a.take_response().status, 0);
  EXPECT_EQ(a.error().code, ErrorCode::internal);
  // NOLINTEND(bugprone-use-after-move)
  ResponseParser c;
  c = std::move(b);
  EXPECT_EQ(c.state(), State::complete);
}

}  // namespace
}  // namespace prodsm::ds::test
