// SPDX-License-Identifier: Apache-2.0
#include "retry_notices.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace prodsm::tools {

EventOptions retry_notices(std::string prefix, bool quiet, std::chrono::milliseconds interval) {
  if (quiet) return {};
  struct State {
    std::mutex mu;
    std::optional<std::chrono::steady_clock::time_point> last_line;
    std::uint64_t left_out = 0;  // events since the last line, not printed
    bool terminal = ::isatty(2) != 0;
  };
  auto state = std::make_shared<State>();
  EventOptions options;
  options.min_level = EventLevel::warning;
  options.on_event = [state, prefix = std::move(prefix), interval](const ProducerEvent& event) {
    if (event.kind == EventKind::terminal) return;  // the run prints its own error
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(state->mu);
    if (state->last_line && now - *state->last_line < interval) {
      state->left_out += event.count;
      return;
    }
    std::string line = prefix + ": " + event.describe();
    if (state->left_out > 0) {
      line += " (" + std::to_string(state->left_out) + " more events since the last line)";
    }
    // On a terminal, the line first clears the progress line being redrawn there.
    std::fprintf(stderr, "%s%s\n", state->terminal ? "\r\x1b[K" : "", line.c_str());
    state->last_line = now;
    state->left_out = 0;
  };
  return options;
}

}  // namespace prodsm::tools
