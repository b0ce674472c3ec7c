// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `prodsm produce` (Durable Streams and s2:// targets) and `prodsm read` tell stderr
// while they retry (E4). Retries end at --delivery-timeout-ms (120 s by default), so a server that
// is down or refusing would otherwise leave a run silent for minutes; librdkafka's
// clients log such failures the same way.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "prodsm/producer_event.hpp"

namespace prodsm::ds {
struct ReadRetry;  // prodsm/ds/reader.hpp
}  // namespace prodsm::ds

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
  /// The same for a notice told as `text` standing for `count` events (a read's retry).
  std::optional<std::string> line_for(std::string_view text, std::uint64_t count,
                                      std::chrono::steady_clock::time_point now);

 private:
  std::string prefix_;
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  std::uint64_t left_out_ = 0;  // events since the last line, not printed
};

/// What `prodsm produce` tells stderr while records wait for an acknowledgement that does
/// not come: a server or network that swallows requests (a blackhole) fails nothing until
/// a request times out (--request-timeout-ms, 30 s by default), so without these lines a
/// run would be silent for that long. The first line when records have waited `after`
/// with no acknowledgement, then one per `after` while that lasts. Pure: the caller
/// passes the time and the counts, and prints the line. Not thread-safe.
class AckWaitNotices {
 public:
  AckWaitNotices(std::string prefix, std::chrono::steady_clock::duration after)
      : prefix_{std::move(prefix)}, after_{after} {}

  /// The line for `now`, "<prefix>: warning: no acknowledgement for N s while M records
  /// wait for one; ...", or nullopt. `acknowledged`: records acknowledged so far (only
  /// grows); `waiting`: records accepted and not yet resolved. A new acknowledgement, or
  /// nothing waiting, starts the wait over.
  std::optional<std::string> line_for(std::chrono::steady_clock::time_point now, std::uint64_t acknowledged,
                                      std::uint64_t waiting);

 private:
  std::string prefix_;
  std::chrono::steady_clock::duration after_;
  std::optional<std::chrono::steady_clock::time_point> since_;  // waiting with no acknowledgement since
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  std::uint64_t acknowledged_ = 0;
};

/// A callback for the run's waits (interruptible_waits.hpp: called every 50 ms) that
/// prints AckWaitNotices' lines to stderr, `counts()` giving {acknowledged, waiting};
/// `quiet`: a callback that does nothing.
std::function<void()> ack_wait_notices(std::string prefix, bool quiet,
                                       std::function<std::pair<std::uint64_t, std::uint64_t>()> counts,
                                       std::chrono::milliseconds after = std::chrono::seconds{10});

/// Event options whose hook prints RetryNotices' lines for warning events (a retry, a
/// failed connect, an epoch claim) to stderr, at most one per `interval`; on a terminal
/// the line first clears the progress line. `quiet`: no hook, no events.
EventOptions retry_notices(std::string prefix, bool quiet,
                           std::chrono::milliseconds interval = std::chrono::seconds{1});

/// How often a retry line may be printed at most, by default (ms).
inline constexpr std::chrono::milliseconds kNoticeIntervalMs{1000};

/// The text of a read's retry (without prefix): "warning retry: <what> at offset O failed
/// and is sent again in N ms (E4, attempt K); cause: <error>" ("at once" for no wait).
std::string read_retry_text(std::string_view what, const ds::ReadRetry& retry);

/// A read retry handler (asio::ReadRetryHandler, blocking::ReadRetryHandler) that
/// prints a line per retry of a read to stderr, as retry_notices does for the appends (at
/// most one per `interval`, the line saying how many retries came since the last one):
/// "<prefix>: warning retry: <what> at offset O failed and is sent again in N ms (E4,
/// attempt K); cause: <error>". `quiet`: no handler. Without it a read-back that retries
/// (up to --delivery-timeout-ms) or a `prodsm read` against a failing server says nothing
/// until it ends.
std::function<void(const ds::ReadRetry&)> read_retry_notices(std::string prefix, std::string what, bool quiet,
                                                             std::chrono::milliseconds interval = kNoticeIntervalMs);

}  // namespace prodsm::tools
