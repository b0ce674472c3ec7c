// SPDX-License-Identifier: Apache-2.0
// blocking::S2Producer end to end against the S2 test server (tests/s2-server/server.mjs):
// the same producer API as blocking::Producer — tickets, callbacks in ticket order (A1),
// flush after the callbacks (A2) — with records landing exactly once in order (P2–P4),
// E3 condition failures definite, and scripted faults classified by S2's table (E2, E4).
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "io_thread.hpp"
#include "prodsm/blocking/s2_producer.hpp"
#include "prodsm/s2/records.hpp"
#include "s2_test_server.hpp"

namespace {

using namespace std::chrono_literals;
using prodsm::Certainty;
using prodsm::ErrorCode;
namespace blocking = prodsm::blocking;
namespace s2 = prodsm::s2;
namespace test = prodsm::test;

class S2Blocking : public ::testing::Test {
 protected:
  static test::S2TestServer& server() {
    static test::S2TestServer s;
    return s;
  }
  void SetUp() override {
    ASSERT_FALSE(server().url().empty()) << server().error();
    prodsm::asio::SessionOptions o;
    o.stall.enabled = false;
    auto session = prodsm::asio::Session::create(io_.io.get_executor(), "127.0.0.1", server().endpoint().port, o);
    ASSERT_TRUE(session) << session.error();
    control_ = *session;
    stream_ = server().stream_name("s2-blocking");
    auto created = test::create_s2_stream(control_, server().endpoint(), stream_);
    ASSERT_TRUE(created) << created.error();
  }
  void TearDown() override {
    if (control_) control_->close();
  }
  blocking::S2ProducerOptions options() const {
    blocking::S2ProducerOptions o;
    o.endpoint = server().endpoint();
    o.stream = stream_;
    o.producer.linger = prodsm::Linger::after(1ms);
    o.producer.max_batch_records = 40;
    o.producer.retry.backoff_initial_ns = 1ms;
    return o;
  }
  blocking::S2Producer make(const blocking::S2ProducerOptions& o) {
    auto p = blocking::S2Producer::create(o);
    EXPECT_TRUE(p) << p.error();
    return std::move(p).value();
  }
  std::vector<s2::SequencedRecord> stream_records() {
    auto r = test::read_s2_stream(control_, server().endpoint(), stream_);
    EXPECT_TRUE(r) << r.error();
    return r.value_or(std::vector<s2::SequencedRecord>{});
  }

  test::IoThread io_;
  std::shared_ptr<prodsm::asio::Session> control_;
  std::string stream_;
};

TEST_F(S2Blocking, RecordsLandExactlyOnceInOrderAndCallbacksRunInTicketOrder) {  // P2, P3, P4, A1, A2
  auto p = make(options());
  constexpr std::uint64_t kRecords = 500;
  std::mutex mu;
  std::vector<std::uint64_t> seq_nums;
  std::vector<blocking::S2RecordTicket> tickets;
  for (std::uint64_t i = 0; i < kRecords; ++i) {
    auto t = p.submit("b" + std::to_string(i), [&](const blocking::S2RecordResult& r) {
      std::lock_guard lock(mu);
      seq_nums.push_back(r ? r->seq_num() : ~0ULL);
    });
    ASSERT_TRUE(t) << t.error().detail;
    tickets.push_back(*t);
  }
  ASSERT_TRUE(p.flush());
  {
    std::lock_guard lock(mu);  // A2: every covered callback ran before flush returned
    ASSERT_EQ(seq_nums.size(), kRecords);
    for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(seq_nums[i], i);
  }
  const auto last = tickets.back().wait();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->seq_num(), kRecords - 1);
  ASSERT_TRUE(p.close());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), kRecords);
  for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(records[i].body, "b" + std::to_string(i));
}

TEST_F(S2Blocking, AFenceAndAMatchSeqNumMismatchFailDefinite) {  // E3
  auto fence_options = options();
  fence_options.producer.protocol.record_format = prodsm::S2Policy::RecordFormat::framed;
  auto fencer = make(fence_options);
  ASSERT_TRUE(fencer.submit(s2::fence_record("blocking-owner").value()));
  ASSERT_TRUE(fencer.close());

  auto fenced_options = options();
  fenced_options.producer.protocol.fencing_token = "someone-else";
  auto fenced = make(fenced_options);
  auto t = fenced.submit("x");
  ASSERT_TRUE(t);
  auto r = t->wait();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_NE(r.error().message.find("blocking-owner"), std::string::npos) << r.error().message;
  EXPECT_FALSE(fenced.close());  // E1

  auto stale_options = options();
  stale_options.producer.protocol.match_seq_num = 0;  // the fence took seq_num 0
  stale_options.producer.protocol.fencing_token = "blocking-owner";
  auto stale = make(stale_options);
  auto s = stale.submit("y");
  ASSERT_TRUE(s);
  auto sr = s->wait();
  ASSERT_FALSE(sr);
  EXPECT_EQ(sr.error().code, ErrorCode::condition_failed);
  EXPECT_EQ(sr.error().expected_seq, 1U);
  EXPECT_EQ(stream_records().size(), 1U);
}

