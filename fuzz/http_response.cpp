// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the HTTP/1.1 response parser and every classifier on arbitrary bytes,
// fed in arbitrary chunk sizes (pipelined responses included). Never a crash, a hang or
// a sanitizer finding; a complete response is classified by every classify_* function.
#include <fuzzer/FuzzedDataProvider.h>

#include "prodsm/ds/http_codec.hpp"

namespace ds = prodsm::ds;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  ds::ResponseLimits limits;
  limits.max_header_bytes = in.ConsumeIntegralInRange<std::size_t>(64, 4096);
  limits.max_headers = in.ConsumeIntegralInRange<std::size_t>(1, 32);
  limits.max_body_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 65536);
  const bool head = in.ConsumeBool();
  const bool sequenced = in.ConsumeBool();
  const std::size_t chunk = in.ConsumeIntegralInRange<std::size_t>(1, 64);
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  ds::ResponseParser parser(limits);
  parser.reset(head);
  std::size_t offset = 0;
  int responses = 0;
  while (offset < bytes.size() && responses < 64) {
    const std::size_t n = std::min(chunk, bytes.size() - offset);
    const std::size_t used = parser.feed(std::span<const char>(bytes.data() + offset, n));
    if (used > n) __builtin_trap();  // never consumes more than it was given
    offset += used;
    if (parser.state() == ds::ResponseParser::State::complete) {
      const ds::Response r = parser.take_response();
      (void)ds::classify_append(r, sequenced);
      (void)ds::classify_create(r);
      (void)ds::classify_close(r, sequenced);
      (void)ds::classify_head(r);
      (void)ds::classify_read(r);
      (void)ds::classify_delete(r);
      ++responses;
      parser.reset(head);
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
