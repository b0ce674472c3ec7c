// SPDX-License-Identifier: Apache-2.0
// What the adapters' event hook is told (prodsm/detail/event_tracker.hpp) and the
// submit-to-ack latency they report (ds::ProducerClient::submit_to_ack), on a
// ds::ProducerClient driven by hand on virtual time: no network, no sleeps.
#include <gtest/gtest.h>

#include "codec_support.hpp"

#include <vector>

#include "prodsm/detail/event_tracker.hpp"
#include "prodsm/ds/client.hpp"

namespace prodsm::ds::test {
namespace {

using namespace std::chrono_literals;

ProducerClient client(bool auto_claim = false) {
  ProducerOptions o;
  o.url = "http://127.0.0.1:4437/s";
  o.producer.protocol.idempotent = {{"p", 7, auto_claim}};
  o.start = ProducerStart::given_epoch;
  return ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
}

/// Submits `record` at `now`, flushes and returns the batch's request.
ClientRequest send(ProducerClient& c, Instant now, const std::string& record) {
  EXPECT_TRUE(c.submit(now, record).has_value());
  EXPECT_TRUE(c.flush(now).has_value());
  auto r = c.poll_request();
  EXPECT_TRUE(r.has_value());
  return r.value_or(ClientRequest{});
}

http::Response status(int code, http::Headers headers = {}) {
  http::Response r;
  r.status = code;
  r.headers = std::move(headers);
  return r;
}

http::Response appended(std::uint64_t epoch, std::uint64_t seq) {
  return status(200, {{"Stream-Next-Offset", std::to_string(seq + 1)},
                      {"Producer-Epoch", std::to_string(epoch)},
                      {"Producer-Seq", std::to_string(seq)}});
}

/// The events a look at `c` and `session` makes.
std::vector<ProducerEvent> look(prodsm::detail::EventTracker& t, const ProducerClient& c,
                                const http::PoolStats& session = {}) {
  std::vector<ProducerEvent> out;
  t.observe(c, session, out);
  return out;
}

// E3, E2: a plain close_with_stream with a final record whose attempt failed indefinite
// (the connection lost after the request was written) is resent — append and close are
// one step at the server, so the resend cannot append the record twice — and a 409
// stream_closed answering the resend may answer our own first attempt: indefinite, not
// "definitely not appended" (it was, in the run that found this).
TEST(E3, AStreamClosedAnsweringAResendOfTheFinalRecordIsIndefinite) {
  ProducerOptions o;
  o.url = "http://127.0.0.1:4437/s";
  o.producer.retry.backoff_initial_ns = 1ms;
  ProducerClient c = ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
  const auto op = c.close_with_stream(kT0, std::string("final"));
  ASSERT_TRUE(op);
  auto first = c.poll_request();
  ASSERT_TRUE(first);
  EXPECT_NE(first->request.bytes.find("Stream-Closed: true"), std::string::npos);
  EXPECT_EQ(first->request.id.value, first->tag) << "an http::Pool echoes the id: it is the tag";
  c.handle_outcome(kT0, first->tag,
                   tl::unexpected(make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "reset")));
  ASSERT_TRUE(c.next_deadline());
  c.handle_timeout(*c.next_deadline());
  auto resend = c.poll_request();
  ASSERT_TRUE(resend) << "resent: the close cannot append twice";
  EXPECT_EQ(resend->request.bytes, first->request.bytes);
  c.handle_outcome(*c.next_deadline() + 1ms, resend->tag,
                   status(409, {{"Stream-Closed", "true"}, {"Stream-Next-Offset", "9"}}));
  std::optional<CloseStreamResult> result;
  while (auto e = c.poll_event()) {
    if (auto* done = std::get_if<StreamCloseCompleted>(&*e); done && done->op == *op) result = done->result;
  }
  ASSERT_TRUE(result);
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().code, ErrorCode::stream_closed);
  EXPECT_EQ(result->error().certainty, Certainty::indefinite) << result->error().describe();
  EXPECT_NE(result->error().message.find("an earlier attempt may have appended the final record"), std::string::npos);
}

