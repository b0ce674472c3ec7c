// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_event.hpp
/// prodsm::ProducerEvent: what every adapter producer (Asio and blocking, Durable Streams
/// and S2) tells its event hook — retries, reconnects, epoch claims and the terminal
/// error, each with its cause and a level (librdkafka's event callback, as a value).
///
/// The hook runs where completion callbacks run (the callback strand or the dispatcher),
/// in order with them, never under the producer's lock: it may call the producer (A2). An
/// exception it throws is counted and reported like a callback's (A3).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "prodsm/error.hpp"

namespace prodsm {

/// How much an event matters, least first.
enum class EventLevel : std::uint8_t {
  debug,    ///< routine: a resend after a sequence gap the producer heals itself (S4)
  info,     ///< expected under faults: a reconnect
  warning,  ///< a failure the producer retries or works around: retry, epoch claim
  error,    ///< the producer failed: every later record fails (E1)
};

/// What happened.
enum class EventKind : std::uint8_t {
  retry,      ///< a batch attempt failed retryably and will be resent (E4: at once after a first
              ///< lost connection, else after a backoff), or is resent behind a lower seq (S4,
              ///< level debug)
  reconnect,  ///< the session opened a new connection after one was lost, or a connect
              ///< failed (level warning)
  claim,      ///< a 403 stale epoch was answered by claiming the server's epoch + 1 (S5)
  terminal,   ///< the producer failed with a sticky error (E1); emitted once
};

/// "debug", "info", "warning", "error".
inline std::string_view to_string(EventLevel level) noexcept {
  switch (level) {
    case EventLevel::debug: return "debug";
    case EventLevel::info: return "info";
    case EventLevel::warning: return "warning";
    case EventLevel::error: return "error";
  }
  return "unknown";
}
/// "retry", "reconnect", "claim", "terminal".
inline std::string_view to_string(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::retry: return "retry";
    case EventKind::reconnect: return "reconnect";
    case EventKind::claim: return "claim";
    case EventKind::terminal: return "terminal";
  }
  return "unknown";
}

/// One event of an adapter producer.
struct ProducerEvent {
  EventKind kind = EventKind::retry;    ///< what happened
  EventLevel level = EventLevel::info;  ///< how much it matters
  std::string message;                  ///< one line, e.g. "1 batch attempt failed and will be resent (E4)"
  std::optional<Error> cause;           ///< the failure behind it (an E4 retry, claim, terminal:
                                        ///< always; an S4 gap resend: none; reconnect: the last
                                        ///< transport failure seen, if any)
  std::uint64_t count = 1;              ///< how many of this kind it stands for (several retries
                                        ///< noticed at one input are one event)
  std::uint64_t epoch = 0;              ///< claim: the epoch now in use (Durable Streams Producer-Epoch)
  /// "<level> <kind>: <message>[; cause: <Error::describe()>]".
  [[nodiscard]] std::string describe() const {
    std::string s{to_string(level)};
    s += ' ';
    s += to_string(kind);
    s += ": ";
    s += message;
    if (cause) s += "; cause: " + cause->describe();
    return s;
  }
};

/// The event hook of an adapter producer (see the file comment).
using EventHook = std::function<void(const ProducerEvent&)>;

/// Event settings of an adapter producer (the `events` member of its options).
struct EventOptions {
  /// Called with every event at or above min_level; empty: no events are made.
  EventHook on_event{};
  /// The least level passed to on_event. Default info (debug events are frequent under
  /// pipelined faults: one per resent batch).
  EventLevel min_level = EventLevel::info;
};

}  // namespace prodsm
