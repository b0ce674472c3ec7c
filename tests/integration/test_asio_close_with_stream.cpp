// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Producer::async_close_with_stream against the reference server: the
// producer's close (C1) followed by one sequenced `Stream-Closed: true` request (S2, S6),
// as the TypeScript IdempotentProducer.close(finalMessage) does.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <thread>

#include "io_thread.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

asio::ProducerOptions options_for(const std::string& url, const std::string& producer_id, std::uint64_t epoch = 0,
                                  bool auto_claim = false) {
  asio::ProducerOptions o;
  o.url = url;
  o.content_type = "text/plain";
  o.producer.linger = Linger::after(0ms);
  o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{producer_id, epoch, auto_claim};
  o.start = ds::ProducerStart::given_epoch;  // these tests manage the epochs themselves
  return o;
}

bool is_closed(IoThread& io, const std::string& url) {
  const auto parsed = ds::StreamUrl::parse(url).value();
  auto session = asio::Session::create(io.io.get_executor(), parsed).value();
  auto head = asio::async_head_stream(session, parsed, {}, ::asio::use_future).get();
  session->close();
  EXPECT_TRUE(head.has_value()) << (head ? "" : head.error().describe());
  return head && head->closed;
}

// Records, then the final record with the close: the stream holds all of them once,
// is closed, and the producer refuses later submits (C2). A second call returns the
// same result without sending anything.
TEST(CloseWithStream, FlushesThenClosesTheStreamWithTheFinalRecord) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cws-final", "text/plain");
  auto options = options_for(url, "cws-1");
  options.producer.linger = Linger::disabled();  // both records in one batch, sealed by the close
  // The request count below is exact: no stall detection, which on a loaded machine may
  // give up on a late answer to the close and resend it.
  options.session.stall.enabled = false;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  ASSERT_TRUE(producer.submit("a-"));
  ASSERT_TRUE(producer.submit("b-"));
  auto closed = producer.async_close_with_stream(std::string("final"), ::asio::use_future).get();
  ASSERT_TRUE(closed.has_value()) << closed.error().describe();
  EXPECT_FALSE(closed->final_offset.empty());
  EXPECT_EQ(client.read_all(url, false), "a-b-final");
  EXPECT_TRUE(is_closed(io, url));
  auto later = producer.submit("late");
  ASSERT_FALSE(later.has_value());
  EXPECT_EQ(later.error().reason, RejectReason::closed);
  auto again = producer.async_close_with_stream(std::nullopt, ::asio::use_future).get();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->final_offset, closed->final_offset);
  EXPECT_EQ(producer.stats().session.requests_written, 2u);  // one batch, one close
}

// The close carries the producer headers: the same (id, epoch, seq) close sent again by
// a fresh producer is deduplicated (one copy of the final record), while another
// producer's close of the closed stream fails with stream_closed (S6).
TEST(CloseWithStream, IsSequencedWithTheProducerHeaders) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cws-seq", "text/plain");
  {
    auto first = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-a")).value();
    auto r = first.async_close_with_stream(std::string("last"), ::asio::use_future).get();
    ASSERT_TRUE(r.has_value()) << r.error().describe();
  }
  {
    auto resend = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-a")).value();
    auto r = resend.async_close_with_stream(std::string("last"), ::asio::use_future).get();
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    EXPECT_FALSE(r->final_offset.empty());
  }
  EXPECT_EQ(client.read_all(url, false), "last");
  auto other = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-b")).value();
  auto r = other.async_close_with_stream(std::nullopt, ::asio::use_future).get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::stream_closed) << r.error().describe();
}

// S5: another producer took the epoch over. With auto_claim the close claims server
// epoch + 1 (seq 0) once; without it the close fails with stale_epoch.
TEST(CloseWithStream, StaleEpochIsClaimedOnceWithAutoClaim) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cws-claim", "text/plain");
  ds::AppendOptions takeover;
  takeover.producer = ds::ProducerHeaders{"cws-c", 4, 0};
  ASSERT_EQ(client.post(url, "text/plain", "fencer-", takeover).status, 200);

  auto fenced = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-c", 0, false)).value();
  auto refused = fenced.async_close_with_stream(std::string("x"), ::asio::use_future).get();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(refused.error().server_epoch, 4u);
  EXPECT_FALSE(is_closed(io, url));

  auto claiming = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-c", 0, true)).value();
  auto r = claiming.async_close_with_stream(std::string("claimed"), ::asio::use_future).get();
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(client.read_all(url, false), "fencer-claimed");
  EXPECT_TRUE(is_closed(io, url));
}

// JSON mode: the final record is checked like a submit and framed as a batch of one.
TEST(CloseWithStream, JsonFinalRecordIsCheckedAndFramed) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cws-json", "application/json");
  auto options = options_for(url, "cws-j");
  options.content_type = "application/json";
  options.producer.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  ASSERT_TRUE(producer.submit(R"({"n":1})"));
  auto bad = producer.async_close_with_stream(std::string("{not json"), ::asio::use_future).get();
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_record);
  EXPECT_FALSE(is_closed(io, url));  // refused at once: nothing was closed
  auto ok = producer.async_close_with_stream(std::string("[1,2]"), ::asio::use_future).get();
  ASSERT_TRUE(ok.has_value()) << ok.error().describe();
  EXPECT_EQ(client.read_all(url, true), R"([{"n":1},[1,2]])");
  EXPECT_TRUE(is_closed(io, url));
}

// After a plain close (the producer only), the stream cannot be closed through it.
TEST(CloseWithStream, AfterAPlainCloseFailsWithClosed) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cws-after", "text/plain");
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(url, "cws-p")).value();
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  auto r = producer.async_close_with_stream(std::nullopt, ::asio::use_future).get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::closed);
  EXPECT_FALSE(is_closed(io, url));
}

}  // namespace
}  // namespace prodsm::test
