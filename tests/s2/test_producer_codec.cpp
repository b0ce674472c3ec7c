// SPDX-License-Identifier: Apache-2.0
// The codec joined to the Producer core by hand, sans-IO (what an S2 ProducerClient
// will do): SendBatch -> encode_batch -> (server) -> response bytes -> classify_append
// -> handle_ack / handle_failure. S1 stamps on the wire, P4 positions, E3 condition
// failures, E4 resends byte-identical, E5 a wrong ack count, headers through framed records.
#include <gtest/gtest.h>

#include <chrono>
#include <variant>

#include "helpers.hpp"
#include "prodsm/s2.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace {

namespace s2 = prodsm::s2;
using namespace std::chrono_literals;
using prodsm::Certainty;
using prodsm::ErrorCode;
using prodsm::Instant;
using prodsm::S2Config;
using prodsm::S2Policy;
using prodsm::S2Producer;
using s2test::split;

using Send = prodsm::SendBatch<S2Policy>;
using Done = prodsm::TicketsCompleted<S2Policy>;

const s2::Endpoint& endpoint() {
  static const s2::Endpoint e = s2::Endpoint::custom("http://127.0.0.1:8080", "test-basin").value();
  return e;
}

S2Config config(std::optional<std::uint64_t> match, std::optional<std::string> token = std::nullopt) {
  S2Config c;
  c.linger = prodsm::Linger::disabled();
  c.protocol.match_seq_num = match;
  c.protocol.fencing_token = std::move(token);
  return c;
}

/// Drains actions; returns the SendBatches and the completions.
struct Drained {
  std::vector<Send> sends;
  std::vector<Done> done;
};
Drained drain(S2Producer& p) {
  Drained d;
  while (auto a = p.poll_action()) {
    if (auto* s = std::get_if<Send>(&*a)) d.sends.push_back(*s);
    if (auto* t = std::get_if<Done>(&*a)) d.done.push_back(std::move(*t));
  }
  return d;
}

std::string raw_response(int status, std::string_view reason, std::string_view type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string{reason} + "\r\ncontent-type: " + std::string{type} +
         "\r\ncontent-length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string ack_bytes(std::uint64_t start, std::uint64_t end) {
  std::string out;
  s2::encode(s2::AppendAck{{start, 1}, {end, 2}, {end, 2}}, out);
  return out;
}

/// What the server received: the request's protobuf body decoded.
s2::AppendInput received(const prodsm::http::Request& request) {
  const auto input = s2::decode_append_input(split(request.bytes).second);
  EXPECT_TRUE(input) << input.error().describe();
  return input.value_or(s2::AppendInput{});
}

TEST(S1, StampsReachTheWireAndAcksCompleteTicketsWithPositions) {
  auto p = S2Producer::create(config(10, "tok-1")).value();
  const Instant t0{};
  for (const char* r : {"a", "b", "c"}) ASSERT_TRUE(p.submit(t0, std::string_view{r}));
  ASSERT_TRUE(p.flush(t0));
  auto d = drain(p);
  ASSERT_EQ(d.sends.size(), 1U);
  const auto request = s2::encode_batch(endpoint(), "s", d.sends[0], S2Policy::RecordFormat::body, {});
  ASSERT_TRUE(request) << request.error();
  EXPECT_TRUE(request->retry_safe);
  const s2::AppendInput input = received(*request);
  ASSERT_EQ(input.records.size(), 3U);
  EXPECT_EQ(input.records[2].body, "c");
  EXPECT_EQ(input.match_seq_num, 10U);
  EXPECT_EQ(input.fencing_token, "tok-1");

  const auto ack =
      s2::classify_append(s2test::parse(raw_response(200, "OK", "application/protobuf", ack_bytes(10, 13))));
  ASSERT_TRUE(ack);
  p.handle_ack(t0, d.sends[0].batch, d.sends[0].attempt, s2::to_policy_ack(*ack));
  d = drain(p);
  ASSERT_EQ(d.done.size(), 1U);
  ASSERT_TRUE(d.done[0].result);
  EXPECT_EQ(d.done[0].result->start_seq_num + prodsm::index_in_batch(d.done[0], d.done[0].last), 12U);  // P4

  // The next batch is stamped 13 (S1).
  ASSERT_TRUE(p.submit(t0, std::string_view{"d"}));
  ASSERT_TRUE(p.flush(t0));
  d = drain(p);
  ASSERT_EQ(d.sends.size(), 1U);
  EXPECT_EQ(received(*s2::encode_batch(endpoint(), "s", d.sends[0], S2Policy::RecordFormat::body, {})).match_seq_num,
            13U);
}

