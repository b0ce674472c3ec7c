// SPDX-License-Identifier: Apache-2.0
// s2::ProducerClient on virtual time (no sockets, no sleeps): requests out, responses
// in, events out. P4 positions, S1 stamps, E2/E3/E4 classification by S2's error table,
// retry-after-ms honoured, one batch in flight by default, the option checks (B3).
#include <gtest/gtest.h>

#include <chrono>
#include <variant>
#include <vector>

#include "helpers.hpp"
#include "prodsm/s2/client.hpp"

namespace {

namespace s2 = prodsm::s2;
using namespace std::chrono_literals;
using prodsm::Certainty;
using prodsm::ErrorCode;
using prodsm::Instant;
using s2test::split;

s2::ProducerOptions options(std::optional<std::uint64_t> match = std::nullopt,
                            std::optional<std::string> token = std::nullopt) {
  s2::ProducerOptions o;
  o.endpoint = s2::Endpoint::custom("http://127.0.0.1:8080", "test-basin").value();
  o.stream = "orders";
  o.access_token = "secret-token";
  o.producer.linger = prodsm::Linger::disabled();
  o.producer.protocol.match_seq_num = match;
  o.producer.protocol.fencing_token = std::move(token);
  return o;
}

s2::ProducerClient make(const s2::ProducerOptions& o) {
  auto c = s2::ProducerClient::create(o);
  EXPECT_TRUE(c) << c.error();
  return std::move(c).value();
}

std::vector<s2::ClientRequest> requests(s2::ProducerClient& c) {
  std::vector<s2::ClientRequest> out;
  while (auto r = c.poll_request()) out.push_back(std::move(*r));
  return out;
}

std::vector<s2::ClientEvent> events(s2::ProducerClient& c) {
  std::vector<s2::ClientEvent> out;
  while (auto e = c.poll_event()) out.push_back(std::move(*e));
  return out;
}

std::vector<s2::RecordsCompleted> records_of(const std::vector<s2::ClientEvent>& es) {
  std::vector<s2::RecordsCompleted> out;
  for (const auto& e : es) {
    if (const auto* r = std::get_if<s2::RecordsCompleted>(&e)) out.push_back(*r);
  }
  return out;
}

prodsm::http::Response ack(std::uint64_t start, std::uint64_t end) {
  std::string body;
  s2::encode(s2::AppendAck{{start, 1}, {end, 2}, {end, 2}}, body);
  return s2test::response(200, body, {{"content-type", "application/protobuf"}});
}

s2::AppendInput body_of(const s2::ClientRequest& r) {
  auto input = s2::decode_append_input(split(r.request.bytes).second);
  EXPECT_TRUE(input) << input.error().describe();
  return input.value_or(s2::AppendInput{});
}

/// Submits `records` and flushes at `now`; returns the requests that went out.
std::vector<s2::ClientRequest> send(s2::ProducerClient& c, Instant now, std::initializer_list<const char*> records) {
  for (const char* r : records) EXPECT_TRUE(c.submit(now, std::string_view{r}));
  EXPECT_TRUE(c.flush(now));
  return requests(c);
}

TEST(P4, AnAckCompletesEachRecordAtBatchStartPlusIndex) {
  auto c = make(options());
  const Instant t0{};
  auto sent = send(c, t0, {"a", "b", "c"});
  ASSERT_EQ(sent.size(), 1U);
  const auto [head, body] = split(sent[0].request.bytes);
  EXPECT_EQ(s2test::header_of(head, "Content-Type"), "application/protobuf");
  EXPECT_EQ(s2test::header_of(head, "Accept"), "application/protobuf");
  EXPECT_EQ(s2test::header_of(head, "Authorization"), "Bearer secret-token");
  EXPECT_EQ(s2test::header_of(head, "s2-basin"), "test-basin");
  EXPECT_EQ(head.rfind("POST /v1/streams/orders/records HTTP/1.1\r\n", 0), 0U) << head;
  EXPECT_EQ(body_of(sent[0]).records.size(), 3U);
  // The request's id is its tag: an http::Pool echoes it, so an event loop hands the
  // outcome straight back (a loop that left id 0 had every outcome ignored).
  EXPECT_EQ(sent[0].request.id.value, sent[0].tag);

  c.handle_outcome(t0, sent[0].tag, ack(40, 43));
  const auto es = events(c);
  const auto done = records_of(es);
  ASSERT_EQ(done.size(), 1U);
  for (std::uint64_t t = 0; t < 3; ++t) {
    const auto r = done[0].record(prodsm::Ticket{t});
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r->seq_num(), 40 + t);
    EXPECT_EQ(r->index, t);
  }
  ASSERT_TRUE(std::holds_alternative<prodsm::BarrierCompleted>(es.back()));  // F1 after the records (P3)
  EXPECT_TRUE(std::get<prodsm::BarrierCompleted>(es.back()).result);
}