TEST_F(S2Blocking, FaultsAreRetriedOnlyWhereSafe) {  // E2, E4
  auto fault = [&](const std::string& f) {
    ASSERT_TRUE(test::inject_s2_faults(control_, server().endpoint(), "[" + f + "]"));
  };
  auto p = make(options());
  fault(R"({"kind":"error_before_commit","stream":")" + stream_ + R"(","status":502,"code":"hot_server"})");
  auto first = p.submit("retried");  // hot_server: no side effect, retried (definite)
  ASSERT_TRUE(first);
  const auto ok = first->wait();
  ASSERT_TRUE(ok) << ok.error().describe();
  EXPECT_EQ(p.stats().core.retries, 1U);
  fault(R"({"kind":"error_after_commit","stream":")" + stream_ + R"("})");
  auto second = p.submit("maybe");  // 500 after commit: maybe applied, not resent without match_seq_num
  ASSERT_TRUE(second);
  const auto r = second->wait();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().certainty, Certainty::indefinite);
  EXPECT_EQ(p.stats().core.retries, 1U);
  EXPECT_FALSE(p.close());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 2U);  // each once
  EXPECT_EQ(records[0].body, "retried");
  EXPECT_EQ(records[1].body, "maybe");
}

// A header provider's headers follow S2's rules on an S2 request (http::Request::
// header_rule = s2::check_provided_header), not Durable Streams': a name the S2 codec
// manages fails the attempt definite (nothing sent) with header_provider_failed; a
// per-request Authorization (no access token set) and other names are sent.
TEST_F(S2Blocking, HeaderProviderHeadersFollowS2sRules) {
  for (const char* name : {"Content-Encoding", "s2-format"}) {
    auto o = options();
    o.producer.retry.max_attempts = 1;
    o.header_provider =
        [name](const prodsm::http::RequestInfo&) -> tl::expected<prodsm::http::RequestFields, std::string> {
      prodsm::http::RequestFields f;
      f.headers.push_back({name, "x"});
      return f;
    };
    auto p = make(o);
    auto t = p.submit("never");
    ASSERT_TRUE(t);
    const auto r = t->wait();
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().code, ErrorCode::header_provider_failed) << name;
    EXPECT_EQ(r.error().certainty, Certainty::definite) << name;
    EXPECT_NE(r.error().message.find("is managed by the codec"), std::string::npos) << r.error().message;
  }
  auto o = options();
  o.header_provider = [](const prodsm::http::RequestInfo&) -> tl::expected<prodsm::http::RequestFields, std::string> {
    prodsm::http::RequestFields f;
    f.headers.push_back({"Authorization", "Bearer per-request"});
    f.headers.push_back({"X-Trace", "1"});
    return f;
  };
  auto p = make(o);
  auto t = p.submit("sent");
  ASSERT_TRUE(t);
  const auto r = t->wait();
  EXPECT_TRUE(r) << r.error().describe();
  EXPECT_TRUE(p.close());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].body, "sent");
}

TEST_F(S2Blocking, SubmitAndFlushAfterCloseFailWithClosed) {  // C1, C2
  auto p = make(options());
  ASSERT_TRUE(p.submit("only"));
  ASSERT_TRUE(p.close());
  ASSERT_TRUE(p.close());  // the same result
  auto late = p.submit("late");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().reason, prodsm::RejectReason::closed);
  EXPECT_EQ(stream_records().size(), 1U);
}

// P1, P2, R3: submit_many on the S2 producer — the same implementation as the Durable
// Streams one — lands records once, in order, at consecutive seq_nums; gauges drain.
TEST_F(S2Blocking, SubmitManyLandsInOrderAndTheGaugesDrain) {
  auto p = make(options());
  std::vector<std::string> bodies;
  for (int i = 0; i < 600; ++i) bodies.push_back("m" + std::to_string(i));
  std::size_t next = 0;
  while (next < bodies.size()) {
    const std::size_t n = std::min<std::size_t>(25, bodies.size() - next);
    std::vector<std::string_view> views(bodies.begin() + static_cast<std::ptrdiff_t>(next),
                                        bodies.begin() + static_cast<std::ptrdiff_t>(next + n));
    auto r = p.submit_many(views);
    ASSERT_GT(r.accepted, 0U) << (r.refused ? r.refused->describe() : "");
    EXPECT_EQ(r.first.value, next);  // contiguous tickets (P2)
    next += r.accepted;
  }
  ASSERT_TRUE(p.flush());
  const auto drained = p.stats();
  EXPECT_EQ(drained.pending_records, 0U);
  EXPECT_EQ(drained.unacked_bytes, 0U);
  EXPECT_EQ(drained.core.records_succeeded, bodies.size());
  ASSERT_TRUE(p.close());
  const auto records = stream_records();
  ASSERT_EQ(records.size(), bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_EQ(records[i].seq_num, i);
    ASSERT_EQ(records[i].body, bodies[i]);
  }
}

}  // namespace
