// SPDX-License-Identifier: Apache-2.0
// http::Connection on byte scripts: pipelined responses matched in order, the
// definite/indefinite rule of every failure (E2, E4), response and pipeline bounds (R3).
// Deadlines are in test_connection_deadlines.cpp. Virtual time only, no sockets.
#include <gtest/gtest.h>

#include "prodsm/http/connection.hpp"
#include "script.hpp"

namespace prodsm::http::test {
namespace {

// ---- pipelining and response matching ------------------------------------------------------

// Several responses arriving in one on_bytes chunk are matched to the pipelined requests in order.
TEST(HttpConnection, PipelinedResponsesInOneChunkMatchRequestsInOrder) {
  ConnectionScript s;
  s.connect();
  for (std::uint64_t id = 1; id <= 3; ++id) s.enqueue(get(id));
  EXPECT_EQ(s.write_all(), request_bytes(1) + request_bytes(2) + request_bytes(3));
  s.feed(ok("one") + ok("two") + ok("three"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "one"));
  EXPECT_TRUE(IsResponse(out[1], 2, 200, "two"));
  EXPECT_TRUE(IsResponse(out[2], 3, 200, "three"));
  EXPECT_EQ(s.conn().state(), Connection::State::open);
  EXPECT_EQ(s.conn().outstanding(), 0U);
  EXPECT_EQ(s.conn().responses(), 3U);
  EXPECT_EQ(s.conn().requests_written(), 3U);
}

// One response split into single-byte chunks completes exactly once, after its last byte.
TEST(HttpConnection, ResponseSplitByteByByteCompletesOnce) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.write_all();
  const std::string first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  s.feed_bytewise(first.substr(0, first.size() - 1));
  EXPECT_TRUE(s.outcomes().empty()) << "incomplete until the last byte";
  s.feed_bytewise(first.substr(first.size() - 1) + ok("second"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "abcde"));
  EXPECT_TRUE(IsResponse(out[1], 2, 200, "second"));
}

// A response split across chunks at every possible point gives the same single outcome.
TEST(HttpConnection, ResponseSplitAtEveryPointCompletesOnce) {
  const std::string response = ok("hello") + ok("world");
  for (std::size_t cut = 0; cut <= response.size(); ++cut) {
    ConnectionScript s;
    s.connect();
    s.enqueue(get(1));
    s.enqueue(get(2));
    s.write_all();
    s.feed(std::string_view(response).substr(0, cut));
    s.feed(std::string_view(response).substr(cut));
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 2U) << "cut at " << cut;
    EXPECT_TRUE(IsResponse(out[0], 1, 200, "hello")) << "cut at " << cut;
    EXPECT_TRUE(IsResponse(out[1], 2, 200, "world")) << "cut at " << cut;
  }
}

// A response that arrives before on_written is valid; the request's bytes stay alive until the write ends.
TEST(HttpConnection, ResponseBeforeOnWrittenIsAcceptedAndBytesKept) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  const WriteView v = s.take();
  ASSERT_EQ(v.count, 2U);
  s.feed(ok("a") + ok("b"));  // both answered while the write is still "in progress"
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "a"));
  EXPECT_TRUE(IsResponse(out[1], 2, 200, "b"));
  EXPECT_TRUE(s.conn().write_in_progress());
  EXPECT_EQ(s.conn().outstanding(), 0U);
  EXPECT_EQ(joined(v), request_bytes(1) + request_bytes(2)) << "the handed-out bytes are still intact";
  EXPECT_TRUE(s.take().empty()) << "nothing new to write while the write is in progress";
  s.written(v.bytes);
  EXPECT_FALSE(s.conn().write_in_progress());
  EXPECT_EQ(s.conn().requests_written(), 2U);
  EXPECT_EQ(s.conn().state(), Connection::State::open);
  EXPECT_TRUE(s.outcomes().empty()) << "no second outcome when the write completes";
}

