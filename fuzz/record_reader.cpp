// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the CLI's record reader (one record per line; JSON lines validated) on
// arbitrary input. Never a crash; every record respects the size bound; in bytes mode
// the records put back together are exactly the input that was read, in lines mode
// they are with a '\n' after each (but a last line that had none).
#include <fuzzer/FuzzedDataProvider.h>

#include <sstream>

#include "record_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  using Mode = prodsm::tools::RecordReader::Mode;
  const auto mode = in.PickValueInArray({Mode::bytes, Mode::json, Mode::lines});
  const bool json = mode == Mode::json;
  const std::size_t max_record = in.ConsumeIntegralInRange<std::size_t>(1, 4096);
  const std::string text = in.ConsumeRemainingBytesAsString();
  std::istringstream stream(text);
  prodsm::tools::RecordReader reader(stream, mode, max_record);
  std::string joined;
  for (int i = 0; i < 100000; ++i) {
    auto next = reader.next();
    if (!next) {
      if (next.error().message.empty() || next.error().line == 0) __builtin_trap();
      return 0;
    }
    if (!*next) break;
    if ((*next)->size() > max_record) __builtin_trap();
    if (mode == Mode::lines && (*next)->find('\n') != std::string_view::npos) __builtin_trap();
    if (!json) joined.append(**next);
    if (mode == Mode::lines) joined += '\n';
  }
  if (mode == Mode::lines && !text.empty() && text.back() != '\n' && !joined.empty()) joined.pop_back();
  if (!json && joined != text) __builtin_trap();  // bytes and lines modes lose nothing
  return 0;
}