TEST(S1, MatchSeqNumAdvancesByRecordCountAndTheFencingTokenIsOnEveryBatch) {
  auto o = options(7, "tok");
  o.producer.max_in_flight = 2;  // allowed: sequenced and pipelined (E4)
  auto c = make(o);
  auto first = send(c, Instant{}, {"a", "b"});
  auto second = send(c, Instant{}, {"c"});
  ASSERT_EQ(first.size(), 1U);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_TRUE(first[0].request.retry_safe);
  EXPECT_EQ(body_of(first[0]).match_seq_num, 7U);
  EXPECT_EQ(body_of(second[0]).match_seq_num, 9U);
  EXPECT_EQ(body_of(first[0]).fencing_token, "tok");
  EXPECT_EQ(body_of(second[0]).fencing_token, "tok");
}

TEST(E4, UnaryAppendsKeepOneBatchInFlightByDefault) {
  auto c = make(options());
  auto first = send(c, Instant{}, {"a"});
  auto second = send(c, Instant{}, {"b"});
  ASSERT_EQ(first.size(), 1U);
  EXPECT_TRUE(second.empty());  // waits for the first ack
  EXPECT_FALSE(first[0].request.retry_safe);
  c.handle_outcome(Instant{}, first[0].tag, ack(0, 1));
  second = requests(c);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_EQ(body_of(second[0]).records.at(0).body, "b");
}

TEST(E3, SeqNumMismatchIsADefiniteConditionFailureWithTheServersValue) {
  auto c = make(options(5));
  auto sent = send(c, Instant{}, {"a"});
  c.handle_outcome(Instant{}, sent[0].tag,
                   s2test::response(412, R"({"seq_num_mismatch":12})", {{"content-type", "application/json"}}));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  const auto& e = done[0].result.error();
  EXPECT_EQ(e.code, ErrorCode::condition_failed);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_FALSE(e.retryable);
  EXPECT_EQ(e.expected_seq, 12U);
  EXPECT_TRUE(requests(c).empty());  // terminal: nothing resent (E1)
  EXPECT_FALSE(c.submit(Instant{}, std::string_view{"b"}));
}

