// SPDX-License-Identifier: Apache-2.0
#include "retry_notices.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include "prodsm/ds/reader.hpp"

namespace prodsm::tools {

std::optional<std::string> RetryNotices::line_for(const ProducerEvent& event,
                                                  std::chrono::steady_clock::time_point now) {
  if (event.kind == EventKind::terminal) return std::nullopt;
  if (last_line_ && now - *last_line_ < interval_) {
    left_out_ += event.count;
    return std::nullopt;
  }
  return line_for(event.describe(), event.count, now);
}

std::optional<std::string> RetryNotices::line_for(std::string_view text, std::uint64_t count,
                                                  std::chrono::steady_clock::time_point now) {
  if (last_line_ && now - *last_line_ < interval_) {
    left_out_ += count;
    return std::nullopt;
  }
  std::string line = prefix_ + ": ";
  line += text;
  if (left_out_ > 0) line += " (" + std::to_string(left_out_) + " more events since the last line)";
  last_line_ = now;
  left_out_ = 0;
  return line;
}

std::optional<std::string> AckWaitNotices::line_for(std::chrono::steady_clock::time_point now,
                                                    std::uint64_t acknowledged, std::uint64_t waiting) {
  if (waiting == 0 || acknowledged != acknowledged_ || !since_) {
    acknowledged_ = acknowledged;
    since_ = waiting == 0 ? std::nullopt : std::optional{now};
    last_line_.reset();
    return std::nullopt;
  }
  if (now - *since_ < after_ || (last_line_ && now - *last_line_ < after_)) return std::nullopt;
  last_line_ = now;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - *since_).count();
  return prefix_ + ": warning: no acknowledgement for " + std::to_string(seconds) + " s while " +
         std::to_string(waiting) +
         " records wait for one; a request is failed after --request-timeout-ms and resent until "
         "--delivery-timeout-ms";
}

std::function<void()> ack_wait_notices(std::string prefix, bool quiet,
                                       std::function<std::pair<std::uint64_t, std::uint64_t>()> counts,
                                       std::chrono::milliseconds after) {
  if (quiet) return [] {};
  auto notices = std::make_shared<AckWaitNotices>(std::move(prefix), after);
  const bool terminal = ::isatty(2) != 0;
  return [notices, counts = std::move(counts), terminal] {
    const auto [acknowledged, waiting] = counts();
    if (auto line = notices->line_for(std::chrono::steady_clock::now(), acknowledged, waiting)) {
      std::fprintf(stderr, "%s%s\n", terminal ? "\r\x1b[K" : "", line->c_str());  // as retry_notices
    }
  };
}

namespace {

/// RetryNotices behind a lock (hooks may run on several threads), printing to stderr.
struct LockedNotices {
  LockedNotices(std::string prefix, std::chrono::milliseconds interval) : notices{std::move(prefix), interval} {}
  std::mutex mu;
  RetryNotices notices;
  bool terminal = ::isatty(2) != 0;

  /// Prints `line` if any; on a terminal it first clears the progress line drawn there.
  void print(const std::optional<std::string>& line) const {
    if (line) std::fprintf(stderr, "%s%s\n", terminal ? "\r\x1b[K" : "", line->c_str());
  }
};

}  // namespace

EventOptions retry_notices(std::string prefix, bool quiet, std::chrono::milliseconds interval) {
  if (quiet) return {};
  auto state = std::make_shared<LockedNotices>(std::move(prefix), interval);
  EventOptions options;
  options.min_level = EventLevel::warning;
  options.on_event = [state](const ProducerEvent& event) {
    std::lock_guard lock(state->mu);
    state->print(state->notices.line_for(event, std::chrono::steady_clock::now()));
  };
  return options;
}

std::string read_retry_text(std::string_view what, const ds::ReadRetry& retry) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(retry.delay_ns).count();
  std::string text = "warning retry: ";
  text += what;
  text += " at offset " + retry.offset + " failed and is sent again " +
          (ms == 0 ? std::string{"at once"} : "in " + std::to_string(ms) + " ms") + " (E4, attempt " +
          std::to_string(retry.attempt) + "); cause: " + retry.failure.describe();
  return text;
}

std::function<void(const ds::ReadRetry&)> read_retry_notices(std::string prefix, std::string what, bool quiet,
                                                             std::chrono::milliseconds interval) {
  if (quiet) return {};
  auto state = std::make_shared<LockedNotices>(std::move(prefix), interval);
  return [state, what = std::move(what)](const ds::ReadRetry& r) {
    const std::string text = read_retry_text(what, r);
    std::lock_guard lock(state->mu);
    state->print(state->notices.line_for(text, 1, std::chrono::steady_clock::now()));
  };
}

}  // namespace prodsm::tools
