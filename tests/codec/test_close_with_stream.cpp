// SPDX-License-Identifier: Apache-2.0
// ds::ProducerClient::close_with_stream's final record, no network (C1, S6, B4): checked
// like a submit, its size too, before anything is closed; a later call is a retry of the
// same close, whatever final record it gives (the cross-SDK client suite's
// close-with-body-retry-different-body): the first call's result, nothing sent again.
#include <gtest/gtest.h>

#include "codec_support.hpp"

#include <optional>
#include <string>

#include "prodsm/ds/client.hpp"

namespace prodsm::ds::test {
namespace {

ProducerClient closing_client(bool json = false) {
  ProducerOptions o;
  o.url = "http://127.0.0.1:4437/s";
  o.producer.protocol.idempotent = {{"p", 7, false}};
  o.start = ProducerStart::given_epoch;
  o.producer.max_batch_bytes = 1000;
  if (json) {
    o.content_type = "application/json";
    o.producer.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  }
  return ProducerClient::create(o, std::chrono::system_clock::time_point{}).value();
}

/// The result of every StreamCloseCompleted event of `op` so far.
std::vector<CloseStreamResult> close_results(ProducerClient& c, std::uint64_t op) {
  std::vector<CloseStreamResult> out;
  while (auto e = c.poll_event()) {
    if (auto* done = std::get_if<StreamCloseCompleted>(&*e); done && done->op == op) out.push_back(done->result);
  }
  return out;
}

http::Response close_answer(std::uint64_t seq) {
  http::Response r;
  r.status = 204;
  r.headers = {{"Stream-Next-Offset", "42"},
               {"Stream-Closed", "true"},
               {"Producer-Epoch", "7"},
               {"Producer-Seq", std::to_string(seq)}};
  return r;
}

// B4: a final record larger than max_batch_bytes is refused as a submit's is (a proxy's
// body limit would refuse the close otherwise), and the producer is not closed by it.
TEST(B4, AFinalRecordOverMaxBatchBytesIsRefusedAndClosesNothing) {
  for (const bool json : {false, true}) {
    ProducerClient c = closing_client(json);
    // JSON mode frames the record `[record]`: 998 bytes fit exactly, 999 do not.
    const std::string fits = json ? "\"" + std::string(996, 'x') + "\"" : std::string(1000, 'x');
    const std::string over = json ? "\"" + std::string(997, 'x') + "\"" : std::string(1001, 'x');
    EXPECT_FALSE(c.submit(kT0, over).has_value()) << "a submit refuses it too";
    auto refused = c.close_with_stream(kT0, over);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_record);
    EXPECT_NE(refused.error().message.find("final record exceeds max_batch_bytes"), std::string::npos)
        << refused.error().describe();
    EXPECT_FALSE(c.poll_request()) << "nothing is sent";
    EXPECT_TRUE(c.submit(kT0, json ? "1" : "a").has_value()) << "the producer is still open (C2 does not apply)";
    auto op = c.close_with_stream(kT0, fits);
    ASSERT_TRUE(op.has_value()) << op.error().describe();
  }
}

// C1, S6: a later call is a retry of the same sequenced close, as a resend of it is to the
// server (which deduplicates it to the first body): while the first runs it is the same
// op, afterwards a new op with the same result; no second request goes out, so its own
// final record is not appended.
TEST(S6, ALaterCloseIsARetryOfTheFirstWhateverItsFinalRecord) {
  ProducerClient c = closing_client();
  const auto op = c.close_with_stream(kT0, std::string("final1"));
  ASSERT_TRUE(op.has_value());
  auto request = c.poll_request();
  ASSERT_TRUE(request);
  EXPECT_NE(request->request.bytes.find("final1"), std::string::npos);

  EXPECT_EQ(c.close_with_stream(kT0, std::string("final2")), op) << "another record: the same close";
  EXPECT_EQ(c.close_with_stream(kT0, std::string("final1")), op);
  EXPECT_EQ(c.close_with_stream(kT0, std::nullopt), op);
  EXPECT_FALSE(c.poll_request()) << "one request for all of them";

  c.handle_outcome(kT0, request->tag, close_answer(0));
  const auto first = close_results(c, *op);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_TRUE(first[0]) << first[0].error().describe();

  const auto again = c.close_with_stream(kT0, std::string("final3"));
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(*again, *op) << "a new op, completed at once";
  EXPECT_FALSE(c.poll_request()) << "final3 is not sent";
  const auto same = close_results(c, *again);
  ASSERT_EQ(same.size(), 1U);
  ASSERT_TRUE(same[0]);
  EXPECT_EQ(same[0]->final_offset, first[0]->final_offset);
}

}  // namespace
}  // namespace prodsm::ds::test
