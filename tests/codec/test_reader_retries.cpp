// SPDX-License-Identifier: Apache-2.0
// ds::StreamReader's retries on hand-built responses and virtual time (no network, D1-style):
// a failed GET retried within the retry policy with Retry-After honoured and 4xx not
// retried (issue 15, E4), bounded by max_attempts, retry_timeout_ns and the read's
// timeout, and each retry kept for the driver to tell when it is decided.
#include "reader_drive.hpp"

namespace prodsm::ds::test {
namespace {

TEST(StreamReader, Issue15_E4_5xx429And408AreRetriedWithBackoffAndRetryAfter) {
  Drive d;
  d.request();
  d.respond(503, {{"Retry-After", "2"}}, {"busy"});
  EXPECT_FALSE(d.reader.finished());
  ASSERT_TRUE(d.reader.next_deadline());
  EXPECT_GE(*d.reader.next_deadline(), d.now + 2s) << "Retry-After is honoured";
  EXPECT_FALSE(d.reader.poll_request(d.now + 1s).has_value()) << "no retry before its backoff";
  d.now = *d.reader.next_deadline();
  d.reader.handle_timeout(d.now);
  EXPECT_EQ(d.request(), "-1");
  d.respond(500, {}, {});
  d.now = *d.reader.next_deadline();
  d.reader.handle_timeout(d.now);
  d.request();
  d.respond(408, {}, {});  // a read changes nothing: a 408 is asked again too
  ASSERT_FALSE(d.reader.finished()) << d.error().describe();
  d.now = *d.reader.next_deadline();
  d.reader.handle_timeout(d.now);
  d.request();
  d.ok("o1", "data");
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.out, "data");
  EXPECT_EQ((*d.reader.result())->retries, 3u);
}

// E4: a retry that could only come after the read's timeout_ns (a Retry-After of an hour
// against a 10 min read) is not waited for: the read fails now with the server's answer,
// saying why it was not retried, instead of waiting silently until it times out.
TEST(StreamReader, E4_ARetryPastTheReadsTimeoutFailsAtOnceNamingRetryAfter) {
  Drive d;
  d.request();
  d.respond(503, {{"Retry-After", "3600"}}, {"busy"});
  ASSERT_TRUE(d.reader.finished());
  EXPECT_FALSE(d.reader.timed_out());
  EXPECT_EQ(d.error().code, ErrorCode::unavailable);
  EXPECT_NE(d.error().message.find("not retried"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("Retry-After"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("timeout_ns (600000 ms)"), std::string::npos) << d.error().message;
  EXPECT_EQ(d.error().failure, ReadFailure::other) << "the server's answer ended it, not the timeout";
  EXPECT_EQ(d.reader.summary().requests, 1u);
}

TEST(StreamReader, E4_ALostConnectionIsRetriedAtOnce) {
  Drive d;
  d.request();
  d.transport(lost());
  EXPECT_EQ(d.request(), "-1") << "the first retry after a lost connection goes out at once";
  d.ok("o1", "x");
  EXPECT_TRUE(d.ok());
}

// E4: a header provider that failed for one attempt (a token refresh that timed out)
// sent nothing and is retryable within the retry policy (error.hpp): the read asks again
// after its backoff instead of failing on the first such attempt.
TEST(StreamReader, E4_AFailedHeaderProviderIsRetried) {
  Drive d;
  d.request();
  d.transport(make_error(ErrorCode::header_provider_failed, Certainty::definite, true, "token command timed out"));
  ASSERT_FALSE(d.reader.finished()) << d.error().describe();
  ASSERT_TRUE(d.reader.next_deadline());
  d.now = *d.reader.next_deadline();
  d.reader.handle_timeout(d.now);
  EXPECT_EQ(d.request(), "-1");
  d.ok("o1", "x");
  EXPECT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(d.reader.summary().retries, 1u);
}

TEST(StreamReader, Issue15_404And400AreNotRetriedAndNameThePath) {
  for (const int status : {404, 400}) {
    Drive d({}, "/missing/stream");
    d.request();
    d.respond(status, {}, {"nope"});
    ASSERT_TRUE(d.reader.finished()) << status;
    EXPECT_EQ(d.error().code, status == 404 ? ErrorCode::not_found : ErrorCode::rejected);
    EXPECT_EQ(d.error().http_status, status);
    EXPECT_NE(d.error().message.find("read /missing/stream: HTTP " + std::to_string(status)), std::string::npos)
        << d.error().message;
    EXPECT_EQ(d.reader.summary().requests, 1u);
  }
}

TEST(StreamReader, E4_RetriesEndAfterMaxAttempts) {
  ReadOptions o;
  o.retry.max_attempts = 3;
  Drive d(o);
  for (int i = 0; i < 3; ++i) {
    if (auto when = d.reader.next_deadline(); when && i > 0) d.now = std::min(*when, d.now + 1h);
    d.request();
    d.respond(500, {}, {});
  }
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::unavailable);
  EXPECT_NE(d.error().message.find("after 3 attempts"), std::string::npos) << d.error().message;
}

// E4, E6: retry_timeout_ns bounds the retries at one offset in time, as a producer's
// delivery_timeout_ns does (1000 attempts alone are hours of backoff); progress starts
// the bound again.
TEST(StreamReader, E4_RetriesEndAtRetryTimeoutFromTheFirstFailureAtAnOffset) {
  ReadOptions o;
  o.retry.max_attempts = 1000;
  o.retry.backoff_initial_ns = 100ms;
  o.retry.backoff_max_ns = 1s;
  o.retry_timeout_ns = 5s;
  Drive d(o);
  d.request();
  d.respond(200, {{"Stream-Next-Offset", "o1"}}, {"ab"});  // progress: no failure counted yet
  EXPECT_EQ(d.request(), "o1") << "the next page at once";
  d.respond(503, {}, {});
  int attempts = 1;
  while (!d.reader.finished()) {
    const auto when = d.reader.next_deadline();  // the retry's backoff
    ASSERT_TRUE(when);
    d.now = std::max(d.now, *when);
    if (d.request().empty()) break;
    d.respond(503, {}, {});
    ++attempts;
    ASSERT_LT(attempts, 100) << "not bounded";
  }
  ASSERT_TRUE(d.reader.finished());
  EXPECT_EQ(d.error().code, ErrorCode::unavailable);
  EXPECT_NE(d.error().message.find("not retried past retry_timeout_ns (5000 ms)"), std::string::npos)
      << d.error().message;
  EXPECT_LE(d.now - kT0, 5s) << "no request after the bound";
  EXPECT_GT(attempts, 5) << "retried until then";
  EXPECT_EQ(d.out, "ab");
}

// E4: every retry is counted and kept when it is decided, before it goes out (a driver
// tells its caller: an operator would otherwise see nothing while a read retries for
// minutes): the failure, the offset read again, the attempt's number and the wait before
// the retry. The failure that ends the read is no retry (it is the read's result).
TEST(StreamReader, E4_EachRetryIsKeptWhenItIsDecided) {
  std::vector<ReadRetry> told;
  std::uint64_t seen = 0;
  ReadOptions o;
  o.retry.max_attempts = 3;
  Drive d(o);
  auto look = [&] {  // as a driver does after each input
    if (d.reader.retries_decided() == seen) return;
    seen = d.reader.retries_decided();
    ASSERT_TRUE(d.reader.last_retry());
    told.push_back(*d.reader.last_retry());
  };
  EXPECT_FALSE(d.reader.last_retry());
  d.request();
  d.ok("o1", "ab", false);
  look();
  EXPECT_TRUE(told.empty()) << "a page that arrived is no retry";
  d.request();
  d.transport(lost());
  look();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].failure.code, ErrorCode::connection_lost);
  EXPECT_NE(told[0].failure.message.find("/s"), std::string::npos) << "names the stream: " << told[0].failure.message;
  EXPECT_EQ(told[0].offset, "o1");
  EXPECT_EQ(told[0].attempt, 1u);
  EXPECT_EQ(told[0].delay_ns, Duration{0}) << "a lost connection is retried at once";
  EXPECT_EQ(d.request(), "o1");
  d.respond(503, {{"Retry-After", "2"}}, {"busy"});
  look();
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[1].failure.code, ErrorCode::unavailable);
  EXPECT_EQ(told[1].attempt, 2u);
  ASSERT_TRUE(d.reader.next_deadline());
  EXPECT_EQ(told[1].delay_ns, *d.reader.next_deadline() - d.now) << "the wait before the retry";
  EXPECT_GE(told[1].delay_ns, 2s) << "Retry-After honoured";
  d.now = *d.reader.next_deadline();
  d.reader.handle_timeout(d.now);
  look();
  EXPECT_EQ(told.size(), 2u) << "the retry going out is not another";
  EXPECT_EQ(d.request(), "o1");
  d.respond(500, {}, {});
  look();
  ASSERT_TRUE(d.reader.finished()) << "max_attempts 3";
  EXPECT_EQ(told.size(), 2u) << "the failure that ends the read is its result, not a retry";
  EXPECT_EQ(d.error().code, ErrorCode::unavailable);
  EXPECT_EQ(d.reader.summary().retries, 2u);
}

}  // namespace
}  // namespace prodsm::ds::test
