// SPDX-License-Identifier: Apache-2.0
// asio::S2Producer end to end against the S2 test server (tests/s2-server/server.mjs):
// records land exactly once and in order with their seq_nums (P2–P4, S1), a fence and a
// match_seq_num mismatch fail definite (E3), scripted faults are retried where S2's table
// and match_seq_num make it safe and fail indefinite where not (E2, E4).
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/post.hpp>
#include <asio/use_future.hpp>

#include <future>

#include <mutex>
#include <vector>

#include "io_thread.hpp"
#include "prodsm/asio/s2_producer.hpp"
#include "prodsm/s2/records.hpp"
#include "s2_test_server.hpp"
#include "tls_endpoint.hpp"

namespace {

using namespace std::chrono_literals;
using prodsm::Certainty;
using prodsm::ErrorCode;
namespace asio = prodsm::asio;
namespace s2 = prodsm::s2;
namespace test = prodsm::test;

class S2Asio : public ::testing::Test {
 protected:
  static test::S2TestServer& server() {
    static test::S2TestServer s;
    return s;
  }
  void SetUp() override {
    ASSERT_FALSE(server().url().empty()) << server().error();
    asio::SessionOptions control_options;
    control_options.stall.enabled = false;  // reads of 1000 records are slow to come, not stalled
    auto session = asio::Session::create(io_.io.get_executor(), "127.0.0.1", server().endpoint().port, control_options);
    ASSERT_TRUE(session) << session.error();
    control_ = *session;
    stream_ = server().stream_name("s2-asio");
    auto created = test::create_s2_stream(control_, server().endpoint(), stream_);
    ASSERT_TRUE(created) << created.error();
  }
  void TearDown() override {
    if (control_) control_->close();
  }

  asio::S2ProducerOptions options() const {
    asio::S2ProducerOptions o;
    o.endpoint = server().endpoint();
    o.stream = stream_;
    o.producer.linger = prodsm::Linger::after(std::chrono::milliseconds{1});
    o.producer.max_batch_records = 50;
    o.producer.retry.backoff_initial_ns = 1ms;
    return o;
  }
  asio::S2Producer make(const asio::S2ProducerOptions& o) {
    auto p = asio::S2Producer::create(io_.io.get_executor(), o);
    EXPECT_TRUE(p) << p.error();
    return std::move(p).value();
  }
  std::vector<s2::SequencedRecord> stream_records() {
    auto r = test::read_s2_stream(control_, server().endpoint(), stream_);
    EXPECT_TRUE(r) << r.error();
    return r.value_or(std::vector<s2::SequencedRecord>{});
  }
  void faults(const std::string& json) {
    auto r = test::inject_s2_faults(control_, server().endpoint(), json);
    ASSERT_TRUE(r) << r.error();
  }

  test::IoThread io_;
  std::shared_ptr<asio::Session> control_;
  std::string stream_;
};

TEST_F(S2Asio, RecordsLandExactlyOnceInOrderWithTheirSeqNums) {  // P2, P3, P4
  auto p = make(options());
  constexpr std::uint64_t kRecords = 1200;
  std::mutex mu;
  std::vector<std::uint64_t> seq_nums;
  for (std::uint64_t i = 0; i < kRecords; ++i) {
    auto r = p.submit("record-" + std::to_string(i), [&](const asio::S2RecordResult& result) {
      std::lock_guard lock(mu);
      seq_nums.push_back(result ? result->seq_num() : ~0ULL);
    });
    ASSERT_TRUE(r) << r.error().detail;
  }
  ASSERT_TRUE(p.async_flush(::asio::use_future).get());
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(seq_nums.size(), kRecords);
    for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(seq_nums[i], i);  // A1 order, P4 positions
  }
  const auto records = stream_records();
  ASSERT_EQ(records.size(), kRecords);
  for (std::uint64_t i = 0; i < kRecords; ++i) {
    EXPECT_EQ(records[i].seq_num, i);
    EXPECT_EQ(records[i].body, "record-" + std::to_string(i));
  }
  EXPECT_GT(p.stats().core.batches_acked, 1U);  // several appends, one in flight at a time
}

TEST_F(S2Asio, MatchSeqNumStampsEveryBatchAndPipelinesOverOneConnection) {  // S1, E4
  auto o = options();
  o.producer.protocol.match_seq_num = 0;
  o.producer.max_in_flight = 4;
  auto p = make(o);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(p.submit("m" + std::to_string(i)));
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 300U);
  EXPECT_EQ(records[299].body, "m299");
}

TEST_F(S2Asio, AFencedStreamFailsAProducerWithAnotherTokenDefinite) {  // E3
  auto fence_options = options();
  fence_options.producer.protocol.record_format = prodsm::S2Policy::RecordFormat::framed;
  auto fencer = make(fence_options);
  ASSERT_TRUE(fencer.submit(s2::fence_record("new-owner").value()));
  ASSERT_TRUE(fencer.async_close(::asio::use_future).get());

  auto o = options();
  o.producer.protocol.fencing_token = "old-owner";
  auto p = make(o);
  auto r = p.async_submit("late", ::asio::use_future).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_NE(r.error().message.find("new-owner"), std::string::npos) << r.error().message;
  EXPECT_FALSE(p.async_close(::asio::use_future).get());  // E1: the close carries the error
  EXPECT_EQ(stream_records().size(), 1U);                 // only the fence
}

