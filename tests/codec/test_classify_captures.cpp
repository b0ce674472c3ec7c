// SPDX-License-Identifier: Apache-2.0
// S3–S7, E3: every classification, checked on the exact bytes the reference server sent
// (tests/codec/data, recorded from @durable-streams/server 0.3.7).
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

constexpr bool kSequenced = true;
constexpr bool kPlain = false;

Error append_error(std::string_view capture, bool sequenced) {
  auto r = classify_append(parse_capture(capture), sequenced);
  EXPECT_FALSE(r.has_value()) << capture;
  return r ? Error{} : r.error();
}

// ---- append: success (S3, S7) ------------------------------------------------------------

TEST(ClassifyAppendCaptures, S7_Plain204IsAppendedWithNextOffset) {
  for (const char* capture : {"append_plain_204", "append_plain_second_204", "append_json_array_204",
                              "append_chunked_request_204", "append_content_type_with_params_204"}) {
    auto ack = classify_append(parse_capture(capture), kPlain);
    ASSERT_TRUE(ack.has_value()) << capture << ": " << ack.error().describe();
    EXPECT_FALSE(ack->duplicate) << capture;
    EXPECT_FALSE(ack->next_offset.empty()) << capture;
  }
  auto ack = classify_append(parse_capture("append_plain_204"), kPlain);
  EXPECT_EQ(*ack, (DurableStreamsPolicy::Ack{"0000000000000000_0000000000000010", false}));
}

TEST(ClassifyAppendCaptures, S7_Producer200IsAppendedWithNextOffset) {
  auto ack = classify_append(parse_capture("append_producer_200"), kSequenced);
  ASSERT_TRUE(ack.has_value()) << ack.error().describe();
  EXPECT_EQ(*ack, (DurableStreamsPolicy::Ack{"0000000000000000_0000000000000007", false}));
  for (const char* capture :
       {"append_producer_seq1_200", "append_producer_epoch1_seq0_200", "append_producer_new_id_epoch7_seq0_200",
        "fault_503_then_retry_200", "after_clear_post_200"}) {
    auto a = classify_append(parse_capture(capture), kSequenced);
    ASSERT_TRUE(a.has_value()) << capture;
    EXPECT_FALSE(a->duplicate);
    EXPECT_FALSE(a->next_offset.empty());
  }
}

TEST(ClassifyAppendCaptures, S3_ProducerDuplicate204IsDuplicateWithoutOffset) {
  for (const char* capture : {"append_producer_duplicate_204", "append_producer_old_dup_204"}) {
    auto ack = classify_append(parse_capture(capture), kSequenced);
    ASSERT_TRUE(ack.has_value()) << capture << ": " << ack.error().describe();
    EXPECT_EQ(*ack, (DurableStreamsPolicy::Ack{"", true})) << capture;
  }
}

TEST(ClassifyAppendCaptures, S3_RetryOfClosingAppend204IsDuplicateWithFinalOffset) {
  auto ack = classify_append(parse_capture("close_with_producer_and_body_retry_204"), kSequenced);
  ASSERT_TRUE(ack.has_value());
  EXPECT_TRUE(ack->duplicate);
  EXPECT_EQ(ack->next_offset, "0000000000000000_0000000000000020");
}

TEST(ClassifyAppendCaptures, S7_ProducerAppendAndClose200IsAppended) {
  auto ack = classify_append(parse_capture("close_with_producer_and_body_200"), kSequenced);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(*ack, (DurableStreamsPolicy::Ack{"0000000000000000_0000000000000020", false}));
}

TEST(ClassifyAppendCaptures, S7_ProducerDuplicate204OnAPlainAppendIsProtocolError) {
  // The same 204 without Stream-Next-Offset is no acknowledgement of a plain append.
  const Error e = append_error("append_producer_duplicate_204", kPlain);
  EXPECT_EQ(e.code, ErrorCode::protocol_error);
  EXPECT_EQ(e.certainty, Certainty::indefinite);
  EXPECT_EQ(e.http_status, 204);
  EXPECT_NE(e.message.find("Stream-Next-Offset"), std::string::npos) << e.message;
}

// ---- append: S4 gap, S5 stale epoch, S6 closed, E3 conflict --------------------------------

TEST(ClassifyAppendCaptures, S4_Gap409CarriesExpectedAndReceivedSeq) {
  const Error e = append_error("append_producer_gap_409", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::sequence_gap);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_FALSE(e.retryable);
  EXPECT_EQ(e.expected_seq, 1U);
  EXPECT_EQ(e.received_seq, 5U);
  EXPECT_EQ(e.http_status, 409);
  EXPECT_NE(e.message.find("expected seq 1"), std::string::npos) << e.message;
}