// E6, E4: a stream close's retries end at delivery_timeout_ns after its first failure,
// as a record's do, not after retry.max_attempts (1000 by default: hours of backoff
// against a server that answers 503 for good); the error says why it was not retried.
TEST(E6, AStreamClosesRetriesEndAtTheDeliveryTimeout) {
  for (const bool final : {false, true}) {
    SCOPED_TRACE(final);
    ProducerOptions o;
    o.url = "http://127.0.0.1:4437/s";
    o.producer.delivery_timeout_ns = 10s;
    ProducerClient c = ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
    const auto op = final ? c.close_with_stream(kT0, std::nullopt) : c.close_stream(kT0);
    ASSERT_TRUE(op);
    Instant now = kT0;
    std::optional<CloseStreamResult> result;
    std::uint32_t attempts = 0;
    while (!result && attempts < 100) {
      auto r = c.poll_request();
      if (!r) {
        ASSERT_TRUE(c.next_deadline()) << "neither a request nor a deadline after " << attempts << " attempts";
        now = *c.next_deadline();
        c.handle_timeout(now);
        continue;
      }
      ++attempts;
      c.handle_outcome(now, r->tag, status(503));
      while (auto e = c.poll_event()) {
        if (auto* done = std::get_if<StreamCloseCompleted>(&*e); done && done->op == *op) result = done->result;
      }
    }
    ASSERT_TRUE(result) << attempts << " attempts";
    ASSERT_FALSE(*result);
    EXPECT_EQ(result->error().code, ErrorCode::unavailable) << result->error().describe();
    EXPECT_NE(result->error().message.find("not retried: the next attempt would come more than delivery_timeout_ns"),
              std::string::npos)
        << result->error().describe();
    EXPECT_LE(now - kT0, 10s) << "no attempt after the delivery timeout";
    EXPECT_GT(attempts, 5U) << "retried until then";
  }
}

// R3, R2: at max_pending_records a submit is refused (the records accepted wait for the
// adapter to deliver their completions) and the partial batch is sealed and sent at
// once, whatever the linger: a batch left lingering without a timer delivered nothing,
// and every waiting submit waited for the delivery timeout. submit_many alike.
TEST(R3, MaxPendingRecordsSealsThePartialBatch) {
  for (const bool many : {false, true}) {
    SCOPED_TRACE(many);
    ProducerOptions o;
    o.url = "http://127.0.0.1:4437/s";
    o.producer.linger = Linger::disabled();
    o.max_pending_records = 2;
    ProducerClient c = ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
    const std::string_view records[] = {"a", "b", "c"};
    if (many) {
      const auto r = c.submit_many(kT0, records);
      EXPECT_EQ(r.accepted, 2U);
      ASSERT_TRUE(r.refused);
      EXPECT_EQ(r.refused->detail, "max_pending_records reached");
    } else {
      ASSERT_TRUE(c.submit(kT0, records[0]));
      ASSERT_TRUE(c.submit(kT0, records[1]));
      EXPECT_FALSE(c.poll_request()) << "lingering without a timer";
      const auto r = c.submit(kT0, records[2]);
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().detail, "max_pending_records reached");
    }
    auto sent = c.poll_request();
    ASSERT_TRUE(sent) << "R2: sealed and sent at the refusal";
    EXPECT_NE(sent->request.bytes.find("\r\n\r\nab"), std::string::npos) << sent->request.bytes;
  }
}

