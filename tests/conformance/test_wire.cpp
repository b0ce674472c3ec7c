// SPDX-License-Identifier: Apache-2.0
// The wire targets' two halves: the harness's receiving HTTP/1.1 server (wire_server.hpp:
// requests held until answered, answers written in each connection's request order,
// resets) and the reading of a Durable Streams producer's batches off the wire
// (wire_sends.hpp: which records a request carries, resends, stamps, stream closes).
// Real loopback sockets; every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "wire_sends.hpp"
#include "wire_server.hpp"

namespace prodsm::conformance {
namespace {

using namespace std::chrono_literals;
using detail::WireRequest;
using detail::WireSends;
using detail::WireServer;

/// A blocking client socket to the server.
class Client {
 public:
  explicit Client(std::uint16_t port) : fd_{::socket(AF_INET, SOCK_STREAM, 0)} {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(const std::string& bytes) const {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
  /// Everything that arrives within `wait` (or until EOF / error); `error` gets errno of a failed read.
  std::string read_for(std::chrono::milliseconds wait, int* error = nullptr) const {
    std::string out;
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && error) *error = errno;
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
         "\r\n" + body;
}

std::string ok(const std::string& body) {
  http::Response r;
  r.status = 200;
  r.body = body;
  return detail::http_response_bytes(r);
}

TEST(WireServer, PipelinedRequestsAreHeldAndAnsweredInTheirConnectionsOrder) {
  auto server = WireServer::start();
  ASSERT_TRUE(server.has_value()) << server.error();
  Client c((*server)->port());
  ASSERT_TRUE(c.connected());
  c.send(post("/s", "first", "Producer-Seq: 0\r\n") + post("/s", "second"));
  const auto until = std::chrono::steady_clock::now() + 5s;
  auto a = (*server)->take(until);
  auto b = (*server)->take(until);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->body, "first");
  EXPECT_EQ(a->header("producer-seq"), std::optional<std::string_view>{"0"}) << "names compare case-insensitively";
  EXPECT_EQ(b->body, "second");
  EXPECT_EQ(a->connection, b->connection);
  EXPECT_LT(a->id, b->id);
  EXPECT_EQ((*server)->arrived(), 2U);
  // The second answer waits for the first: HTTP/1.1 answers a connection in order.
  ASSERT_TRUE((*server)->respond(b->id, ok("B")));
  EXPECT_EQ(c.read_for(50ms), "") << "nothing before the first request's answer";
  ASSERT_TRUE((*server)->respond(a->id, ok("A")));
  EXPECT_EQ(c.read_for(200ms), ok("A") + ok("B"));
  EXPECT_FALSE((*server)->respond(a->id, ok("again"))) << "answered once";
}

TEST(WireServer, AResetKillsTheConnectionAndEveryRequestOnIt) {
  auto server = WireServer::start();
  ASSERT_TRUE(server.has_value()) << server.error();
  Client c((*server)->port());
  c.send(post("/s", "x") + post("/s", "y"));
  const auto until = std::chrono::steady_clock::now() + 5s;
  auto a = (*server)->take(until);
  auto b = (*server)->take(until);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*server)->reset(a->id));
  int error = 0;
  EXPECT_EQ(c.read_for(500ms, &error), "");
  EXPECT_EQ(error, ECONNRESET) << "a reset, not an orderly close";
  EXPECT_FALSE((*server)->respond(b->id, ok("late"))) << "its connection is gone";
  EXPECT_EQ((*server)->open_connections(), 0U);
}

TEST(WireServer, AMalformedRequestIsCountedAndItsConnectionClosed) {
  auto server = WireServer::start();
  ASSERT_TRUE(server.has_value()) << server.error();
  Client c((*server)->port());
  c.send("NOT A REQUEST\r\n\r\n");
  EXPECT_EQ(c.read_for(500ms), "");
  EXPECT_EQ((*server)->stats().malformed_requests, 1U);
  EXPECT_FALSE((*server)->stats().last_malformed.empty());
  EXPECT_FALSE((*server)->take(std::chrono::steady_clock::now() + 10ms).has_value());
}

TEST(WireServer, AResponseBytesCarryTheLengthExceptWhereNoBodyIsAllowed) {
  http::Response r;
  r.status = 204;
  r.headers = {{"Producer-Seq", "3"}};
  EXPECT_EQ(detail::http_response_bytes(r), "HTTP/1.1 204 No Content\r\nProducer-Seq: 3\r\n\r\n");
  r.status = 503;
  r.body = "busy";
  EXPECT_EQ(detail::http_response_bytes(r),
            "HTTP/1.1 503 Service Unavailable\r\nProducer-Seq: 3\r\nContent-Length: 4\r\n\r\nbusy");
}

WireRequest request(std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  WireRequest r;
  r.method = "POST";
  r.target = "/conformance/1";
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

TraceConfig config(bool json_bodies = false) {
  TraceConfig c;
  c.json = json_bodies;
  return c;
}

TEST(WireSends, ABodyIsTheConsecutiveRecordsItFrames) {
  WireSends w(config());
  for (const char* r : {"ab", "c", "de"}) w.accepted(r);
  auto first = w.decode(request("abc"), 0, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->kind, Observation::Kind::send);
  EXPECT_EQ(first->first_ticket, 0U);
  EXPECT_EQ(first->count, 2U);
  EXPECT_EQ(first->attempt, 1U);
  EXPECT_FALSE(first->stamp.sequenced);
  auto second = w.decode(request("de"), 1, 0);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->first_ticket, 2U);
  EXPECT_EQ(second->count, 1U);
  EXPECT_NE(second->batch, first->batch);
}

TEST(WireSends, JsonBodiesAreArraysOfTheRecords) {
  WireSends w(config(true));
  for (const char* r : {"1", "[2]", "{\"a\":3}"}) w.accepted(r);
  auto o = w.decode(request("[1,[2],{\"a\":3}]"), 0, 0);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->count, 3U);
  auto none = WireSends(config(true));
  none.accepted("1");
  EXPECT_EQ(none.decode(request("1"), 0, 0)->count, 0U) << "an unframed body carries no record (B5 names it)";
}

