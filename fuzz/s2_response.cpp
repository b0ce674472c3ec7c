// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the S2 codec's decoders and classifiers on arbitrary bytes. Never a crash,
// a hang or a sanitizer finding, and:
//  - mode 0: bytes as HTTP/1.1 responses (arbitrary chunking, pipelined), each complete
//    one classified as an append, read, tail check and stream creation; every error has a
//    message and its HTTP status; a 412 is always a definite condition_failed (E3), or,
//    classified with the append's match_seq_num, a definite sequence_gap whose tail is
//    below it (S4); a retryable error is unavailable or, at a 408, request_timeout; an ack
//    always has start and end;
//  - mode 1: bytes as protobuf AppendAck / ReadBatch / AppendInput under random limits;
//    a decoded AppendInput re-encodes to bytes that decode to the same input, and a
//    decoded AppendAck re-encodes to bytes that decode to the same ack;
//  - mode 2: bytes as a framed record (S2Policy::RecordFormat::framed); one the check
//    accepts is rebuilt byte for byte by frame_record from its parts, and its meter is
//    S2's (7 + size).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <optional>

#include "prodsm/http/response_parser.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace s2 = prodsm::s2;
using prodsm::Certainty;
using prodsm::Error;
using prodsm::ErrorCode;

namespace {

/// `match`: the match_seq_num the append was told it carried (classify_append), or none.
void check_error(const Error& e, const prodsm::http::Response& r, std::optional<std::uint64_t> match = std::nullopt) {
  if (e.message.empty()) __builtin_trap();  // an error always says why
  if (e.code != ErrorCode::internal && e.http_status != r.status && r.status >= 0 && r.status <= 0xFFFF) {
    __builtin_trap();
  }
  // A 412 is a condition failure, or (S4) a gap: a tail below the append's match_seq_num.
  const bool gap = e.code == ErrorCode::sequence_gap;
  if (gap && (!match || r.status != 412 || e.expected_seq >= *match || e.received_seq != *match)) __builtin_trap();
  if (r.status == 412 && ((e.code != ErrorCode::condition_failed && !gap) || e.certainty != Certainty::definite)) {
    __builtin_trap();
  }
  // Retryable: unavailable, or request_timeout (only for a 408).
  if (e.retryable && e.code != ErrorCode::unavailable && e.code != ErrorCode::request_timeout) __builtin_trap();
  if (e.code == ErrorCode::request_timeout && r.status != 408) __builtin_trap();
  if (e.retry_after_ns && (!e.retryable || e.retry_after_ns->count() < 0)) __builtin_trap();
}

void classify_all(const prodsm::http::Response& r, std::uint64_t match) {
  const auto ack = s2::classify_append(r);
  if (ack) {
    if (r.status != 200) __builtin_trap();
  } else {
    check_error(ack.error(), r);
  }
  const auto stamped = s2::classify_append(r, match);  // the same, or a gap (S4)
  if (stamped.has_value() != ack.has_value()) __builtin_trap();
  if (!stamped) check_error(stamped.error(), r, match);
  const auto read = s2::classify_read(r);
  if (!read) check_error(read.error(), r);
  const auto tail = s2::classify_check_tail(r);
  if (!tail) check_error(tail.error(), r);
  const auto created = s2::classify_create_stream(r);
  if (!created) check_error(created.error(), r);
}

void responses(FuzzedDataProvider& in) {
  prodsm::http::ResponseLimits limits;
  limits.max_body_bytes = 1 << 16;
  const std::size_t chunk = in.ConsumeIntegralInRange<std::size_t>(1, 64);
  const auto match = in.ConsumeIntegral<std::uint64_t>();  // the match_seq_num an append carried
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  prodsm::http::ResponseParser parser(limits);
  parser.reset(false);
  std::size_t offset = 0;
  int count = 0;
  while (offset < bytes.size() && count < 16) {
    const std::size_t n = std::min(chunk, bytes.size() - offset);
    const std::size_t used = parser.feed(std::span<const char>(bytes.data() + offset, n));
    offset += used;
    if (parser.state() == prodsm::http::ResponseParser::State::complete) {
      classify_all(parser.take_response(), match);
      ++count;
      parser.reset(false);
    } else if (parser.state() == prodsm::http::ResponseParser::State::failed || used == 0) {
      return;
    }
  }
  parser.finish_eof();
  if (parser.state() == prodsm::http::ResponseParser::State::complete) classify_all(parser.take_response(), match);
}

void messages(FuzzedDataProvider& in) {
  s2::DecodeLimits limits;
  limits.max_group_depth = in.ConsumeIntegralInRange<std::uint32_t>(0, 70);
  limits.max_records = in.ConsumeIntegralInRange<std::size_t>(0, 1000);
  limits.max_headers = in.ConsumeIntegralInRange<std::size_t>(0, 4096);
  const std::string bytes = in.ConsumeRemainingBytesAsString();

  if (const auto ack = s2::decode_append_ack(bytes, limits)) {
    std::string again;
    s2::encode(*ack, again);
    const auto back = s2::decode_append_ack(again);
    if (!back || !(*back == *ack)) __builtin_trap();
  } else if (ack.error().message.empty() || ack.error().code != ErrorCode::protocol_error) {
    __builtin_trap();
  }
  if (const auto batch = s2::decode_read_batch(bytes, limits); !batch && batch.error().message.empty()) {
    __builtin_trap();
  }
  const auto input = s2::decode_append_input(bytes, limits);
  if (!input) {
    if (input.error().message.empty()) __builtin_trap();
    return;
  }
  // Re-encode what was decoded, decode it again: the same input.
  std::vector<std::vector<s2::HeaderView>> headers(input->records.size());
  std::vector<s2::AppendRecordView> records;
  for (std::size_t i = 0; i < input->records.size(); ++i) {
    for (const s2::Header& h : input->records[i].headers) headers[i].push_back({h.name, h.value});
    records.push_back({input->records[i].timestamp, headers[i], input->records[i].body});
  }
  s2::AppendInputView view{records, input->match_seq_num, std::nullopt};
  if (input->fencing_token) view.fencing_token = *input->fencing_token;
  std::string encoded;
  s2::encode(view, encoded);
  if (encoded.size() != s2::encoded_size(view)) __builtin_trap();
  const auto back = s2::decode_append_input(encoded, limits);
  if (!back || !(*back == *input)) __builtin_trap();
}

void framed(FuzzedDataProvider& in) {
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  const auto why = s2::check_framed_record(bytes);
  prodsm::S2Policy::Options options;
  options.record_format = prodsm::S2Policy::RecordFormat::framed;
  const prodsm::S2Policy policy(options);
  const auto policy_why = policy.check_record(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  if (why != policy_why) __builtin_trap();
  if (why) {
    if (why->empty()) __builtin_trap();
    return;
  }
  const auto record = s2::FramedRecord::parse(bytes);
  if (!record) __builtin_trap();
  std::vector<s2::HeaderView> headers;
  record->for_each_header([&](s2::HeaderView h) { headers.push_back(h); });
  const auto rebuilt = s2::frame_record(headers, record->body());
  if (!rebuilt || *rebuilt != bytes) __builtin_trap();
  const s2::AppendRecordView view{std::nullopt, headers, record->body()};
  if (policy.metered_bytes(bytes.size()) != s2::metered_size(view)) __builtin_trap();
  // The record encodes, in a batch of its own, to an AppendInput the decoder reads back.
  const std::uint32_t end = static_cast<std::uint32_t>(bytes.size());
  std::string body;
  if (!s2::encode_batch_body(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), {&end, 1},
                             prodsm::S2Policy::Stamp{}, prodsm::S2Policy::RecordFormat::framed, body)) {
    __builtin_trap();
  }
  const auto decoded = s2::decode_append_input(body);
  if (!decoded || decoded->records.size() != 1 || decoded->records[0].body != record->body() ||
      decoded->records[0].headers.size() != headers.size()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: responses(in); break;
    case 1: messages(in); break;
    default: framed(in); break;
  }
  return 0;
}
