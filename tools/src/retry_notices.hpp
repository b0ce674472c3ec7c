// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `prodsm produce` (Durable Streams and s2:// targets) tells stderr while it
// retries (E4). Retries end at --delivery-timeout-ms (120 s by default), so a server that
// is down or refusing would otherwise leave a run silent for minutes; librdkafka's
// clients log such failures the same way.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "prodsm/producer_event.hpp"

namespace prodsm::tools {

/// Which producer events become a line, and when: the first at once, then at most one
/// per `interval`, the line saying how many events came since the last one. Pure: the
/// caller passes the time and prints the line. Not thread-safe (the hook serialises).
class RetryNotices {
 public:
  RetryNotices(std::string prefix, std::chrono::steady_clock::duration interval)
      : prefix_{std::move(prefix)}, interval_{interval} {}

  /// The line for `event` at `now`, "<prefix>: <ProducerEvent::describe()>[ (N more
  /// events since the last line)]", or nullopt: a terminal event (the run prints its own
  /// error), or less than `interval` since the last line (then it is counted, by
  /// ProducerEvent::count).
  std::optional<std::string> line_for(const ProducerEvent& event, std::chrono::steady_clock::time_point now);

 private:
  std::string prefix_;
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  std::uint64_t left_out_ = 0;  // events since the last line, not printed
};

/// Event options whose hook prints RetryNotices' lines for warning events (a retry, a
/// failed connect, an epoch claim) to stderr, at most one per `interval`; on a terminal
/// the line first clears the progress line. `quiet`: no hook, no events.
EventOptions retry_notices(std::string prefix, bool quiet,
                           std::chrono::milliseconds interval = std::chrono::seconds{1});

}  // namespace prodsm::tools