TEST_F(S2Asio, AMatchSeqNumMismatchFailsDefiniteWithTheTail) {  // E3
  auto first = make(options());
  for (const char* r : {"a", "b", "c"}) ASSERT_TRUE(first.submit(r));
  ASSERT_TRUE(first.async_close(::asio::use_future).get());

  auto o = options();
  o.producer.protocol.match_seq_num = 0;  // stale: the tail is 3
  auto p = make(o);
  auto r = p.async_submit("d", ::asio::use_future).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_EQ(r.error().expected_seq, 3U);
  EXPECT_EQ(stream_records().size(), 3U);
}

TEST_F(S2Asio, ANoSideEffectErrorIsRetriedAndTheRecordLandsOnce) {  // E2, E4
  faults(R"([{"kind":"error_before_commit","stream":")" + stream_ +
         R"(","status":429,"code":"rate_limited","retry_after_ms":20}])");
  auto o = options();                         // no match_seq_num: only definite failures are retried
  std::vector<prodsm::ProducerEvent> events;  // the hook runs on the callback strand, in order
  o.events.on_event = [&events](const prodsm::ProducerEvent& e) { events.push_back(e); };
  auto p = make(o);
  auto r = p.async_submit("once", ::asio::use_future).get();
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->seq_num(), 0U);
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  EXPECT_EQ(p.stats().core.retries, 1U);
  // The retry's event ran before the record's completion (posted before it, same strand).
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].kind, prodsm::EventKind::retry);
  ASSERT_TRUE(events[0].cause.has_value());
  EXPECT_EQ(events[0].cause->http_status, 429);
  EXPECT_EQ(p.stats().submit_to_ack.count, 1U);
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].body, "once");
}

TEST_F(S2Asio, AMaybeAppliedErrorWithoutMatchSeqNumFailsIndefinite) {  // E4
  faults(R"([{"kind":"error_after_commit","stream":")" + stream_ + R"("}])");
  auto p = make(options());
  auto r = p.async_submit("maybe", ::asio::use_future).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().certainty, Certainty::indefinite);
  EXPECT_EQ(p.stats().core.retries, 0U);   // not resent: it could have appended twice
  EXPECT_EQ(stream_records().size(), 1U);  // it was in fact appended
  EXPECT_EQ(p.stats().submit_to_ack.count, 0U) << "a failed record is not acknowledged";
}

TEST_F(S2Asio, ADroppedConnectionBeforeCommitWithMatchSeqNumIsResentAndLandsOnce) {  // E4
  faults(R"([{"kind":"drop_before_commit","stream":")" + stream_ + R"("}])");
  auto o = options();
  o.producer.protocol.match_seq_num = 0;
  auto p = make(o);
  auto r = p.async_submit("resent", ::asio::use_future).get();
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->seq_num(), 0U);
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  EXPECT_GE(p.stats().core.retries, 1U);
  ASSERT_EQ(stream_records().size(), 1U);
}

TEST_F(S2Asio, AnAppliedBatchWhoseAckWasLostMeetsItsConditionIndefinite) {  // E3 after an ambiguous resend
  faults(R"([{"kind":"drop_after_commit","stream":")" + stream_ + R"("}])");
  auto o = options();
  o.producer.protocol.match_seq_num = 0;
  auto p = make(o);
  auto r = p.async_submit("applied", ::asio::use_future).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(r.error().certainty, Certainty::indefinite);
  ASSERT_EQ(stream_records().size(), 1U);  // appended exactly once, never twice
}

TEST_F(S2Asio, ProducesOverHttpsAndRefusesAnUntrustedServerDefinite) {  // S2's cloud is https only; E2
  const std::string& certs = test::tls_certs();
  ASSERT_FALSE(certs.empty());
  test::NodeServer proxy("tls-proxy.mjs", {"--cert", certs + "/server.pem", "--key", certs + "/server.key", "--target",
                                           "127.0.0.1:" + std::to_string(server().endpoint().port)});
  ASSERT_FALSE(proxy.url().empty()) << proxy.error();
  auto o = options();
  o.endpoint = s2::Endpoint::custom(proxy.url(), test::S2TestServer::kBasin).value();
  ASSERT_TRUE(o.endpoint.tls);
  o.session.tls.ca_file = certs + "/ca.pem";
  auto p = make(o);
  auto r = p.async_submit("over-tls", ::asio::use_future).get();
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].body, "over-tls");

  auto untrusted = options();
  untrusted.endpoint = o.endpoint;  // the system trust store does not know the test CA
  auto q = make(untrusted);
  auto refused = q.async_submit("never", ::asio::use_future).get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::tls_failed);
  EXPECT_EQ(refused.error().certainty, Certainty::definite);
  EXPECT_EQ(stream_records().size(), 1U);
}

