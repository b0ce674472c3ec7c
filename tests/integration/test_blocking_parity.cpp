// SPDX-License-Identifier: Apache-2.0
// The blocking adapter has what the Asio adapter has, on the same shared client: a
// session that producers attach to (C4), the sequenced close of the stream
// (close_with_stream: C1 + S2 + S5 + S6), and the stream operations — against the
// reference server.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "liveness.hpp"
#include "prodsm/blocking/producer.hpp"
#include "prodsm/blocking/stream_ops.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

blocking::ProducerOptions parity_options(const std::string& url, const std::string& producer_id,
                                         std::uint64_t epoch = 0, bool auto_claim = false) {
  blocking::ProducerOptions o;
  o.url = url;
  o.content_type = "text/plain";
  o.producer.linger = Linger::after(0ms);
  o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{producer_id, epoch, auto_claim};
  o.start = ds::ProducerStart::given_epoch;  // these tests manage the epochs themselves
  return o;
}

bool is_closed(const std::string& url) {
  const auto parsed = ds::StreamUrl::parse(url).value();
  auto session = blocking::Session::create(parsed).value();
  auto head = blocking::head_stream(*session, parsed, {}, kWait);
  EXPECT_TRUE(head.has_value()) << (head ? "" : head.error().describe());
  return head && head->closed;
}

// C4: a producer attached to a caller's session leaves it open at close (the session
// still carries requests); a producer's own session is closed by its close.
TEST(C4, BlockingAttachedSessionIsLeftOpenOwnedSessionIsClosed) {
  TestClient client;
  const std::string url = new_stream(client, "attach", "text/plain");
  const auto parsed = ds::StreamUrl::parse(url).value();
  auto session = blocking::Session::create(parsed).value();
  {
    auto attached = blocking::Producer::attach(session, parity_options(url, "attach-1")).value();
    ASSERT_TRUE(attached.submit("a").has_value());
    ASSERT_TRUE(attached.close(kWait).has_value());
    EXPECT_EQ(attached.session(), session);
  }
  auto head = blocking::head_stream(*session, parsed, {}, kWait);
  ASSERT_TRUE(head.has_value()) << "the attached session is still open: " << head.error().describe();
  auto owned = blocking::Producer::create(parity_options(url, "attach-2")).value();
  ASSERT_TRUE(owned.submit("b").has_value());
  ASSERT_TRUE(owned.close(kWait).has_value());
  auto after = blocking::head_stream(*owned.session(), parsed, {}, kWait);
  ASSERT_FALSE(after.has_value()) << "the owned session was closed by the producer's close";
  EXPECT_EQ(after.error().code, ErrorCode::closed);
  EXPECT_EQ(client.read_all(url, false), "ab");
}

// Two producers attached to one session share its connection.
TEST(C4, BlockingTwoProducersShareOneSession) {
  TestClient client;
  const std::string first = new_stream(client, "share-a", "text/plain");
  const std::string second = new_stream(client, "share-b", "text/plain");
  // No stall detection: on a slow build (ThreadSanitizer) or a busy machine it may
  // replace the connection, which is right there but not what this test counts.
  http::TransportOptions transport;
  transport.stall.enabled = false;
  auto session = blocking::Session::create(ds::StreamUrl::parse(first).value(), transport).value();
  auto a = blocking::Producer::attach(session, parity_options(first, "share-a")).value();
  auto b = blocking::Producer::attach(session, parity_options(second, "share-b")).value();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(a.submit("a" + std::to_string(i) + ";").has_value());
    ASSERT_TRUE(b.submit("b" + std::to_string(i) + ";").has_value());
  }
  ASSERT_TRUE(a.close(kWait).has_value());
  ASSERT_TRUE(b.close(kWait).has_value());
  EXPECT_EQ(session->stats().connections_opened, 1U);
  std::string want_a;
  std::string want_b;
  for (int i = 0; i < 100; ++i) {
    want_a += "a" + std::to_string(i) + ";";
    want_b += "b" + std::to_string(i) + ";";
  }
  EXPECT_EQ(client.read_all(first, false), want_a);
  EXPECT_EQ(client.read_all(second, false), want_b);
}