// A write reported partly written hands out exactly the unwritten rest next.
TEST(HttpConnection, PartialWriteHandsOutTheRestNext) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  const std::string all = request_bytes(1) + request_bytes(2);
  EXPECT_EQ(s.take_bytes(), all);
  s.written(7);
  EXPECT_TRUE(s.conn().wants_write());
  EXPECT_EQ(s.take_bytes(), all.substr(7));
  s.written(request_bytes(1).size());  // the rest of request 1 and 7 bytes of request 2
  EXPECT_EQ(s.conn().requests_written(), 1U);
  EXPECT_EQ(s.write_all(), all.substr(7 + request_bytes(1).size()));
  EXPECT_EQ(s.conn().requests_written(), 2U);
  EXPECT_FALSE(s.conn().wants_write());
}

// One take_write carries at most WriteView::kMaxParts requests; the rest follow in the next one.
TEST(HttpConnection, WriteViewCarriesAtMostMaxPartsRequests) {
  ConnectionScript s;
  s.connect();
  for (std::uint64_t id = 1; id <= WriteView::kMaxParts + 3; ++id) s.enqueue(get(id));
  const WriteView first = s.take();
  EXPECT_EQ(first.count, WriteView::kMaxParts);
  EXPECT_TRUE(carries(joined(first), 1));
  EXPECT_FALSE(carries(joined(first), WriteView::kMaxParts + 1));
  s.written(first.bytes);
  const std::string second = s.write_all();
  EXPECT_EQ(second, request_bytes(17) + request_bytes(18) + request_bytes(19));
}

// Nothing is handed out before the connection is open; the queued requests go out once it is.
TEST(HttpConnection, NothingIsWrittenBeforeTheConnect) {
  ConnectionScript s;
  s.enqueue(get(1));
  EXPECT_EQ(s.conn().state(), Connection::State::connecting);
  EXPECT_FALSE(s.conn().wants_write());
  EXPECT_TRUE(s.take().empty());
  s.connect();
  EXPECT_TRUE(s.conn().wants_write());
  EXPECT_EQ(s.write_all(), request_bytes(1));
}

// A HEAD response ends with its header block even with a Content-Length; the next response follows at once.
TEST(HttpConnection, HeadResponseHasNoBody) {
  ConnectionScript s;
  s.connect();
  s.enqueue(head(1));
  s.enqueue(get(2));
  s.write_all();
  s.feed("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + ok("body"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, ""));
  EXPECT_EQ(out[0].result->header("content-length"), "100");
  EXPECT_TRUE(IsResponse(out[1], 2, 200, "body"));
}

// Interim 1xx responses are skipped: the request's outcome is its final response, once.
TEST(HttpConnection, InterimResponsesAreSkipped) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.write_all();
  s.feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + ok("final") +
         "HTTP/1.1 100 Continue\r\n\r\n");
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "final"));
  s.feed(status_response(204));
  out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 2, 204, ""));
}

// A body delimited by the end of the connection completes at EOF, and the connection closes.
TEST(HttpConnection, EofDelimitedBodyCompletesAtEof) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.feed("HTTP/1.1 200 OK\r\n\r\nhello ");
  s.feed("world");
  EXPECT_TRUE(s.outcomes().empty()) << "the body runs until EOF";
  s.eof();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "hello world"));
  EXPECT_FALSE(out[0].result->keep_alive);
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// Bytes right behind a response, in the same read, with nothing outstanding: the response
// is delivered, marked with how many bytes followed it (its framing is in doubt — a
// Content-Length short of the body), and the connection closes. A response read alone,
// or followed by the next pipelined response, is not marked.
TEST(HttpConnection, BytesBeyondAResponsesFramingMarkIt) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.feed("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcd");
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "abc"));
  EXPECT_EQ(out[0].result->unsolicited_bytes_after, 1U);
  EXPECT_EQ(s.conn().state(), Connection::State::closed);

  ConnectionScript t;
  t.connect();
  t.enqueue(get(1));
  t.enqueue(get(2));
  t.write_all();
  t.feed("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nd");
  out = t.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].result->unsolicited_bytes_after, 0U);
  EXPECT_EQ(out[1].result->unsolicited_bytes_after, 0U);
  EXPECT_EQ(t.conn().state(), Connection::State::open);
}

// Bytes from the server with no request outstanding close the connection, with no outcome.
TEST(HttpConnection, UnsolicitedBytesOnAnIdleConnectionClose) {
  ConnectionScript s;
  s.connect();
  s.feed(status_response(408, "Connection: close\r\n"));
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_NE(s.conn().close_reason().find("no request outstanding"), std::string::npos) << s.conn().close_reason();
}