// S4 on S2: appends pipelined behind one the server refused (a 429: nothing applied) meet
// seq_num_mismatch with the stream's tail below their match_seq_num — a gap, not a
// conflict. Each waits for the appends before it and is resent with its own
// match_seq_num, so one throttled append no longer fails the run.
TEST(S4, AppendsPipelinedBehindARefusedOneAreResentAfterIt) {
  auto o = options(0);
  o.producer.max_in_flight = 3;
  auto c = make(o);
  const Instant t0{};
  std::vector<s2::ClientRequest> sent;
  for (const char* record : {"a", "b", "c"}) {
    auto one = send(c, t0, {record});
    ASSERT_EQ(one.size(), 1U) << "pipelined: each goes out at once";
    sent.push_back(std::move(one[0]));
  }
  c.handle_outcome(
      t0, sent[0].tag,
      s2test::response(429, R"({"code":"rate_limited","message":"slow down"})", {{"retry-after-ms", "10"}}));
  c.handle_outcome(t0, sent[1].tag, s2test::response(412, R"({"seq_num_mismatch":0})"));
  c.handle_outcome(t0, sent[2].tag, s2test::response(412, R"({"seq_num_mismatch":0})"));
  EXPECT_TRUE(records_of(events(c)).empty()) << "a gap fails nothing";
  EXPECT_TRUE(requests(c).empty()) << "the appends behind wait for the refused one";
  // Resent in order, each with its own match_seq_num, as the one before it is acknowledged.
  Instant now = t0 + 10ms;
  c.handle_timeout(now);
  std::vector<std::uint64_t> resent_matches;
  std::vector<std::string> resent_records;
  for (auto out = requests(c); !out.empty(); out = requests(c)) {
    for (const auto& r : out) {
      const auto input = body_of(r);
      resent_matches.push_back(input.match_seq_num.value_or(999));
      resent_records.push_back(input.records.at(0).body);
      c.handle_outcome(now, r.tag, ack(resent_matches.back(), resent_matches.back() + 1));
    }
  }
  EXPECT_EQ(resent_matches, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(resent_records, (std::vector<std::string>{"a", "b", "c"}));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 3U);
  for (const auto& d : done) EXPECT_TRUE(d.result) << d.result.error().describe();
  EXPECT_EQ(c.core().stats().records_failed, 0U);
}

// S4 on S2, the negative space: an append that went out with none before it cannot be
// behind a lost predecessor, so a tail below its match_seq_num fails it (the stream lost
// records it had acknowledged, or another writer's match_seq_num arithmetic is off).
TEST(S4, AGapWithNoAppendBeforeItIsTerminal) {
  auto c = make(options(5));
  auto sent = send(c, Instant{}, {"a"});
  ASSERT_EQ(sent.size(), 1U);
  c.handle_outcome(Instant{}, sent[0].tag, s2test::response(412, R"({"seq_num_mismatch":3})"));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().code, ErrorCode::sequence_gap);
  EXPECT_EQ(done[0].result.error().certainty, Certainty::definite);
  EXPECT_EQ(done[0].result.error().expected_seq, 3U);
  EXPECT_EQ(done[0].result.error().received_seq, 5U);
  EXPECT_TRUE(requests(c).empty());
}

TEST(E3, FencingTokenMismatchIsADefiniteConditionFailureNamingTheServersToken) {
  auto c = make(options(std::nullopt, "mine"));
  auto sent = send(c, Instant{}, {"a"});
  c.handle_outcome(
      Instant{}, sent[0].tag,
      s2test::response(412, R"({"fencing_token_mismatch":"theirs"})", {{"content-type", "application/json"}}));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(done[0].result.error().certainty, Certainty::definite);
  EXPECT_NE(done[0].result.error().message.find("theirs"), std::string::npos) << done[0].result.error().message;
}

TEST(E3, AConditionFailureAfterAnAmbiguousResendIsIndefinite) {
  auto c = make(options(0));
  const Instant t0{};
  auto sent = send(c, t0, {"a"});
  c.handle_outcome(t0, sent[0].tag, s2test::response(503, R"({"code":"unavailable","message":"x"})"));
  ASSERT_TRUE(c.next_deadline());
  const Instant at = *c.next_deadline();
  c.handle_timeout(at);
  auto resent = requests(c);
  ASSERT_EQ(resent.size(), 1U);
  c.handle_outcome(at, resent[0].tag, s2test::response(412, R"({"seq_num_mismatch":1})"));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(done[0].result.error().certainty, Certainty::indefinite);  // the first attempt may have landed
}

