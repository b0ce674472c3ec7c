// SPDX-License-Identifier: Apache-2.0
// Issue 22 (suspicious servers refused), S7, E5: the acknowledgement headers a sequenced
// append's 200/204 echoes (Producer-Epoch, Producer-Seq; PROTOCOL.md 5.2.1) are checked
// against what the request sent; a contradiction is protocol_error, indefinite — on
// recorded responses of the reference server and on hand-built ones.
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

void expect_echo_error(const tl::expected<DurableStreamsPolicy::Ack, Error>& a, std::string_view names) {
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code, ErrorCode::protocol_error);
  EXPECT_EQ(a.error().certainty, Certainty::indefinite);
  EXPECT_FALSE(a.error().retryable);
  EXPECT_NE(a.error().message.find(names), std::string::npos) << a.error().message;
}

TEST(EchoCheck, RecordedAcknowledgementsMatchWhatWasSent) {
  // append_producer_200 answered (epoch 0, seq 0); append_producer_epoch1_seq0_200 (1, 0).
  EXPECT_TRUE(ds::classify_append(parse_capture("append_producer_200"), ProducerStamp{0, 0}).has_value());
  EXPECT_TRUE(ds::classify_append(parse_capture("append_producer_epoch1_seq0_200"), ProducerStamp{1, 0}).has_value());
  // A duplicate's Producer-Seq is the highest accepted: at least the one sent.
  auto dup = ds::classify_append(parse_capture("append_producer_old_dup_204"), ProducerStamp{0, 0});
  ASSERT_TRUE(dup.has_value());
  EXPECT_TRUE(dup->duplicate);
}

TEST(EchoCheck, A200ForAnotherSeqIsAProtocolError) {
  expect_echo_error(ds::classify_append(parse_capture("append_producer_200"), ProducerStamp{0, 1}),
                    "Producer-Seq 0 is not the request's seq 1");
  expect_echo_error(ds::classify_append(parse_capture("append_producer_seq1_200"), ProducerStamp{0, 0}),
                    "Producer-Seq 1 is not the request's seq 0");
}

TEST(EchoCheck, AnotherEpochIsAProtocolErrorOn200And204) {
  expect_echo_error(ds::classify_append(parse_capture("append_producer_epoch1_seq0_200"), ProducerStamp{0, 0}),
                    "Producer-Epoch 1 is not the request's epoch 0");
  expect_echo_error(ds::classify_append(parse_capture("append_producer_duplicate_204"), ProducerStamp{3, 0}),
                    "Producer-Epoch 0 is not the request's epoch 3");
}

TEST(EchoCheck, ADuplicateOfASeqNeverAcceptedIsAProtocolError) {
  // 204 "duplicate" of seq 5 while the server says its highest accepted seq is 0.
  expect_echo_error(ds::classify_append(parse_capture("append_producer_duplicate_204"), ProducerStamp{0, 5}),
                    "Producer-Seq 0 is below the request's seq 5");
}

TEST(EchoCheck, AbsentEchoHeadersAreNotChecked) {
  auto ok = ds::classify_append(resp(200, {{"Stream-Next-Offset", "o"}}), ProducerStamp{9, 9});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->next_offset, "o");
  EXPECT_TRUE(ds::classify_append(resp(204, {}), ProducerStamp{9, 9}).has_value());
}

TEST(EchoCheck, AMalformedEchoIsAProtocolError) {
  expect_echo_error(
      ds::classify_append(resp(200, {{"Stream-Next-Offset", "o"}, {"Producer-Seq", "0x1"}}), ProducerStamp{0, 1}),
      "Producer-Seq: not a decimal number");
  expect_echo_error(ds::classify_append(resp(204, {{"Producer-Epoch", "-1"}}), ProducerStamp{0, 1}),
                    "Producer-Epoch: not a decimal number");
}

TEST(EchoCheck, PlainAppendsIgnoreProducerHeaders) {
  EXPECT_TRUE(ds::classify_append(resp(204, {{"Stream-Next-Offset", "o"}, {"Producer-Seq", "garbage"}}), std::nullopt)
                  .has_value());
}

TEST(EchoCheck, ASequencedCloseIsCheckedToo) {
  EXPECT_TRUE(ds::classify_close(parse_capture("close_only_with_producer_retry_204"), ProducerStamp{0, 0}).has_value());
  auto wrong_epoch = ds::classify_close(parse_capture("close_only_with_producer_retry_204"), ProducerStamp{2, 0});
  ASSERT_FALSE(wrong_epoch.has_value());
  EXPECT_EQ(wrong_epoch.error().code, ErrorCode::protocol_error);
  auto seq_below = ds::classify_close(parse_capture("close_only_with_producer_retry_204"), ProducerStamp{0, 4});
  ASSERT_FALSE(seq_below.has_value());
  EXPECT_NE(seq_below.error().message.find("below the request's seq 4"), std::string::npos);
}

}  // namespace
}  // namespace prodsm::ds::test