// Empty records cannot be told apart by bytes: of the readings of a body, the one that
// spans no flush barrier (B5) and keeps max_batch_records is taken.
TEST(WireSends, AnAmbiguousBodyIsReadAsTheBatchThatSpansNoBarrier) {
  WireSends w(config());
  w.accepted("ab");
  w.accepted("");
  w.cut();  // a flush after ticket 1
  w.accepted("");
  w.accepted("c");
  auto first = w.decode(request("ab"), 0, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->count, 2U) << "\"ab\" then the empty record before the barrier, not the one after it";
  auto second = w.decode(request("c"), 1, 0);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->first_ticket, 2U);
  EXPECT_EQ(second->count, 2U);
}

// A producer that sends a later batch first (an SDK deferring one behind a claim) is read
// as it is: the later records, then the earlier ones when they come (P3 and S2 judge the order).
TEST(WireSends, ABatchSentAheadOfAnEarlierOneIsFoundAmongTheRecordsNoBatchHolds) {
  WireSends w(config());
  for (const char* r : {"a", "b", "c"}) w.accepted(r);
  auto later = w.decode(request("bc"), 0, 0);
  auto earlier = w.decode(request("a"), 1, 0);
  ASSERT_TRUE(later && earlier);
  EXPECT_EQ(later->first_ticket, 1U);
  EXPECT_EQ(later->count, 2U);
  EXPECT_EQ(earlier->first_ticket, 0U);
  EXPECT_EQ(earlier->count, 1U);
}