// E4: a retried attempt is one warning naming the failure; the resend's success is none.
TEST(E4, ARetryIsAWarningEventNamingTheFailedAttempt) {
  ProducerClient c = client();
  prodsm::detail::EventTracker t({}, EventLevel::debug);
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag, status(503));
  auto events = look(t, c);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, EventKind::retry);
  EXPECT_EQ(events[0].level, EventLevel::warning);
  EXPECT_EQ(events[0].count, 1U);
  ASSERT_TRUE(events[0].cause.has_value());
  EXPECT_EQ(events[0].cause->code, ErrorCode::unavailable);
  EXPECT_EQ(events[0].cause->http_status, 503);
  EXPECT_NE(events[0].describe().find("warning retry: "), std::string::npos) << events[0].describe();
  EXPECT_NE(events[0].describe().find("cause: unavailable"), std::string::npos) << events[0].describe();
  EXPECT_TRUE(look(t, c).empty()) << "an event is made once";
  // The resend is acknowledged: no event.
  const Instant resend_at = c.next_deadline().value();
  c.handle_timeout(resend_at);
  auto resend = c.poll_request();
  ASSERT_TRUE(resend.has_value());
  c.handle_outcome(resend_at + 1ms, resend->tag, appended(7, 0));
  EXPECT_TRUE(look(t, c).empty());
}

// S5: an auto-claim is a warning naming the epoch claimed and the 403 behind it.
TEST(S5, AClaimIsAnEventNamingTheNewEpochAndTheStaleEpochAnswer) {
  ProducerClient c = client(/*auto_claim=*/true);
  prodsm::detail::EventTracker t({}, EventLevel::info);
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag, status(403, {{"Producer-Epoch", "9"}}));
  auto events = look(t, c);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, EventKind::claim);
  EXPECT_EQ(events[0].level, EventLevel::warning);
  EXPECT_EQ(events[0].epoch, 10U);
  ASSERT_TRUE(events[0].cause.has_value());
  EXPECT_EQ(events[0].cause->code, ErrorCode::stale_epoch);
  EXPECT_EQ(events[0].cause->server_epoch, 9U);
}

// E1: the terminal error is one error-level event with the sticky error, made once.
TEST(E1, TheTerminalErrorIsOneEventWithTheStickyError) {
  ProducerClient c = client();
  prodsm::detail::EventTracker t({}, EventLevel::error);  // retries are below min_level
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag, status(400));
  auto events = look(t, c);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, EventKind::terminal);
  EXPECT_EQ(events[0].level, EventLevel::error);
  ASSERT_TRUE(events[0].cause.has_value());
  EXPECT_EQ(events[0].cause->code, ErrorCode::rejected);
  EXPECT_EQ(events[0].cause, c.core().terminal_error());
  c.close(kT0 + 2ms);
  EXPECT_TRUE(look(t, c).empty()) << "terminal is emitted once";
}

// E1: the terminal event is the last of its look — after the session's events noticed at
// the same input — and no event follows it.
TEST(E1, TheTerminalEventIsLastAndNothingFollowsIt) {
  ProducerClient c = client();
  http::PoolStats s;
  s.connections_opened = 1;
  prodsm::detail::EventTracker t(s, EventLevel::debug);
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag,
                   tl::unexpected(make_error(ErrorCode::unavailable, Certainty::definite, false, "refused")));
  s.connect_failures = 1;  // the failed connect behind that failure, and a reconnect
  s.transport_failures = 1;
  s.connections_opened = 2;
  auto events = look(t, c, s);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[0].kind, EventKind::reconnect);
  EXPECT_EQ(events[0].level, EventLevel::warning) << "the failed connect is reported with the failure";
  ASSERT_TRUE(events[0].cause.has_value()) << "the failure that ended the producer is its cause";
  EXPECT_EQ(events[0].cause->code, ErrorCode::unavailable);
  EXPECT_EQ(events[1].kind, EventKind::reconnect);
  EXPECT_EQ(events.back().kind, EventKind::terminal);
  s.transport_failures = 2;  // the session goes on (an attached one, other producers)
  s.connections_opened = 3;
  s.connect_failures = 2;
  EXPECT_TRUE(look(t, c, s).empty()) << "nothing after the terminal event";
}

// Below min_level nothing is made.
TEST(Events, MinLevelFiltersRetriesOut) {
  ProducerClient c = client();
  prodsm::detail::EventTracker t({}, EventLevel::error);
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag, status(503));
  EXPECT_TRUE(look(t, c).empty());
}

