// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the CLI's record reader (one record per line; JSON lines validated) on
// arbitrary input. Never a crash; every record respects the size bound; in bytes mode
// the records put back together are exactly the input that was read.
#include <fuzzer/FuzzedDataProvider.h>

#include <sstream>

#include "record_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool json = in.ConsumeBool();
  const std::size_t max_record = in.ConsumeIntegralInRange<std::size_t>(1, 4096);
  const std::string text = in.ConsumeRemainingBytesAsString();
  std::istringstream stream(text);
  prodsm::tools::RecordReader reader(
      stream, json ? prodsm::tools::RecordReader::Mode::json : prodsm::tools::RecordReader::Mode::bytes, max_record);
  std::string joined;
  for (int i = 0; i < 100000; ++i) {
    auto next = reader.next();
    if (!next) {
      if (next.error().message.empty() || next.error().line == 0) __builtin_trap();
      return 0;
    }
    if (!*next) break;
    if ((*next)->size() > max_record) __builtin_trap();
    if (!json) joined.append(**next);
  }
  if (!json && joined != text) __builtin_trap();  // bytes mode loses nothing
  return 0;
}
