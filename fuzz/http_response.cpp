// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the HTTP/1.1 response parser and every classifier on arbitrary bytes,
// fed in arbitrary chunk sizes (pipelined responses included). Never a crash, a hang or
// a sanitizer finding; a complete response is classified by every classify_* function.
#include <fuzzer/FuzzedDataProvider.h>

#include "prodsm/ds/http_codec.hpp"

namespace ds = prodsm::ds;

namespace {
/// Takes bodies (or not) and abandons one after `budget` bytes.
struct StreamSink : prodsm::http::BodySink {
  StreamSink(bool take, std::size_t budget) : take_{take}, budget_{budget} {}
  bool on_head(const prodsm::http::Response& head) override { return take_ && head.status != 0; }
  bool on_body(std::span<const char> bytes) override {
    if (bytes.size() > budget_) return false;
    budget_ -= bytes.size();
    return true;
  }
  bool take_;
  std::size_t budget_;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  ds::ResponseLimits limits;
  limits.max_header_bytes = in.ConsumeIntegralInRange<std::size_t>(64, 4096);
  limits.max_headers = in.ConsumeIntegralInRange<std::size_t>(1, 32);
  limits.max_body_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 65536);
  const bool head = in.ConsumeBool();
  const bool sequenced = in.ConsumeBool();
  std::optional<ds::ProducerStamp> sent;
  if (sequenced)
    sent = ds::ProducerStamp{in.ConsumeIntegralInRange<std::uint64_t>(0, 3),
                             in.ConsumeIntegralInRange<std::uint64_t>(0, 3)};
  // Streamed-body mode: a sink that takes some bodies and abandons some after a while.
  const bool streamed = in.ConsumeBool();
  StreamSink sink(in.ConsumeBool(), in.ConsumeIntegralInRange<std::size_t>(0, 4096));
  const std::size_t chunk = in.ConsumeIntegralInRange<std::size_t>(1, 64);
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  ds::ResponseParser parser(limits);
  parser.reset(head, streamed ? &sink : nullptr);
  std::size_t offset = 0;
  int responses = 0;
  while (offset < bytes.size() && responses < 64) {
    const std::size_t n = std::min(chunk, bytes.size() - offset);
    const std::size_t used = parser.feed(std::span<const char>(bytes.data() + offset, n));
    if (used > n) __builtin_trap();  // never consumes more than it was given
    offset += used;
    if (parser.state() == ds::ResponseParser::State::complete) {
      const ds::Response r = parser.take_response();
      if (!r.body.empty() && r.body_streamed) __builtin_trap();  // a streamed body is not collected too
      (void)ds::classify_append(r, sent);
      (void)ds::classify_create(r);
      (void)ds::classify_close(r, sent);
      (void)ds::classify_head(r);
      (void)ds::classify_read(r);
      (void)ds::classify_delete(r);
      ++responses;
      parser.reset(head, streamed ? &sink : nullptr);
    } else if (parser.state() == ds::ResponseParser::State::failed) {
      if (parser.error().message.empty()) __builtin_trap();  // an error always says why
      return 0;
    } else if (used == 0) {
      __builtin_trap();  // incomplete and nothing consumed: would loop forever
    }
  }
  parser.finish_eof();
  return 0;
}