TEST_F(S2Asio, InvalidOptionsAreRefusedNamingTheField) {  // B3
  auto o = options();
  o.producer.max_in_flight = 3;  // without match_seq_num
  auto p = asio::S2Producer::create(io_.io.get_executor(), o);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().rfind("producer.max_in_flight:", 0), 0U) << p.error();
}

// Attached, the session's own transport counts (B3, E4): pooled connections cannot carry
// more than one append in flight, and stall detection must be off with match_seq_num; the
// control session (pipelined, stall off) takes such a producer, and it appends.
TEST_F(S2Asio, AttachChecksTheSessionsTransport) {  // B3, E4
  auto o = options();
  o.producer.protocol.match_seq_num = 0;
  o.producer.max_in_flight = 3;
  asio::SessionOptions pooled;
  pooled.mode = prodsm::http::ConnectionMode::pool;
  pooled.stall.enabled = false;
  auto pool_session =
      asio::Session::create(io_.io.get_executor(), "127.0.0.1", server().endpoint().port, pooled).value();
  auto refused = asio::S2Producer::attach(pool_session, o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rfind("producer.max_in_flight:", 0), 0U) << refused.error();
  auto stalling = asio::Session::create(io_.io.get_executor(), "127.0.0.1", server().endpoint().port).value();
  o.producer.max_in_flight = 1;
  auto refused_stall = asio::S2Producer::attach(stalling, o);
  ASSERT_FALSE(refused_stall);
  EXPECT_EQ(refused_stall.error().rfind("session.stall.enabled:", 0), 0U) << refused_stall.error();
  auto attached = asio::S2Producer::attach(control_, o);
  ASSERT_TRUE(attached) << attached.error();
  ASSERT_TRUE(attached->submit("attached").has_value());
  auto flushed = attached->async_flush(::asio::use_future).get();
  EXPECT_TRUE(flushed) << flushed.error().describe();
  (void)attached->async_close(::asio::use_future).get();
  pool_session->close();
  stalling->close();
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 1U);
}

// R1 (the same operation as asio::Producer's): async_submit waits for capacity and then
// completes when durable; a wait past submit_timeout_ns fails with would_block; a
// cancelled wait fails with cancelled; nothing waiting is lost or reordered (P1).
TEST_F(S2Asio, AsyncSubmitWaitsForCapacityTimesOutAndCancels) {
  auto o = options();
  o.producer.max_batch_bytes = 32;  // one 18-byte metered record (8 + 10) per batch
  o.producer.max_unacked_bytes = 32;
  o.producer.linger = prodsm::Linger::after(0ms);
  auto p = make(o);
  std::vector<std::future<asio::S2RecordResult>> futures;
  for (int i = 0; i < 20; ++i)
    futures.push_back(p.async_submit("record-" + std::to_string(100 + i), ::asio::use_future));
  for (std::uint64_t i = 0; i < futures.size(); ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->seq_num(), i);  // FIFO behind the capacity wait (P1)
  }
  EXPECT_GT(p.stats().capacity_waits, 0U);

  // Hold the next append for 1.5 s so capacity stays taken, then time out and cancel.
  faults(R"([{"kind":"delay","delay_ms":1500,"stream":")" + stream_ + R"("}])");
  auto slow_options = o;
  slow_options.submit_timeout_ns = 200ms;
  auto slow = make(slow_options);
  auto first = slow.async_submit("record-held", ::asio::use_future);
  auto timed_out = slow.async_submit("record-late", ::asio::use_future).get();
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, ErrorCode::would_block);
  ::asio::cancellation_signal signal;
  std::promise<asio::S2RecordResult> cancelled;
  slow.async_submit("record-gone", ::asio::bind_cancellation_slot(signal.slot(), [&](asio::S2RecordResult r) {
                      cancelled.set_value(std::move(r));
                    }));
  ::asio::post(io_.io, [&] { signal.emit(::asio::cancellation_type::all); });
  auto c = cancelled.get_future().get();
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::cancelled);
  EXPECT_TRUE(first.get());
  ASSERT_TRUE(slow.async_close(::asio::use_future).get());
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 21U);  // the 20, then the held one; the refused two never
  EXPECT_EQ(records.back().body, "record-held");
}

// Submit, then acknowledgement on S2 (P2, P4): async_submit_ticket completes at
// acceptance; each ticket's async_wait gives its seq_num, in ticket order.
TEST_F(S2Asio, SubmitTicketThenAwaitTheAcknowledgement) {
  auto p = make(options());
  std::vector<asio::S2RecordTicket> tickets;
  for (int i = 0; i < 200; ++i) {
    auto t = p.async_submit_ticket("t" + std::to_string(i), ::asio::use_future).get();
    ASSERT_TRUE(t) << t.error().describe();
    tickets.push_back(*t);
  }
  for (std::uint64_t i = 0; i < tickets.size(); ++i) {
    auto r = tickets[i].async_wait(::asio::use_future).get();
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r->seq_num(), i);
    EXPECT_EQ(tickets[i].id().value, i);
  }
  ASSERT_TRUE(p.async_close(::asio::use_future).get());
  EXPECT_EQ(stream_records().size(), 200U);
}

}  // namespace
