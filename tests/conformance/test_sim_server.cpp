// SPDX-License-Identifier: Apache-2.0
// The simulated server's S2 session model: a failure kills the append session, so the
// session's other in-flight appends fail with it, in send order (docs/conformance.md).
#include <gtest/gtest.h>

#include "sim_server.hpp"

namespace prodsm::conformance {
namespace {

Observation send_on(std::size_t index, std::optional<std::uint64_t> session) {
  Observation o;
  o.kind = Observation::Kind::send;
  o.send_index = index;
  o.batch = index;
  o.attempt = 1;
  o.first_ticket = index;
  o.count = 1;
  o.body = "x";
  o.stamp.sequenced = true;
  o.stamp.match_seq_num = index;
  o.session = session;
  return o;
}

TraceConfig s2_config() {
  TraceConfig c;
  c.protocol = Protocol::s2;
  return c;
}

TEST(SimServer, AnS2FailureFailsTheRestOfItsSessionInSendOrder) {
  detail::SimServer server(s2_config());
  server.sent(send_on(0, 0));
  server.sent(send_on(1, 0));
  server.sent(send_on(2, 1));  // already on a newer session
  server.sent(send_on(3, 0));
  const Command fail = Command::fail_with(ErrorCode::connection_lost);
  auto first = server.answer(fail);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->first.index, 0U);
  const auto rest = server.fail_rest_of_session(fail, first->first);
  ASSERT_EQ(rest.size(), 2U);
  EXPECT_EQ(rest[0].first.index, 1U);
  EXPECT_EQ(rest[1].first.index, 3U);
  for (const auto& [sent, response] : rest) {
    EXPECT_EQ(response.kind, Response::Kind::fail);
    EXPECT_EQ(response.error.code, ErrorCode::connection_lost);
  }
  EXPECT_EQ(server.unanswered(), 1U) << "only the other session's send is left";
  server.unanswer(rest[1].first);
  server.unanswer(rest[0].first);
  EXPECT_EQ(server.unanswered(), 3U) << "a refused delivery puts them back";
}

TEST(SimServer, OnlyS2FailuresOfAReportedSessionCascade) {
  {  // an ack kills nothing
    detail::SimServer server(s2_config());
    server.sent(send_on(0, 0));
    server.sent(send_on(1, 0));
    const Command ack = Command::of(Command::Kind::ack);
    auto first = server.answer(ack);
    ASSERT_TRUE(first.has_value());
    EXPECT_TRUE(server.fail_rest_of_session(ack, first->first).empty());
  }
  {  // no session reported (prodsm's core, or a driver that does not say)
    detail::SimServer server(s2_config());
    server.sent(send_on(0, std::nullopt));
    server.sent(send_on(1, std::nullopt));
    const Command fail = Command::fail_with(ErrorCode::unavailable);
    auto first = server.answer(fail);
    ASSERT_TRUE(first.has_value());
    EXPECT_TRUE(server.fail_rest_of_session(fail, first->first).empty());
    EXPECT_EQ(server.unanswered(), 1U);
  }
  {  // Durable Streams requests are independent
    TraceConfig c;
    c.protocol = Protocol::durable_streams;
    detail::SimServer server(c);
    server.sent(send_on(0, 0));
    server.sent(send_on(1, 0));
    const Command fail = Command::fail_with(ErrorCode::unavailable);
    auto first = server.answer(fail);
    ASSERT_TRUE(first.has_value());
    EXPECT_TRUE(server.fail_rest_of_session(fail, first->first).empty());
  }
}

}  // namespace
}  // namespace prodsm::conformance