TEST(E2, ARetryableNoSideEffectErrorIsRetriedDefiniteAfterRetryAfterMs) {
  auto c = make(options());  // no match_seq_num: only definite failures may be retried
  const Instant t0{};
  auto sent = send(c, t0, {"a"});
  c.handle_outcome(
      t0, sent[0].tag,
      s2test::response(429, R"({"code":"rate_limited","message":"slow down"})", {{"retry-after-ms", "250"}}));
  EXPECT_TRUE(records_of(events(c)).empty());
  ASSERT_EQ(c.next_deadline(), t0 + 250ms);  // retry-after-ms honoured
  c.handle_timeout(t0 + 249ms);              // D3: never early
  EXPECT_TRUE(requests(c).empty());
  c.handle_timeout(t0 + 250ms);
  auto resent = requests(c);
  ASSERT_EQ(resent.size(), 1U);
  EXPECT_EQ(resent[0].request.bytes, sent[0].request.bytes);  // byte-identical resend
  c.handle_outcome(t0 + 251ms, resent[0].tag, ack(0, 1));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  EXPECT_TRUE(done[0].result);
}

// E6: a delivery timeout after retried failures names the last one, once (the core's
// "the last failure ..."; the client adds its own only when the core named none).
TEST(E6, ADeliveryTimeoutNamesTheLastRetriedFailureOnce) {
  auto o = options();
  o.producer.delivery_timeout_ns = 100ms;
  auto c = make(o);
  const Instant t0{};
  auto sent = send(c, t0, {"a"});
  c.handle_outcome(t0, sent[0].tag, s2test::response(503, R"({"code":"server_draining","message":"xyzzy"})"));
  EXPECT_TRUE(records_of(events(c)).empty());  // no side effect: retried
  c.handle_timeout(t0 + 100ms);
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  const std::string& why = done[0].result.error().message;
  EXPECT_EQ(done[0].result.error().code, ErrorCode::delivery_timeout);
  const std::size_t at = why.find("xyzzy");
  ASSERT_NE(at, std::string::npos) << why;
  EXPECT_EQ(why.find("xyzzy", at + 1), std::string::npos) << "named twice: " << why;
}

TEST(E4, AMaybeAppliedFailureWithoutMatchSeqNumIsTerminalIndefinite) {
  auto c = make(options());
  auto sent = send(c, Instant{}, {"a"});
  c.handle_outcome(Instant{}, sent[0].tag, s2test::response(503, R"({"code":"unavailable","message":"x"})"));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().code, ErrorCode::unavailable);
  EXPECT_EQ(done[0].result.error().certainty, Certainty::indefinite);
  EXPECT_TRUE(requests(c).empty());
}

TEST(E4, ALostConnectionWithoutMatchSeqNumIsTerminalIndefinite) {
  auto c = make(options());
  auto sent = send(c, Instant{}, {"a"});
  c.handle_outcome(
      Instant{}, sent[0].tag,
      tl::unexpected(prodsm::make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "reset")));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().certainty, Certainty::indefinite);
  EXPECT_TRUE(requests(c).empty());
}

TEST(E4, AnUpstreamTimeoutWithMatchSeqNumIsResentByteIdenticalAndAcked) {
  auto c = make(options(3));
  const Instant t0{};
  auto sent = send(c, t0, {"a", "b"});
  c.handle_outcome(t0, sent[0].tag, s2test::response(504, R"({"code":"upstream_timeout","message":"x"})"));
  ASSERT_TRUE(c.next_deadline());
  const Instant at = *c.next_deadline();
  c.handle_timeout(at);
  auto resent = requests(c);
  ASSERT_EQ(resent.size(), 1U);
  EXPECT_EQ(resent[0].request.bytes, sent[0].request.bytes);
  c.handle_outcome(at, resent[0].tag, ack(3, 5));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_TRUE(done[0].result);
  EXPECT_EQ(done[0].record(prodsm::Ticket{1})->seq_num(), 4U);
}

TEST(E5, AnAckWithTheWrongCountFailsTheProducer) {
  auto c = make(options());
  auto sent = send(c, Instant{}, {"a", "b"});
  c.handle_outcome(Instant{}, sent[0].tag, ack(0, 1));
  const auto done = records_of(events(c));
  ASSERT_EQ(done.size(), 1U);
  ASSERT_FALSE(done[0].result);
  EXPECT_EQ(done[0].result.error().code, ErrorCode::invalid_ack);
}