// C4: producers attached to a session that is closed under them fail their records with
// `closed` instead of hanging. A request made after the close fails inside exchange(),
// on the thread that made it and with the producer's lock held (the submitting thread's
// flush, or the session's I/O thread delivering the failures of requests in flight): the
// handler ran inline and locked that lock again, a deadlock, until the drive took such
// outcomes itself.
TEST(C4, BlockingProducersOnAClosedSessionFailTheirRecordsInsteadOfDeadlocking) {
  TestClient client;
  const std::string url = new_stream(client, "closed-session", "text/plain");
  const std::string held = new_stream(client, "closed-session-held", "text/plain");
  auto session = blocking::Session::create(ds::StreamUrl::parse(url).value()).value();
  auto p = blocking::Producer::attach(session, parity_options(url, "closed-1")).value();
  auto q = blocking::Producer::attach(session, parity_options(held, "closed-2")).value();
  ASSERT_TRUE(p.submit("a").has_value());
  ASSERT_TRUE(p.flush(kWait).has_value());
  // q's records are in flight (the server holds its appends) when the session closes.
  client.set_fault_mix(ReferenceServer::shared().url(),
                       R"({"path":")" + ds::StreamUrl::parse(held)->path +
                           R"(","method":"POST","probability":1,"seed":1,"faults":[{"delayMs":500}]})");
  std::vector<blocking::RecordTicket> in_flight;
  for (int i = 0; i < 5; ++i) in_flight.push_back(q.submit("q" + std::to_string(i)).value());
  session->close();
  client.clear_fault_mix(ReferenceServer::shared().url());
  auto late = p.submit("b");  // accepted: the producer is open; its request fails at once
  ASSERT_TRUE(late.has_value());
  EXPECT_FALSE(p.flush(kWait).has_value()) << "a record failed";
  const auto outcome = late->wait(kWait);
  ASSERT_TRUE(outcome.has_value()) << "the record's outcome never came";
  ASSERT_FALSE(outcome->has_value());
  EXPECT_EQ(outcome->error().code, ErrorCode::closed) << outcome->error().describe();
  EXPECT_EQ(outcome->error().certainty, Certainty::definite);
  for (const auto& t : in_flight) {
    const auto r = t.wait(kWait);
    ASSERT_TRUE(r.has_value()) << "a record in flight at the close never completed";
    EXPECT_FALSE(r->has_value());
  }
  EXPECT_FALSE(q.close(kWait).has_value());
  EXPECT_FALSE(p.close(kWait).has_value());
  EXPECT_EQ(client.read_all(url, false), "a");
}

// C1 + S6: the records, then the final record with the close; the producer refuses later
// submits (C2); a second call returns the same result.
TEST(CloseWithStream, BlockingFlushesThenClosesTheStreamWithTheFinalRecord) {
  TestClient client;
  const std::string url = new_stream(client, "bcws-final", "text/plain");
  auto options = parity_options(url, "bcws-1");
  options.producer.linger = Linger::disabled();
  auto producer = blocking::Producer::create(options).value();
  ASSERT_TRUE(producer.submit("a-").has_value());
  ASSERT_TRUE(producer.submit("b-").has_value());
  auto closed = producer.close_with_stream(std::string("final"), kWait);
  ASSERT_TRUE(closed.has_value()) << closed.error().describe();
  EXPECT_FALSE(closed->final_offset.empty());
  EXPECT_EQ(client.read_all(url, false), "a-b-final");
  EXPECT_TRUE(is_closed(url));
  auto later = producer.submit("late");
  ASSERT_FALSE(later.has_value());
  EXPECT_EQ(later.error().reason, RejectReason::closed);
  auto again = producer.close_with_stream(std::nullopt, kWait);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->final_offset, closed->final_offset);
}

// C1, B4, C4: a final record refused at the call (over max_batch_bytes) closes nothing:
// the owned session stays open, so the producer's later records and close still reach the
// stream. A later call is a retry of the close: its own final record is not appended.
TEST(CloseWithStream, BlockingARefusedFinalRecordClosesNothing) {
  TestClient client;
  const std::string url = new_stream(client, "bcws-refused", "text/plain");
  auto options = parity_options(url, "bcws-r");
  options.producer.max_batch_bytes = 100;
  auto producer = blocking::Producer::create(options).value();
  ASSERT_TRUE(producer.submit("a-").has_value());
  auto refused = producer.close_with_stream(std::string(101, 'x'), kWait);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_record);
  EXPECT_NE(refused.error().message.find("max_batch_bytes"), std::string::npos) << refused.error().describe();
  EXPECT_FALSE(is_closed(url));
  ASSERT_TRUE(producer.submit("b-").has_value()) << "still open";
  auto closed = producer.close_with_stream(std::string("final"), kWait);
  ASSERT_TRUE(closed.has_value()) << closed.error().describe();
  EXPECT_EQ(client.read_all(url, false), "a-b-final");
  EXPECT_TRUE(is_closed(url));
  auto retry = producer.close_with_stream(std::string("another"), kWait);
  ASSERT_TRUE(retry.has_value()) << retry.error().describe();
  EXPECT_EQ(retry->final_offset, closed->final_offset);
  EXPECT_EQ(client.read_all(url, false), "a-b-final");
}

