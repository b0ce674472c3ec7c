// SPDX-License-Identifier: Apache-2.0
// ds::ProducerClient's requests, no network (issue 22 item 7, S3): when a duplicate
// answering a first attempt fails the producer, the first attempt of the epoch's first
// batch is not retry_safe, so stall detection never resends it early — a resend would
// make a lying 204 look like the duplicate of an attempt the server applied. Every later
// sequenced append, and every append of a resumed producer, stays retry_safe.
#include <gtest/gtest.h>

#include "codec_support.hpp"

#include "prodsm/ds/client.hpp"

namespace prodsm::ds::test {
namespace {

using namespace std::chrono_literals;

ProducerClient client(ProducerStart start) {
  ProducerOptions o;
  o.url = "http://127.0.0.1:4437/s";
  o.producer.protocol.idempotent = {{"p", 7, false}};
  o.start = start;
  // Wall-clock time 0: a fresh epoch is the configured one, 7.
  return ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
}

/// Submits `record`, flushes and returns the batch's request.
ClientRequest send(ProducerClient& c, const std::string& record) {
  EXPECT_TRUE(c.submit(kT0, record).has_value());
  EXPECT_TRUE(c.flush(kT0).has_value());
  auto r = c.poll_request();
  EXPECT_TRUE(r.has_value());
  return r.value_or(ClientRequest{});
}

http::Response appended(std::uint64_t seq) {
  http::Response r;
  r.status = 200;
  r.headers = {
      {"Stream-Next-Offset", std::to_string(seq + 1)}, {"Producer-Epoch", "7"}, {"Producer-Seq", std::to_string(seq)}};
  return r;
}

TEST(S3, TheFirstAttemptOfAFreshEpochsFirstBatchIsNotHedged) {
  for (const auto start : {ProducerStart::fresh_epoch, ProducerStart::given_epoch}) {
    ProducerClient c = client(start);
    const ClientRequest first = send(c, "a");
    EXPECT_FALSE(first.request.retry_safe);
    c.handle_outcome(kT0, first.tag, appended(0));
    const ClientRequest second = send(c, "b");
    EXPECT_TRUE(second.request.retry_safe);  // seq 1: stall detection applies again
  }
}

TEST(S3, AResumedProducersFirstBatchIsRetrySafe) {
  ProducerClient c = client(ProducerStart::resume);
  EXPECT_TRUE(send(c, "a").request.retry_safe);  // its duplicates are accepted anyway
}

// B3: a fresh epoch is new to the server, which expects its seq 0; a configured first seq
// above 0 would fail every append with a sequence gap, so creation refuses it. The other
// starts continue an epoch and may start at a later seq.
TEST(B3, AFreshEpochWithANonzeroFirstSeqIsRefusedAtCreation) {
  for (const auto start : {ProducerStart::fresh_epoch, ProducerStart::given_epoch, ProducerStart::resume}) {
    ProducerOptions o;
    o.url = "http://127.0.0.1:4437/s";
    o.producer.protocol.idempotent = {{"p", 7, false}};
    o.producer.protocol.idempotent->seq = 5;
    o.start = start;
    auto c = ProducerClient::create(o, std::chrono::system_clock::time_point{});
    if (start == ProducerStart::fresh_epoch) {
      ASSERT_FALSE(c.has_value());
      EXPECT_NE(c.error().find("producer.protocol.idempotent.seq: must be 0 with start fresh_epoch"), std::string::npos)
          << c.error();
    } else {
      EXPECT_TRUE(c.has_value()) << c.error();
    }
  }
}

// B3, PROTOCOL.md section 9.1: application/json needs JSON framing and a type that is not
// JSON bytes; a `+json` type takes either (the server stores it as bytes, the other SDKs
// frame it as JSON), and with bytes its records go out as they are.
TEST(B3, APlusJsonContentTypeTakesEitherBodyFormat) {
  auto options = [](const std::string& type, DurableStreamsPolicy::BodyFormat format) {
    ProducerOptions o;
    o.url = "http://127.0.0.1:4437/s";
    o.content_type = type;
    o.producer.protocol.body_format = format;
    return o;
  };
  using F = DurableStreamsPolicy::BodyFormat;
  EXPECT_EQ(validate(options("application/vnd.foo+json", F::bytes)), std::nullopt);
  EXPECT_EQ(validate(options("application/vnd.foo+json", F::json)), std::nullopt);
  EXPECT_EQ(validate(options("application/json", F::json)), std::nullopt);
  EXPECT_EQ(validate(options("application/json", F::bytes)),
            "content_type: 'application/json' needs producer.protocol.body_format = json");
  EXPECT_EQ(validate(options("text/plain", F::json)),
            "content_type: 'text/plain' needs producer.protocol.body_format = bytes");
  auto c =
      ProducerClient::create(options("application/vnd.foo+json", F::bytes), std::chrono::system_clock::time_point{})
          .value();
  ASSERT_TRUE(c.submit(kT0, "{\"x\":1}\n").has_value());
  ASSERT_TRUE(c.submit(kT0, "{\"x\":2}\n").has_value());
  ASSERT_TRUE(c.flush(kT0).has_value());
  auto r = c.poll_request();
  ASSERT_TRUE(r.has_value());
  const std::string& bytes = r->request.bytes;
  EXPECT_EQ(bytes.substr(bytes.size() - 16), "{\"x\":1}\n{\"x\":2}\n") << "the records as they are, no array";
  EXPECT_NE(bytes.find("Content-Type: application/vnd.foo+json\r\n"), std::string::npos) << bytes;
}

}  // namespace
}  // namespace prodsm::ds::test