// Bytes from the server before a queued request was handed out fail it definite: it cannot have been answered.
TEST(E2, BytesBeforeTheRequestWasWrittenFailItDefinite) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));  // queued, never handed out
  s.feed(ok());
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// Bytes, EOF and errors after the connection closed are ignored: nothing more is delivered.
TEST(HttpConnection, EventsAfterCloseAreIgnored) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.eof();
  ASSERT_EQ(s.outcomes().size(), 1U);
  s.feed(ok());
  s.eof();
  s.error("late reset");
  s.connect();
  s.connect_failed("late");
  s.advance(1h);
  s.tick(1ms);
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
  EXPECT_EQ(s.conn().responses(), 0U);
  EXPECT_FALSE(s.conn().next_deadline(1ms).has_value());
}

// ---- failures: definite or indefinite (E2, E4) -----------------------------------------------

// EOF in the middle of a response fails it indefinite (connection_lost, retryable): it was sent.
TEST(E4, EofMidResponseFailsIndefiniteRetryable) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  s.eof();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_NE(error_of(out[0]).message.find("before the response completed"), std::string::npos)
      << error_of(out[0]).message;
  EXPECT_EQ(s.conn().transport_failures(), 1U);
}

// EOF fails a written request indefinite and a request never handed out definite.
TEST(E2, EofFailsWrittenIndefiniteAndNotHandedDefinite) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  const WriteView v = s.take();
  s.enqueue(get(2));  // behind the write in progress: not handed out
  s.written(v.bytes);
  s.eof();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_TRUE(error_of(out[1]).retryable);
  EXPECT_FALSE(s.conn().wants_write()) << "request 2 is never written";
}

// Requests behind a `Connection: close` response: the ones not yet written definite; a
// pipelined one already written indefinite — RFC 9112 9.6 forbids the server to process
// it, but Node's HTTP server does (it stores it and drops its response), and a plain
// append resent as unprocessed would be doubled.
TEST(E2, RequestsBehindConnectionCloseAreDefiniteUnlessWritten) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.write_all();      // 1 and 2 written (pipelined)
  s.enqueue(get(3));  // 3 queued, not yet handed out
  s.feed(status_response(200, "Connection: close\r\n"));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[2], 3, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_TRUE(error_of(out[1]).retryable);
  EXPECT_NE(error_of(out[1]).message.find("may have been processed anyway"), std::string::npos)
      << error_of(out[1]).message;
  EXPECT_NE(error_of(out[2]).message.find("9.6"), std::string::npos) << error_of(out[2]).message;
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// An HTTP/1.0 response without keep-alive closes the connection like `Connection: close`.
TEST(E2, Http10ResponseClosesAndLaterRequestsFailAsBehindConnectionClose) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.write_all();
  s.feed("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[0], 1, 200, "ok"));
  EXPECT_FALSE(out[0].result->keep_alive);
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::indefinite)) << "written";
}

// A malformed response is the parser's protocol_error (indefinite, not retryable); the requests behind fail too.
TEST(E2, MalformedResponseIsProtocolErrorThenTheRestFail) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.write_all();
  s.enqueue(get(3));
  s.feed("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
  EXPECT_FALSE(error_of(out[0]).retryable);
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::indefinite)) << "written: may be processed";
  EXPECT_TRUE(IsFailure(out[2], 3, ErrorCode::connection_lost, Certainty::definite)) << "never handed out";
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// A status line that is not HTTP/ is a protocol_error, not a response.
TEST(E2, NonHttpStatusLineIsProtocolError) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.feed("SSH-2.0-OpenSSH_8.9\r\n");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
}

// A reset after part of a request was written fails it indefinite; a request never handed out definite.
TEST(E4, ResetAfterPartialWriteIsIndefinite) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.take();
  s.written(5);  // 5 bytes of request 1 reached the socket
  EXPECT_FALSE(s.conn().write_in_progress());
  s.enqueue(get(2));
  s.error("Connection reset by peer");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(error_of(out[0]).retryable);
  EXPECT_EQ(error_of(out[0]).message, "Connection reset by peer");
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite));
}