// S5: after a takeover, the close claims server epoch + 1 once with auto_claim, and fails
// with stale_epoch without it.
TEST(CloseWithStream, BlockingStaleEpochIsClaimedOnceWithAutoClaim) {
  TestClient client;
  const std::string url = new_stream(client, "bcws-claim", "text/plain");
  ds::AppendOptions takeover;
  takeover.producer = ds::ProducerHeaders{"bcws-c", 4, 0};
  ASSERT_EQ(client.post(url, "text/plain", "fencer-", takeover).status, 200);
  auto fenced = blocking::Producer::create(parity_options(url, "bcws-c", 0, false)).value();
  auto refused = fenced.close_with_stream(std::string("x"), kWait);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::stale_epoch);
  EXPECT_FALSE(is_closed(url));
  auto claiming = blocking::Producer::create(parity_options(url, "bcws-c", 0, true)).value();
  auto r = claiming.close_with_stream(std::string("claimed"), kWait);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(client.read_all(url, false), "fencer-claimed");
  EXPECT_TRUE(is_closed(url));
}

// After a plain close (the producer only), the stream cannot be closed through it.
TEST(CloseWithStream, BlockingAfterAPlainCloseFailsWithClosed) {
  TestClient client;
  const std::string url = new_stream(client, "bcws-after", "text/plain");
  auto producer = blocking::Producer::create(parity_options(url, "bcws-p")).value();
  ASSERT_TRUE(producer.close(kWait).has_value());
  auto r = producer.close_with_stream(std::nullopt, kWait);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::closed);
  EXPECT_FALSE(is_closed(url));
}

// The stream operations: create (201, then 200 for the same configuration, 409 for
// another), head, read, close, delete, and their classified errors.
TEST(StreamOps, BlockingCreateHeadReadCloseDelete) {
  auto& server = ReferenceServer::shared();
  ASSERT_FALSE(server.url().empty()) << server.error();
  const auto url = ds::StreamUrl::parse(server.stream_url("bops")).value();
  auto session = blocking::Session::create(url).value();
  auto created = blocking::create_stream(*session, url, "text/plain", {}, {}, kWait);
  ASSERT_TRUE(created.has_value()) << created.error().describe();
  EXPECT_TRUE(created->created);
  auto same = blocking::create_stream(*session, url, "text/plain", {}, {}, kWait);
  ASSERT_TRUE(same.has_value());
  EXPECT_FALSE(same->created);
  auto other = blocking::create_stream(*session, url, "application/json", {}, {}, kWait);
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, ErrorCode::conflict) << other.error().describe();
  {
    auto producer = blocking::Producer::attach(session, parity_options(url.to_string(), "bops-1")).value();
    ASSERT_TRUE(producer.submit("hello ").has_value());
    ASSERT_TRUE(producer.submit("world").has_value());
    ASSERT_TRUE(producer.close(kWait).has_value());
  }
  auto head = blocking::head_stream(*session, url, {}, kWait);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_FALSE(head->closed);
  auto read = blocking::read_stream_all(*session, url, false, 1 << 20);
  ASSERT_TRUE(read.has_value()) << read.error().describe();
  EXPECT_EQ(read->body, "hello world");
  EXPECT_EQ(read->next_offset, head->next_offset);
  auto closed = blocking::close_stream(*session, url, "text/plain", {}, kWait);
  ASSERT_TRUE(closed.has_value()) << closed.error().describe();
  EXPECT_EQ(closed->final_offset, head->next_offset);
  auto again = blocking::close_stream(*session, url, "text/plain", {}, kWait);
  ASSERT_TRUE(again.has_value()) << "a plain close is idempotent";
  ASSERT_TRUE(blocking::delete_stream(*session, url, {}, kWait).has_value());
  auto gone = blocking::head_stream(*session, url, {}, kWait);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code, ErrorCode::not_found);
  auto missing = blocking::read_stream_all(*session, url, false, 1 << 20);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
}

