// SPDX-License-Identifier: Apache-2.0
#include "retry_notices.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

namespace prodsm::tools {

std::optional<std::string> RetryNotices::line_for(const ProducerEvent& event,
                                                  std::chrono::steady_clock::time_point now) {
  if (event.kind == EventKind::terminal) return std::nullopt;
  if (last_line_ && now - *last_line_ < interval_) {
    left_out_ += event.count;
    return std::nullopt;
  }
  std::string line = prefix_ + ": " + event.describe();
  if (left_out_ > 0) line += " (" + std::to_string(left_out_) + " more events since the last line)";
  last_line_ = now;
  left_out_ = 0;
  return line;
}

EventOptions retry_notices(std::string prefix, bool quiet, std::chrono::milliseconds interval) {
  if (quiet) return {};
  struct State {
    State(std::string p, std::chrono::milliseconds i) : notices{std::move(p), i} {}
    std::mutex mu;
    RetryNotices notices;
    bool terminal = ::isatty(2) != 0;
  };
  auto state = std::make_shared<State>(std::move(prefix), interval);
  EventOptions options;
  options.min_level = EventLevel::warning;
  options.on_event = [state](const ProducerEvent& event) {
    std::lock_guard lock(state->mu);
    if (auto line = state->notices.line_for(event, std::chrono::steady_clock::now())) {
      // On a terminal, the line first clears the progress line that may be drawn there.
      std::fprintf(stderr, "%s%s\n", state->terminal ? "\r\x1b[K" : "", line->c_str());
    }
  };
  return options;
}

}  // namespace prodsm::tools