TEST(E5, AnAckForTheWrongNumberOfRecordsFailsTheProducer) {
  auto p = S2Producer::create(config(0)).value();
  ASSERT_TRUE(p.submit(Instant{}, std::string_view{"a"}));
  ASSERT_TRUE(p.submit(Instant{}, std::string_view{"b"}));
  ASSERT_TRUE(p.flush(Instant{}));
  auto d = drain(p);
  const auto ack = s2::classify_append(s2test::response(200, ack_bytes(0, 1)));
  ASSERT_TRUE(ack);
  p.handle_ack(Instant{}, d.sends[0].batch, d.sends[0].attempt, s2::to_policy_ack(*ack));
  d = drain(p);
  ASSERT_EQ(d.done.size(), 1U);
  ASSERT_FALSE(d.done[0].result);
  EXPECT_EQ(d.done[0].result.error().code, ErrorCode::invalid_ack);
}

TEST(E3, A412FromTheServerFailsTheProducerDefinite) {
  auto p = S2Producer::create(config(5, "mine")).value();
  ASSERT_TRUE(p.submit(Instant{}, std::string_view{"a"}));
  ASSERT_TRUE(p.flush(Instant{}));
  auto d = drain(p);
  const auto e = s2::classify_append(s2test::parse(
      raw_response(412, "Precondition Failed", "application/json", R"({"fencing_token_mismatch":"theirs"})")));
  ASSERT_FALSE(e);
  p.handle_failure(Instant{}, d.sends[0].batch, d.sends[0].attempt, e.error());
  d = drain(p);
  ASSERT_EQ(d.done.size(), 1U);
  ASSERT_FALSE(d.done[0].result);
  EXPECT_EQ(d.done[0].result.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(d.done[0].result.error().certainty, Certainty::definite);
  EXPECT_NE(d.done[0].result.error().message.find("'theirs'"), std::string::npos);
}

TEST(E4, AMaybeAppliedFailureWithMatchSeqNumIsResentByteIdentical) {
  auto p = S2Producer::create(config(0)).value();
  Instant now{};
  ASSERT_TRUE(p.submit(now, std::string_view{"a"}));
  ASSERT_TRUE(p.flush(now));
  auto d = drain(p);
  const auto first = s2::encode_batch(endpoint(), "s", d.sends[0], S2Policy::RecordFormat::body, {});
  const auto e =
      s2::classify_append(s2test::response(503, R"({"code":"unavailable","message":"x"})", {{"retry-after-ms", "20"}}));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().certainty, Certainty::indefinite);
  p.handle_failure(now, d.sends[0].batch, d.sends[0].attempt, e.error());
  ASSERT_TRUE(p.next_deadline());
  EXPECT_GE(*p.next_deadline() - now, 20ms);  // retry-after-ms is the backoff's floor
  now = *p.next_deadline();
  p.handle_timeout(now);
  d = drain(p);
  ASSERT_EQ(d.sends.size(), 1U);
  EXPECT_EQ(d.sends[0].attempt, 2U);
  const auto resend = s2::encode_batch(endpoint(), "s", d.sends[0], S2Policy::RecordFormat::body, {});
  EXPECT_EQ(resend->bytes, first->bytes);
}

TEST(S2CodecProducer, FramedRecordsCarryHeadersAndFenceCommandsToTheWire) {
  S2Config c = config(std::nullopt);
  c.protocol.record_format = S2Policy::RecordFormat::framed;
  auto p = S2Producer::create(c).value();
  const s2::HeaderView headers[] = {{"content-type", "text/plain"}};
  const std::string rec = s2::frame_record(headers, "hello").value();
  const std::string fence = s2::fence_record("next").value();
  ASSERT_TRUE(p.submit(Instant{}, rec));
  ASSERT_TRUE(p.submit(Instant{}, fence));
  ASSERT_TRUE(p.flush(Instant{}));
  auto d = drain(p);
  EXPECT_EQ(p.unacked_bytes(), (8U + 2 + 12 + 10 + 5) + (8U + 2 + 5 + 4));  // S2's meter, exactly
  const s2::AppendInput input =
      received(*s2::encode_batch(endpoint(), "s", d.sends[0], S2Policy::RecordFormat::framed, {}));
  ASSERT_EQ(input.records.size(), 2U);
  EXPECT_EQ(input.records[0].headers, (std::vector<s2::Header>{{"content-type", "text/plain"}}));
  EXPECT_EQ(input.records[0].body, "hello");
  EXPECT_EQ(input.records[1].headers, (std::vector<s2::Header>{{"", "fence"}}));
  EXPECT_EQ(input.records[1].body, "next");
}

}  // namespace