// A stream operation on a session whose stall estimate fast appends brought down to its
// floor is waited for, not taken for a stall: it is one request with no retry of its own,
// so a stall failed it (connection_lost) whenever the server was a few ms slow, as on a
// loaded machine (StreamOps.BlockingCreateHeadReadCloseDelete failed so, now and then).
// The Asio stream operations were never stall-detected.
TEST(StreamOps, ASlowAnswerIsNotAStallOnASessionOfFastAppends) {
  TestClient client;
  const std::string url = new_stream(client, "ops-slow-answer", "text/plain");
  const auto parsed = ds::StreamUrl::parse(url).value();
  auto session = blocking::Session::create(parsed).value();
  {
    auto producer = blocking::Producer::attach(session, parity_options(url, "ops-slow-answer")).value();
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(producer.submit("r" + std::to_string(i) + "\n").has_value());
      if (i % 10 == 9) {
        ASSERT_TRUE(producer.flush(kWait).has_value());  // 30 fast responses
      }
    }
    ASSERT_TRUE(producer.close(kWait).has_value());
  }
  const std::uint64_t stalls_before = session->stats().stalls;
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + parsed.path + R"(","method":"HEAD","delayMs":400,"count":1})");
  auto head = blocking::head_stream(*session, parsed, {}, kWait);
  client.clear_faults(ReferenceServer::shared().url());
  ASSERT_TRUE(head.has_value()) << head.error().describe();
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_EQ(session->stats().stalls, stalls_before) << "the slow answer was not taken for a stall";
}

// A read on a session whose stall estimate fast appends brought down to its floor is
// waited for, not taken for a stall: a healthy response that takes 400 ms to start (the
// server building a large body) costs no retry and no replaced connection. Before, each
// stall cost one of the read's attempts and a large stream could not be read at all.
TEST(ReadStream, ASlowFirstByteIsNotAStallOnASessionOfFastAppends) {
  TestClient client;
  const std::string url = new_stream(client, "read-slow-start", "text/plain");
  const auto parsed = ds::StreamUrl::parse(url).value();
  auto session = blocking::Session::create(parsed).value();
  {
    auto producer = blocking::Producer::attach(session, parity_options(url, "read-slow-start")).value();
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(producer.submit("r" + std::to_string(i) + "\n").has_value());
      if (i % 10 == 9) {
        ASSERT_TRUE(producer.flush(kWait).has_value());  // 30 fast responses
      }
    }
    ASSERT_TRUE(producer.close(kWait).has_value());
  }
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + parsed.path + R"(","method":"GET","delayMs":400,"count":1})");
  // The appends may have stalled on a loaded machine (a 5 ms floor); only the read's count.
  const std::uint64_t stalls_before = session->stats().stalls;
  std::string got;
  ds::ReadOptions o;
  auto outcome = blocking::read_stream(*session, parsed, o, [&got](const ds::ReadChunk& c) {
    got += c.data;
    return true;
  });
  client.clear_faults(ReferenceServer::shared().url());
  ASSERT_TRUE(outcome.has_value()) << outcome.error().describe();
  EXPECT_EQ(outcome->retries, 0U) << "the slow read was not asked again";
  EXPECT_EQ(session->stats().stalls, stalls_before) << "the read was not taken for a stall";
  std::string want;
  for (int i = 0; i < 300; ++i) want += "r" + std::to_string(i) + "\n";
  EXPECT_EQ(got, want);
}