TEST(ClassifyAppendCaptures, S4_NewProducerWithNonZeroSeqIsGapExpectingZero) {
  const Error e = append_error("append_producer_new_id_seq1_409", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::sequence_gap);
  EXPECT_EQ(e.expected_seq, 0U);
  EXPECT_EQ(e.received_seq, 1U);
}

TEST(ClassifyAppendCaptures, S4_GapWithLargestSeqParses) {
  const Error e = append_error("append_producer_seq_2pow53m1_409", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::sequence_gap);
  EXPECT_EQ(e.expected_seq, 2U);
  EXPECT_EQ(e.received_seq, 9007199254740991U);
}

TEST(ClassifyAppendCaptures, S5_StaleEpoch403CarriesServerEpoch) {
  const Error e = append_error("append_producer_epoch0_stale_403", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::stale_epoch);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_FALSE(e.retryable);
  EXPECT_EQ(e.server_epoch, 1U);
  EXPECT_EQ(e.http_status, 403);
}

TEST(ClassifyAppendCaptures, S6_AppendAfterClose409IsStreamClosedWithFinalOffset) {
  for (const char* capture :
       {"append_after_close_409", "producer_append_after_close_409", "append_after_close_wrong_ct_409"}) {
    for (const bool sequenced : {kPlain, kSequenced}) {
      const Error e = append_error(capture, sequenced);
      EXPECT_EQ(e.code, ErrorCode::stream_closed) << capture;
      EXPECT_EQ(e.certainty, Certainty::definite);
      EXPECT_FALSE(e.retryable);
      EXPECT_EQ(e.final_offset, "0000000000000000_0000000000000027") << capture;
      EXPECT_EQ(e.http_status, 409);
    }
  }
}

TEST(ClassifyAppendCaptures, S6_OlderOrNextSeqAfterProducerClose409IsStreamClosed) {
  for (const char* capture : {"close_with_producer_next_seq_409", "close_with_producer_old_seq_409"}) {
    const Error e = append_error(capture, kSequenced);
    EXPECT_EQ(e.code, ErrorCode::stream_closed) << capture;
    EXPECT_EQ(e.final_offset, "0000000000000000_0000000000000020");
  }
}

TEST(ClassifyAppendCaptures, E3_WrongContentType409IsConflictQuotingTheServer) {
  for (const char* capture : {"append_wrong_content_type_409", "append_producer_dup_wrong_ct_409"}) {
    const Error e = append_error(capture, kSequenced);
    EXPECT_EQ(e.code, ErrorCode::conflict) << capture;
    EXPECT_EQ(e.certainty, Certainty::definite);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.http_status, 409);
    EXPECT_NE(e.message.find("Content-type mismatch"), std::string::npos) << e.message;
  }
}

// ---- append: not found, rejected, unavailable ---------------------------------------------

TEST(ClassifyAppendCaptures, S7_MissingOrDeletedStream404IsNotFound) {
  for (const char* capture :
       {"append_missing_stream_404", "append_deleted_404", "append_producer_missing_stream_404"}) {
    const Error e = append_error(capture, kSequenced);
    EXPECT_EQ(e.code, ErrorCode::not_found) << capture;
    EXPECT_EQ(e.certainty, Certainty::definite);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.http_status, 404);
  }
}

TEST(ClassifyAppendCaptures, S7_BadRequest400IsRejectedWithServerText) {
  struct Case {
    const char* capture;
    const char* text;
  };
  for (const Case c : {Case{"append_json_empty_array_400", "Empty arrays are not allowed"},
                       Case{"append_json_invalid_400", "Invalid JSON"}, Case{"append_empty_body_400", "Empty body"},
                       Case{"append_no_content_type_400", "Content-Type header is required"},
                       Case{"append_producer_missing_seq_400", "must be provided together"},
                       Case{"append_producer_missing_id_400", "must be provided together"},
                       Case{"append_producer_empty_id_400", "Invalid Producer-Id"},
                       Case{"append_producer_epoch_abc_400", "Invalid Producer-Epoch"},
                       Case{"append_producer_seq_abc_400", "Invalid Producer-Seq"},
                       Case{"append_producer_seq_plus1_400", "Invalid Producer-Seq"},
                       Case{"append_producer_seq_2pow53_400", "Invalid Producer-Seq"},
                       Case{"append_producer_epoch2_seq3_400", "New epoch must start"},
                       Case{"close_true_uppercase_400", "Empty body"}}) {
    const Error e = append_error(c.capture, kSequenced);
    EXPECT_EQ(e.code, ErrorCode::rejected) << c.capture;
    EXPECT_EQ(e.certainty, Certainty::definite);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.http_status, 400);
    EXPECT_NE(e.message.find(c.text), std::string::npos) << c.capture << ": " << e.message;
  }
}