// A reconnect is a connection opened after a loss (E2), not the pool growing or the first
// connect; a failed connect is a warning; an attached session's past is not news.
TEST(E2, AReconnectIsAConnectionOpenedAfterALossNotPoolGrowth) {
  ProducerClient c = client();
  http::PoolStats s;
  s.connections_opened = 2;
  s.transport_failures = 3;  // before this producer attached
  prodsm::detail::EventTracker t(s, EventLevel::debug);
  s.connections_opened = 4;  // the pool grew
  EXPECT_TRUE(look(t, c, s).empty());
  s.transport_failures = 4;  // a loss, and no new connection yet
  EXPECT_TRUE(look(t, c, s).empty());
  s.connections_opened = 5;
  auto events = look(t, c, s);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, EventKind::reconnect);
  EXPECT_EQ(events[0].level, EventLevel::info);
  s.connections_opened = 6;  // no loss since: growth again
  EXPECT_TRUE(look(t, c, s).empty());
  s.stalls = 1;
  s.connections_opened = 7;
  EXPECT_EQ(look(t, c, s).size(), 1U) << "a stalled connection replaced is a reconnect";
  s.connect_failures = 2;
  events = look(t, c, s);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, EventKind::reconnect);
  EXPECT_EQ(events[0].level, EventLevel::warning);
  EXPECT_EQ(events[0].count, 2U);
}

// A reconnect names the transport failure the producer retried.
TEST(E2, AReconnectNamesTheLastTransportFailure) {
  ProducerClient c = client();
  http::PoolStats s;
  s.connections_opened = 1;
  prodsm::detail::EventTracker t(s, EventLevel::info);
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 1ms, first.tag,
                   tl::unexpected(make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "reset")));
  s.transport_failures = 1;
  s.connections_opened = 2;
  auto events = look(t, c, s);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].kind, EventKind::retry);
  EXPECT_EQ(events[1].kind, EventKind::reconnect);
  ASSERT_TRUE(events[1].cause.has_value());
  EXPECT_EQ(events[1].cause->code, ErrorCode::connection_lost);
}

// Submit-to-ack latency: from the accepting submit's `now` to the acknowledging input's,
// per record; failed records are not counted.
TEST(Latency, SubmitToAckIsMeasuredOnTheInputsTimes) {
  ProducerClient c = client();
  const ClientRequest first = send(c, kT0, "a");
  c.handle_outcome(kT0 + 40ms, first.tag, appended(7, 0));
  auto l = c.submit_to_ack();
  EXPECT_EQ(l.count, 1U);
  EXPECT_EQ(l.max_ns, 40ms);
  EXPECT_EQ(l.p50_ns, 40ms) << "the quantile is capped at the exact maximum";
  // Three records in one batch, submitted 0, 10 and 20 ms before the ack at +100 ms.
  const Instant t1 = kT0 + 1s;
  ASSERT_TRUE(c.submit(t1, "b").has_value());
  ASSERT_TRUE(c.submit(t1 + 10ms, "c").has_value());
  ASSERT_TRUE(c.submit(t1 + 20ms, "d").has_value());
  ASSERT_TRUE(c.flush(t1 + 20ms).has_value());
  auto second = c.poll_request();
  ASSERT_TRUE(second.has_value());
  c.handle_outcome(t1 + 100ms, second->tag, appended(7, 1));
  l = c.submit_to_ack();
  EXPECT_EQ(l.count, 4U);
  EXPECT_EQ(l.max_ns, 100ms);
  EXPECT_GE(l.p50_ns, 80ms);  // ranks 2 of 40, 80, 90, 100 ms: the bucket of 80 ms
  EXPECT_LE(l.p50_ns, 80ms + 80ms / 16);
  // A failed record is not acknowledged: not counted.
  const ClientRequest third = send(c, t1 + 1s, "e");
  c.handle_outcome(t1 + 1s + 1ms, third.tag, status(400));
  EXPECT_EQ(c.submit_to_ack().count, 4U);
}

}  // namespace
}  // namespace prodsm::ds::test