// E4: a failed attempt's batch goes out again with the same bytes: the same batch, the
// next attempt. An acknowledged one never does: the same bytes later are a new batch.
TEST(WireSends, AResendFollowsAFailedAnswerANewBatchFollowsAnAck) {
  WireSends w(config());
  for (const char* r : {"x", "x", "x"}) w.accepted(r);
  auto a = w.decode(request("x"), 0, 0);
  w.answered(0, false);
  auto again = w.decode(request("x"), 1, 0);
  ASSERT_TRUE(a && again);
  EXPECT_EQ(again->batch, a->batch);
  EXPECT_EQ(again->attempt, 2U);
  w.answered(1, true);
  auto next = w.decode(request("x"), 2, 0);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->batch, a->batch);
  EXPECT_EQ(next->first_ticket, 1U);
  EXPECT_EQ(next->attempt, 1U);
}

// S2/S5: with the idempotent producer, (epoch, seq) names the batch; a new epoch is a
// claim renumbering the oldest unacknowledged batch first.
TEST(WireSends, StampsNameTheBatchAndANewEpochRenumbersTheOldest) {
  WireSends w(config());
  for (const char* r : {"x", "x"}) w.accepted(r);
  auto stamp = [](int epoch, int seq) {
    return std::vector<std::pair<std::string, std::string>>{
        {"Producer-Id", "p"}, {"Producer-Epoch", std::to_string(epoch)}, {"Producer-Seq", std::to_string(seq)}};
  };
  auto b0 = w.decode(request("x", stamp(0, 0)), 0, 0);
  auto b1 = w.decode(request("x", stamp(0, 1)), 1, 0);
  ASSERT_TRUE(b0 && b1);
  EXPECT_NE(b0->batch, b1->batch) << "same bytes, another seq: another batch";
  EXPECT_TRUE(b1->stamp.sequenced);
  EXPECT_EQ(b1->stamp.seq, 1U);
  w.answered(0, false);  // 403 stale epoch
  w.answered(1, false);
  auto claimed = w.decode(request("x", stamp(1, 0)), 2, 0);
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->batch, b0->batch);
  EXPECT_EQ(claimed->attempt, 2U);
  EXPECT_EQ(claimed->stamp.epoch, 1U);
}

// S5: a claim supersedes the old-epoch attempts still unanswered; the renumbered resend
// is the same batch even while its old attempt waits.
TEST(WireSends, AClaimRenumbersABatchWhoseOldAttemptIsStillUnanswered) {
  WireSends w(config());
  for (const char* r : {"a", "b"}) w.accepted(r);
  auto stamp = [](int epoch, int seq) {
    return std::vector<std::pair<std::string, std::string>>{
        {"Producer-Id", "p"}, {"Producer-Epoch", std::to_string(epoch)}, {"Producer-Seq", std::to_string(seq)}};
  };
  auto b0 = w.decode(request("a", stamp(0, 0)), 0, 0);
  auto b1 = w.decode(request("b", stamp(0, 1)), 1, 0);
  w.answered(0, false);  // 403: the claim; send 1 (batch 1's old attempt) stays unanswered
  auto r0 = w.decode(request("a", stamp(1, 0)), 2, 0);
  auto r1 = w.decode(request("b", stamp(1, 1)), 3, 0);
  ASSERT_TRUE(b0 && b1 && r0 && r1);
  EXPECT_EQ(r0->batch, b0->batch);
  EXPECT_EQ(r1->batch, b1->batch) << "renumbered although its epoch-0 attempt was never answered";
  EXPECT_EQ(r1->attempt, 2U);
  EXPECT_EQ(r1->count, 1U);
}

TEST(WireSends, AStreamCloseRequestBelongsToTheOldestRunningStreamClose) {
  WireSends w(config());
  w.stream_close_started(4);
  auto o = w.decode(request("", {{"Stream-Closed", "true"}}), 0, 7);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->kind, Observation::Kind::stream_close);
  EXPECT_EQ(o->op, 4U);
  EXPECT_EQ(o->stream_close_index, 7U);
  WireRequest get = request("");
  get.method = "GET";
  EXPECT_FALSE(w.decode(get, 0, 0).has_value()) << "not a producer request";
}

}  // namespace
}  // namespace prodsm::conformance