TEST(ClassifyAppendCaptures, S7_Unavailable503IsDefiniteRetryableWithRetryAfter) {
  const Error e = append_error("fault_503_retry_after", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::unavailable);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_TRUE(e.retryable);
  EXPECT_EQ(e.http_status, 503);
  ASSERT_TRUE(e.retry_after_ns.has_value());
  EXPECT_EQ(*e.retry_after_ns, std::chrono::seconds{2});
  const Error delayed = append_error("fault_503_after_delay", kSequenced);
  ASSERT_TRUE(delayed.retry_after_ns.has_value());
  EXPECT_EQ(*delayed.retry_after_ns, std::chrono::seconds{1});
}

TEST(ClassifyAppendCaptures, S7_Unavailable503WithoutRetryAfterHasNone) {
  const Error e = append_error("fault_matches_path_ignoring_query_503", kSequenced);
  EXPECT_EQ(e.code, ErrorCode::unavailable);
  EXPECT_EQ(e.certainty, Certainty::definite);
  EXPECT_FALSE(e.retry_after_ns.has_value());
}

TEST(ClassifyAppendCaptures, S7_ServerError500IsIndefiniteRetryable) {
  for (const char* capture : {"fault_count2_first_500", "fault_count2_second_500"}) {
    const Error e = append_error(capture, kSequenced);
    EXPECT_EQ(e.code, ErrorCode::unavailable) << capture;
    EXPECT_EQ(e.certainty, Certainty::indefinite);
    EXPECT_TRUE(e.retryable);
    EXPECT_EQ(e.http_status, 500);
    EXPECT_FALSE(e.retry_after_ns.has_value());
  }
}

TEST(ClassifyAppendCaptures, S7_OtherClientErrorsAreRejected) {
  for (const char* capture : {"method_patch_405", "fault_consumed_by_head_418"}) {
    const Error e = append_error(capture, kPlain);
    EXPECT_EQ(e.code, ErrorCode::rejected) << capture;
    EXPECT_EQ(e.certainty, Certainty::definite);
  }
}

TEST(ClassifyAppendCaptures, S7_UnexpectedSuccessStatusIsProtocolError) {
  // 201 (a create answer) is no append answer.
  const Error e = append_error("put_create_201", kPlain);
  EXPECT_EQ(e.code, ErrorCode::protocol_error);
  EXPECT_EQ(e.certainty, Certainty::indefinite);
  EXPECT_EQ(e.http_status, 201);
}

// ---- create ------------------------------------------------------------------------------

TEST(ClassifyCreateCaptures, Created201) {
  auto r = classify_create(parse_capture("put_create_201"));
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_TRUE(r->created);
  EXPECT_EQ(r->next_offset, "0000000000000000_0000000000000000");
  EXPECT_TRUE(classify_create(parse_capture("put_json_create_201"))->created);
  EXPECT_TRUE(classify_create(parse_capture("put_after_delete_201"))->created);
}

TEST(ClassifyCreateCaptures, SameConfiguration200IsNotCreated) {
  for (const char* capture : {"put_same_config_200", "put_same_config_charset_200", "put_no_content_type_same_200",
                              "put_closed_stream_with_closed_200"}) {
    auto r = classify_create(parse_capture(capture));
    ASSERT_TRUE(r.has_value()) << capture;
    EXPECT_FALSE(r->created) << capture;
  }
  EXPECT_EQ(classify_create(parse_capture("put_closed_stream_with_closed_200"))->next_offset,
            "0000000000000000_0000000000000027");
}

TEST(ClassifyCreateCaptures, E3_OtherConfiguration409IsConflict) {
  for (const char* capture : {"put_different_content_type_409", "put_closed_stream_without_closed_409"}) {
    auto r = classify_create(parse_capture(capture));
    ASSERT_FALSE(r.has_value()) << capture;
    EXPECT_EQ(r.error().code, ErrorCode::conflict);
    EXPECT_EQ(r.error().certainty, Certainty::definite);
    EXPECT_EQ(r.error().http_status, 409);
    EXPECT_NE(r.error().message.find("different configuration"), std::string::npos) << r.error().message;
  }
}