// E4: each retry of a read is told to its ReadRetryHandler before it goes out (the
// failure, the offset, the attempt), on the calling thread; the data is whole.
TEST(ReadStream, E4_EachRetryIsToldToTheRetryHandler) {
  TestClient client;
  const std::string url = new_stream(client, "read-retries-told", "text/plain");
  const auto parsed = ds::StreamUrl::parse(url).value();
  (void)client.post(url, "text/plain", "hello", ds::AppendOptions{});
  auto session = blocking::Session::create(parsed).value();
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + parsed.path + R"(","method":"GET","status":503,"count":2,"retryAfter":0})");
  std::string got;
  std::vector<ds::ReadRetry> told;
  const auto caller = std::this_thread::get_id();
  bool on_caller = true;
  auto outcome = blocking::read_stream(
      *session, parsed, ds::ReadOptions{},
      [&got](const ds::ReadChunk& c) {
        got += c.data;
        return true;
      },
      [&](const ds::ReadRetry& r) {
        on_caller = on_caller && std::this_thread::get_id() == caller;
        told.push_back(r);
        throw std::runtime_error("a throwing retry handler changes nothing");
      });
  client.clear_faults(ReferenceServer::shared().url());
  ASSERT_TRUE(outcome.has_value()) << outcome.error().describe();
  EXPECT_EQ(got, "hello");
  EXPECT_EQ(outcome->retries, 2U);
  ASSERT_EQ(told.size(), 2U);
  EXPECT_TRUE(on_caller) << "told on the calling thread";
  for (std::uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(told[i].failure.code, ErrorCode::unavailable);
    EXPECT_EQ(told[i].attempt, i + 1);
    EXPECT_EQ(told[i].offset, "-1");
  }
}

// P1, P2, R3 with submit_many: records submitted many at a time (mixed with single
// submits whose callbacks share their batches) land once, in order; the gauges count
// what is outstanding and drain to zero. Both producers of both adapters run the one
// implementation this exercises (adapters/*/src/producer_impl.hpp).
TEST(SubmitMany, BlockingRecordsLandInOrderAndTheGaugesDrain) {
  TestClient client;
  const std::string url = new_stream(client, "submit-many", "text/plain");
  auto options = parity_options(url, "submit-many");
  options.producer.max_batch_bytes = 256;
  options.producer.linger = Linger::after(60s);  // in effect only size and flush seal
  auto created = blocking::Producer::create(options);
  ASSERT_TRUE(created) << created.error();
  auto& p = *created;

  // Before any flush: one partial batch holds everything accepted.
  const std::vector<std::string> first{"a\n", "b\n", "c\n"};
  const std::vector<std::string_view> first_views(first.begin(), first.end());
  auto head = p.submit_many(first_views);
  ASSERT_EQ(head.accepted, 3U);
  EXPECT_FALSE(head.refused);
  EXPECT_EQ(head.first.value, 0U);
  auto gauges = p.stats();
  EXPECT_EQ(gauges.pending_records, 3U);
  EXPECT_EQ(gauges.unacked_bytes, 6U);
  EXPECT_EQ(gauges.unacked_batches, 1U);
  EXPECT_EQ(gauges.in_flight_batches, 0U);

  std::string expected = "a\nb\nc\n";
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) lines.push_back("r" + std::to_string(i) + "\n");
  std::atomic<int> callbacks{0};
  int singles = 0;
  std::size_t next = 0;
  while (next < lines.size()) {
    if (next % 7 == 0) {  // a single submit with a callback, in the same batches
      ASSERT_TRUE(p.submit(lines[next], [&](const blocking::RecordResult& r) { callbacks += r ? 1 : 0; }));
      expected += lines[next++];
      ++singles;
      continue;
    }
    const std::size_t n = std::min<std::size_t>(13, lines.size() - next);
    std::vector<std::string_view> views(lines.begin() + static_cast<std::ptrdiff_t>(next),
                                        lines.begin() + static_cast<std::ptrdiff_t>(next + n));
    auto r = p.submit_many(views);
    ASSERT_GT(r.accepted, 0U) << (r.refused ? r.refused->describe() : "");
    for (std::size_t i = 0; i < r.accepted; ++i) expected += lines[next + i];
    next += r.accepted;
  }
  ASSERT_TRUE(p.flush(kWait).has_value());
  EXPECT_GT(singles, 100);
  EXPECT_EQ(callbacks.load(), singles);  // A1, A2: each ran once, before flush returned
  const auto drained = p.stats();
  EXPECT_EQ(drained.pending_records, 0U);
  EXPECT_EQ(drained.unacked_bytes, 0U);
  EXPECT_EQ(drained.unacked_batches, 0U);
  EXPECT_EQ(drained.in_flight_batches, 0U);
  EXPECT_EQ(drained.core.records_succeeded, 3003U);
  EXPECT_GT(drained.core.batches_acked, 10U);
  ASSERT_TRUE(p.close(kWait).has_value());
  EXPECT_EQ(client.read_all(url, false), expected);
}

}  // namespace
}  // namespace prodsm::test