TEST(C1, CloseFlushesAndFinishes) {
  auto c = make(options());
  ASSERT_TRUE(c.submit(Instant{}, std::string_view{"a"}));
  c.close(Instant{});
  auto sent = requests(c);
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_FALSE(c.finished());
  c.handle_outcome(Instant{}, sent[0].tag, ack(0, 1));
  const auto es = events(c);
  ASSERT_FALSE(es.empty());
  ASSERT_TRUE(std::holds_alternative<prodsm::Closed>(es.back()));
  EXPECT_TRUE(std::get<prodsm::Closed>(es.back()).result);
  EXPECT_TRUE(c.finished());
}

TEST(B3, InvalidOptionsAreRefusedNamingTheField) {
  auto o = options();
  o.producer.max_in_flight = 2;
  auto c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("producer.max_in_flight:", 0), 0U) << c.error();

  o = options(0);
  o.producer.max_in_flight = 2;
  o.session.mode = prodsm::http::ConnectionMode::pool;
  c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("producer.max_in_flight:", 0), 0U) << c.error();

  o = options();
  o.stream = "..";
  c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("stream:", 0), 0U) << c.error();

  o = options();
  o.access_token = "has space";
  c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("access_token:", 0), 0U) << c.error();

  // A bad extra header is the extra header's fault also with no access token (an empty
  // token is sent as none): it was named access_token.
  for (const std::string token : {"", "secret-token"}) {
    o = options();
    o.access_token = token;
    o.extra_headers.push_back({"Host", "elsewhere"});
    c = s2::ProducerClient::create(o);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().rfind("extra_headers:", 0), 0U) << c.error();
  }

  o = options();
  o.producer.protocol.fencing_token = std::string(37, 'x');
  c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("producer.protocol.fencing_token:", 0), 0U) << c.error();

  o = options();
  o.max_pending_records = 0;
  c = s2::ProducerClient::create(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("max_pending_records:", 0), 0U) << c.error();
}

// R3, R2: at max_pending_records a submit is refused, and the partial batch holding the
// records to deliver is sealed and sent at once: with no linger timer (as here) nothing
// else would ever send it, and every waiting submit would wait for the delivery timeout.
TEST(R3, MaxPendingRecordsRefusesUntilTheAdapterDelivers) {
  auto o = options();  // Linger::disabled()
  o.max_pending_records = 1;
  auto c = make(o);
  ASSERT_TRUE(c.submit(Instant{}, std::string_view{"a"}));
  EXPECT_TRUE(requests(c).empty()) << "lingering without a timer";
  const auto refused = c.submit(Instant{}, std::string_view{"b"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().reason, prodsm::RejectReason::would_block);
  auto sent = requests(c);
  ASSERT_EQ(sent.size(), 1U) << "R2: sealed and sent at the refusal";
  c.handle_outcome(Instant{}, sent[0].tag, ack(0, 1));
  ASSERT_EQ(records_of(events(c)).size(), 1U);
  c.on_delivered(Instant{}, 1);
  const auto es = events(c);
  ASSERT_EQ(es.size(), 1U);
  EXPECT_TRUE(std::holds_alternative<prodsm::CapacityAvailable>(es[0]));
  EXPECT_TRUE(c.submit(Instant{}, std::string_view{"b"}));
}

TEST(E4, S2SessionsStartWithoutStallDetection) {
  // A stall replacement resends the append; with S2 a resend of an applied append fails
  // its condition instead of succeeding, so the default waits for a slow answer.
  EXPECT_FALSE(s2::ProducerOptions{}.session.stall.enabled);
  EXPECT_FALSE(s2::default_transport_options().stall.enabled);
  EXPECT_EQ(s2::ProducerOptions{}.producer.max_in_flight, 1U);  // unary appends: one in flight
}

}  // namespace