// ---- close -------------------------------------------------------------------------------

TEST(ClassifyCloseCaptures, Close204GivesFinalOffset) {
  for (const char* capture : {"close_empty_body_204", "close_again_204"}) {
    auto r = classify_close(parse_capture(capture), kPlain);
    ASSERT_TRUE(r.has_value()) << capture;
    EXPECT_EQ(r->final_offset, "0000000000000000_0000000000000027");
  }
}

TEST(ClassifyCloseCaptures, S3_ProducerCloseAndItsRetry204Succeed) {
  for (const char* capture : {"close_only_with_producer_seq0_204", "close_only_with_producer_retry_204",
                              "close_only_producer_retry_of_body_close_204"}) {
    auto r = classify_close(parse_capture(capture), kSequenced);
    ASSERT_TRUE(r.has_value()) << capture;
    EXPECT_FALSE(r->final_offset.empty());
  }
}

TEST(ClassifyCloseCaptures, S4_ProducerCloseWithGap409IsSequenceGap) {
  auto r = classify_close(parse_capture("close_only_with_producer_gap_409"), kSequenced);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::sequence_gap);
  EXPECT_EQ(r.error().expected_seq, 0U);
  EXPECT_EQ(r.error().received_seq, 3U);
}

TEST(ClassifyCloseCaptures, S6_ProducerCloseAfterPlainClose409IsStreamClosed) {
  auto r = classify_close(parse_capture("producer_close_only_after_plain_close_409"), kSequenced);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::stream_closed);
  EXPECT_EQ(r.error().final_offset, "0000000000000000_0000000000000027");
}

TEST(ClassifyCloseCaptures, MissingStream404IsNotFound) {
  EXPECT_EQ(classify_close(parse_capture("close_missing_stream_404"), kPlain).error().code, ErrorCode::not_found);
  EXPECT_EQ(classify_close(parse_capture("close_only_with_producer_missing_stream_404"), kSequenced).error().code,
            ErrorCode::not_found);
}

// ---- HEAD --------------------------------------------------------------------------------

TEST(ClassifyHeadCaptures, Head200GivesTypeTailAndOpenState) {
  auto r = classify_head(parse_capture("head_200"));
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(r->content_type, "application/octet-stream");
  EXPECT_EQ(r->next_offset, "0000000000000000_0000000000000027");
  EXPECT_FALSE(r->closed);
}

TEST(ClassifyHeadCaptures, S6_HeadOfClosedStreamSaysClosed) {
  auto r = classify_head(parse_capture("head_closed_200"));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->closed);
  EXPECT_EQ(r->next_offset, "0000000000000000_0000000000000027");
}

TEST(ClassifyHeadCaptures, MissingOrDeleted404IsNotFound) {
  for (const char* capture : {"head_missing_404", "head_deleted_404"}) {
    auto r = classify_head(parse_capture(capture));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, ErrorCode::not_found) << capture;
    EXPECT_EQ(r.error().http_status, 404);
  }
}

// ---- read --------------------------------------------------------------------------------

TEST(ClassifyReadCaptures, BytesCatchUpIsUpToDate) {
  for (const char* capture : {"get_bytes_catchup_200", "get_bytes_no_offset_200"}) {
    auto r = classify_read(parse_capture(capture));
    ASSERT_TRUE(r.has_value()) << capture;
    EXPECT_EQ(r->body, "hello world!");
    EXPECT_EQ(r->next_offset, "0000000000000000_0000000000000027");
    EXPECT_TRUE(r->up_to_date);
    EXPECT_FALSE(r->closed);
  }
  auto from = classify_read(parse_capture("get_bytes_from_offset_200"));
  ASSERT_TRUE(from.has_value());
  EXPECT_TRUE(from->up_to_date);
}

TEST(ClassifyReadCaptures, JsonCatchUpIsOneArray) {
  auto r = classify_read(parse_capture("get_json_catchup_200"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, R"([1,2,{"a":1},[3,4]])");
  EXPECT_EQ(r->next_offset, "0000000000000000_0000000000000033");
  EXPECT_TRUE(r->up_to_date);
  auto empty = classify_read(parse_capture("get_recreated_json_200"));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->body, "[]");
}

TEST(ClassifyReadCaptures, OffsetNowIsEmptyAndUpToDate) {
  auto r = classify_read(parse_capture("get_bytes_offset_now_200"));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->body.empty());
  EXPECT_TRUE(r->up_to_date);
}