// A reset while a write is in progress fails the request but keeps its bytes until on_written.
TEST(HttpConnection, ResetDuringWriteKeepsBytesUntilOnWritten) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  const WriteView v = s.take();
  s.error("Connection reset by peer");
  ASSERT_EQ(s.outcomes().size(), 1U);
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
  EXPECT_TRUE(s.conn().write_in_progress());
  EXPECT_EQ(joined(v), request_bytes(1));
  s.written(0);
  EXPECT_FALSE(s.conn().write_in_progress());
  EXPECT_TRUE(s.take().empty()) << "a closed connection writes nothing";
}

// A response to a request only partly written is delivered, then the connection closes (the stream is out of step).
TEST(E2, ResponseBeforeTheRequestWasFullySentClosesTheConnection) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.take();
  s.written(5);       // request 1 partly written, the write ended: the rest is not handed out now
  s.enqueue(get(2));  // never handed out
  s.feed(status_response(413));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsResponse(out[0], 1, 413));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite));
  EXPECT_NE(s.conn().close_reason().find("before the request was completely sent"), std::string::npos);
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// A local close fails handed-out requests indefinite and the others `closed` (definite, not retryable); idempotent.
TEST(E2, LocalCloseFailsHandedIndefiniteAndOthersClosed) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.enqueue(get(2));
  s.conn().close("shutting down");
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::closed, Certainty::definite));
  EXPECT_FALSE(error_of(out[1]).retryable);
  EXPECT_EQ(s.conn().close_reason(), "shutting down");
  s.conn().close("again");
  EXPECT_TRUE(s.outcomes().empty());
  EXPECT_EQ(s.conn().close_reason(), "shutting down");
}

// A failed connect fails every queued request `unavailable`, definite, retryable, naming the peer.
TEST(E2, ConnectFailureFailsQueuedUnavailableDefinite) {
  ConnectionScript s;
  s.enqueue(get(1));
  s.enqueue(get(2));
  s.connect_failed("Connection refused");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(IsFailure(out[i], i + 1, ErrorCode::unavailable, Certainty::definite));
    EXPECT_TRUE(error_of(out[i]).retryable);
  }
  EXPECT_EQ(error_of(out[0]).message, "connect to test:80 failed: Connection refused");
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// EOF or an error while connecting is a connect failure: `unavailable`, definite.
TEST(E2, EofOrErrorWhileConnectingIsAConnectFailure) {
  {
    ConnectionScript s;
    s.enqueue(get(1));
    s.eof();
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::unavailable, Certainty::definite));
  }
  {
    ConnectionScript s;
    s.enqueue(get(1));
    s.error("Network is unreachable");
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::unavailable, Certainty::definite));
  }
}

// ---- bounds (R3) ---------------------------------------------------------------------------

// max_requests bounds the requests outstanding; one more fails at once `unavailable`, definite.
TEST(R3, MaxRequestsBoundsThePipeline) {
  ConnectionOptions o = connection_options();
  o.max_requests = 2;
  ConnectionScript s(o);
  s.connect();
  s.enqueue(get(1));
  EXPECT_TRUE(s.conn().can_accept());
  s.enqueue(get(2));
  EXPECT_FALSE(s.conn().can_accept());
  s.enqueue(get(3));
  auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 3, ErrorCode::unavailable, Certainty::definite));
  EXPECT_EQ(s.write_all(), request_bytes(1) + request_bytes(2)) << "request 3 was never queued";
  s.feed(ok());
  EXPECT_TRUE(s.conn().can_accept()) << "an answer frees a place";
  s.enqueue(get(4));
  EXPECT_EQ(s.write_all(), request_bytes(4));
}

// A header block larger than max_header_bytes is a protocol_error, even before it ends.
TEST(R3, OversizedHeaderBlockIsProtocolError) {
  ConnectionOptions o = connection_options();
  o.response_limits.max_header_bytes = 256;
  ConnectionScript s(o);
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  s.feed("HTTP/1.1 200 OK\r\nX-Big: " + std::string(300, 'a'));  // not even complete
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
  EXPECT_NE(error_of(out[0]).message.find("exceeds 256 bytes"), std::string::npos) << error_of(out[0]).message;
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
}

// More header fields than max_headers is a protocol_error.
TEST(R3, TooManyHeaderFieldsIsProtocolError) {
  ConnectionOptions o = connection_options();
  o.response_limits.max_headers = 8;
  ConnectionScript s(o);
  s.connect();
  s.enqueue(get(1));
  s.write_all();
  std::string response = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 9; ++i) response += "X-" + std::to_string(i) + ": v\r\n";
  s.feed(response + "Content-Length: 0\r\n\r\n");
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
}