TEST(ClassifyReadCaptures, S6_ReadAtTailOfClosedStreamSaysClosed) {
  for (const char* capture : {"get_closed_catchup_200", "get_pclose_catchup_200"}) {
    auto r = classify_read(parse_capture(capture));
    ASSERT_TRUE(r.has_value()) << capture;
    EXPECT_TRUE(r->closed);
    EXPECT_TRUE(r->up_to_date);
  }
}

TEST(ClassifyReadCaptures, BadOffset400IsRejectedAndDeleted404IsNotFound) {
  auto bad = classify_read(parse_capture("get_bytes_bad_offset_400"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::rejected);
  EXPECT_NE(bad.error().message.find("Invalid offset format"), std::string::npos) << bad.error().message;
  EXPECT_EQ(classify_read(parse_capture("get_deleted_404")).error().code, ErrorCode::not_found);
}

TEST(ClassifyReadCaptures, TruncatedBodyKeepsValidFraming) {
  auto r = classify_read(parse_capture("fault_truncate_get_200"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body.size(), 2U);
}

// ---- delete ------------------------------------------------------------------------------

TEST(ClassifyDeleteCaptures, Delete204SucceedsAndAgainIsNotFound) {
  EXPECT_TRUE(classify_delete(parse_capture("delete_204")).has_value());
  auto again = classify_delete(parse_capture("delete_again_404"));
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::not_found);
  EXPECT_EQ(again.error().http_status, 404);
}

// ---- several responses on one connection --------------------------------------------------

TEST(ClassifyPipelinedCaptures, FiveProducerAppendsAckInOrder) {
  const auto outcomes = parse_all(load_capture("pipelined_producer_5"), false, 1 << 20);
  ASSERT_EQ(outcomes.size(), 5U);
  const char* offsets[] = {"0000000000000000_0000000000000007", "0000000000000000_0000000000000014",
                           "0000000000000000_0000000000000021", "0000000000000000_0000000000000028",
                           "0000000000000000_0000000000000035"};
  for (std::size_t i = 0; i < 5; ++i) {
    ASSERT_EQ(outcomes[i].state, ResponseParser::State::complete);
    auto ack = classify_append(outcomes[i].response, kSequenced);
    ASSERT_TRUE(ack.has_value());
    EXPECT_EQ(ack->next_offset, offsets[i]);
  }
}

TEST(ClassifyPipelinedCaptures, S4_DelayedFirstGivesAppendedThenGap) {
  const auto outcomes = parse_all(load_capture("pipelined_delayed_first"), false, 1 << 20);
  ASSERT_EQ(outcomes.size(), 2U);
  EXPECT_TRUE(classify_append(outcomes[0].response, kSequenced).has_value());
  auto gap = classify_append(outcomes[1].response, kSequenced);
  ASSERT_FALSE(gap.has_value());
  EXPECT_EQ(gap.error().code, ErrorCode::sequence_gap);
  EXPECT_EQ(gap.error().expected_seq, 0U);
  EXPECT_EQ(gap.error().received_seq, 1U);
}

TEST(ClassifyPipelinedCaptures, KeepAliveSequence503Then204Then200Read) {
  const auto outcomes = parse_all(load_capture("keepalive_sequential_3"), false, 1 << 20);
  ASSERT_EQ(outcomes.size(), 3U);
  EXPECT_EQ(classify_append(outcomes[0].response, kPlain).error().code, ErrorCode::unavailable);
  EXPECT_TRUE(classify_append(outcomes[1].response, kPlain).has_value());
  auto read = classify_read(outcomes[2].response);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->body.size(), 1U);
}

TEST(ClassifyPipelinedCaptures, Interim100ContinueIsSkippedBeforeThe204) {
  const auto outcomes = parse_all(load_capture("expect_100_continue"), false, 1 << 20);
  ASSERT_EQ(outcomes.size(), 1U);
  ASSERT_EQ(outcomes[0].state, ResponseParser::State::complete);
  EXPECT_EQ(outcomes[0].response.status, 204);
  auto ack = classify_append(outcomes[0].response, kPlain);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->next_offset, "0000000000000000_0000000000000021");
}

TEST(ClassifyPipelinedCaptures, DroppedConnectionWithoutBytesIsProtocolError) {
  const auto outcomes = parse_all(load_capture("fault_drop_connection"), false, 1 << 20);
  ASSERT_EQ(outcomes.size(), 1U);
  EXPECT_EQ(outcomes[0].state, ResponseParser::State::failed);
  EXPECT_NE(outcomes[0].error.find("connection closed before the response completed"), std::string::npos)
      << outcomes[0].error;
}

}  // namespace
}  // namespace prodsm::ds::test