// A body larger than max_body_bytes is a protocol_error: announced by Content-Length, or growing chunk by chunk.
TEST(R3, OversizedBodyIsProtocolError) {
  ConnectionOptions o = connection_options();
  o.response_limits.max_body_bytes = 1024;
  {
    ConnectionScript s(o);
    s.connect();
    s.enqueue(get(1));
    s.write_all();
    s.feed("HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n");
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
  }
  {
    ConnectionScript s(o);
    s.connect();
    s.enqueue(get(1));
    s.write_all();
    s.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "200\r\n" + std::string(512, 'x') + "\r\n";
    s.feed(chunk);
    s.feed(chunk);
    EXPECT_TRUE(s.outcomes().empty()) << "exactly at the limit";
    s.feed("1\r\nx\r\n");
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
  }
  {
    ConnectionScript s(o);  // an EOF-delimited body is bounded too
    s.connect();
    s.enqueue(get(1));
    s.write_all();
    s.feed("HTTP/1.1 200 OK\r\n\r\n" + std::string(1025, 'y'));
    const auto out = s.outcomes();
    ASSERT_EQ(out.size(), 1U);
    EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::protocol_error, Certainty::indefinite));
  }
}

// An empty request is refused at once (`unavailable`, definite): there is nothing to send.
TEST(HttpConnection, EmptyRequestIsRefused) {
  ConnectionScript s;
  s.connect();
  Request r;
  r.id = RequestId{7};
  s.enqueue(std::move(r));
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(IsFailure(out[0], 7, ErrorCode::unavailable, Certainty::definite));
  EXPECT_EQ(s.conn().outstanding(), 0U);
  EXPECT_EQ(s.conn().state(), Connection::State::open);
}

// The connection tracks idleness from the connect and from its last response.
TEST(HttpConnection, IdleSinceIsTheLastResponseOrTheConnect) {
  ConnectionScript s;
  s.advance(3ms);
  s.connect();
  EXPECT_EQ(s.conn().idle_since(), at(3ms));
  s.enqueue(get(1));
  s.write_all();
  s.advance(4ms);
  s.feed(ok());
  EXPECT_EQ(s.conn().idle_since(), at(7ms));
}

}  // namespace
}  // namespace prodsm::http::test

namespace prodsm::http::test {
namespace {

// A write that never ends (a server that stopped reading) is bounded by the request
// timeout: the connection closes and its requests fail (handed out: indefinite).
TEST(R3, WriteThatNeverEndsTimesOut) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  const WriteView v = s.take();  // handed out, never reported written
  ASSERT_FALSE(v.empty());
  ASSERT_TRUE(s.conn().next_deadline(Duration{0}).has_value());
  EXPECT_EQ(*s.conn().next_deadline(Duration{0}), s.now() + 10s);
  s.advance(10s - 1ns);
  s.tick();
  EXPECT_TRUE(s.outcomes().empty()) << "never early (D3)";
  s.advance(1ns);
  s.tick();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_EQ(s.conn().state(), Connection::State::closed);
  EXPECT_TRUE(s.conn().write_in_progress()) << "the bytes stay alive until the adapter's write ends";
  s.written(0);
  EXPECT_FALSE(s.conn().write_in_progress());
}

// E2: bytes handed to a write that wrote none of them never reached the socket: those
// requests stay definite when the connection is lost afterwards.
TEST(E2, RequestsAWriteDidNotReachStayDefinite) {
  ConnectionScript s;
  s.connect();
  s.enqueue(get(1));
  s.enqueue(get(2));
  const WriteView v = s.take();
  ASSERT_EQ(v.count, 2U);
  s.written(v.parts[0].size() / 2);  // half of request 1, nothing of request 2
  s.eof();
  const auto out = s.outcomes();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(IsFailure(out[0], 1, ErrorCode::connection_lost, Certainty::indefinite)) << "partly written";
  EXPECT_TRUE(IsFailure(out[1], 2, ErrorCode::connection_lost, Certainty::definite)) << "not a byte written";
}

}  // namespace
}  // namespace prodsm::http::test
