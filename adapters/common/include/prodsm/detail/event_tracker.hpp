// SPDX-License-Identifier: Apache-2.0
#pragma once
// prodsm::detail::EventTracker: turns what changed in a producer client (ds or s2
// ProducerClient) and its session since the last look into ProducerEvents, once for every
// adapter producer. The adapters call observe() under their lock after each input that can
// change these counters (a request's outcome, a deadline) and hand the events to the hook
// outside it, where callbacks run.
//
// What is an event (prodsm/producer_event.hpp):
//  - retry: the core's `retries_scheduled` counter grew (E4, at the failure, whether or not
//    the resend goes out before a terminal error; cause: the client's last failure), or
//    its `gap_resends` (S4, debug);
//  - claim: `epoch_claims` grew (S5; cause: the 403 stale epoch);
//  - terminal: the core reached ProducerState::failed (E1; cause: its sticky error), once
//    and last: it comes after the other events of the same look, and nothing follows it;
//  - reconnect: the session opened a connection after it lost one (its transport failures
//    or stalls grew since the last reconnect it reported), or a connect failed (warning).
//    An attached session is shared: every producer on it reports the reconnects it notices
//    at its own inputs (several noticed at once are one event with a count).
//    The session's counters are refreshed before each outcome reaches its producer, so a
//    failed connect is seen with the failure it caused.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/http/pool.hpp"
#include "prodsm/producer.hpp"
#include "prodsm/producer_event.hpp"

namespace prodsm::detail {

class EventTracker {
 public:
  /// Counts from `session` (an attached session's past is not news) and `min_level`.
  EventTracker(const http::PoolStats& session, EventLevel min_level) noexcept
      : min_level_{min_level},
        connections_opened_{session.connections_opened},
        connect_failures_{session.connect_failures},
        losses_{session.transport_failures + session.stalls},
        losses_reported_{losses_} {}

  /// Appends to `out` the events at or above min_level implied by what changed since the
  /// last call. Client: ds::ProducerClient or s2::ProducerClient.
  template <class Client>
  void observe(const Client& client, const http::PoolStats& session, std::vector<ProducerEvent>& out) {
    if (terminal_reported_) return;  // the terminal event was the last (E1)
    const auto& core = client.core();
    const ProducerStats& s = core.stats();
    if (s.retries_scheduled > retries_) {
      const std::uint64_t n = s.retries_scheduled - retries_;
      add(out, EventKind::retry, EventLevel::warning,
          std::to_string(n) + (n == 1 ? " batch attempt" : " batch attempts") + " failed and will be resent (E4)",
          client.last_failure(), n);
      retries_ = s.retries_scheduled;
      remember_transport_failure(client.last_failure());
    }
    if (s.gap_resends > gap_resends_) {
      const std::uint64_t n = s.gap_resends - gap_resends_;
      add(out, EventKind::retry, EventLevel::debug,
          std::to_string(n) + (n == 1 ? " batch" : " batches") + " resent behind a lower sequence number (S4)",
          std::nullopt, n);
      gap_resends_ = s.gap_resends;
    }
    if (s.epoch_claims > claims_) {
      const std::uint64_t n = s.epoch_claims - claims_;
      std::uint64_t epoch = 0;
      if constexpr (requires { core.policy().epoch(); }) epoch = core.policy().epoch();
      add(out, EventKind::claim, EventLevel::warning,
          "another incarnation held a higher epoch: claimed epoch " + std::to_string(epoch) +
              " and renumbered the unacknowledged batches (S5)",
          client.last_failure(), n, epoch);
      claims_ = s.epoch_claims;
    }
    if (core.state() == ProducerState::failed) remember_transport_failure(client.last_failure());  // not retried
    if (session.connect_failures > connect_failures_) {
      const std::uint64_t n = session.connect_failures - connect_failures_;
      add(out, EventKind::reconnect, EventLevel::warning,
          std::to_string(n) + (n == 1 ? " connect" : " connects") + " to the server failed", transport_failure_, n);
      connect_failures_ = session.connect_failures;
    }
    losses_ = session.transport_failures + session.stalls;
    if (session.connections_opened > connections_opened_ && losses_ > losses_reported_) {
      const std::uint64_t n = session.connections_opened - connections_opened_;
      add(out, EventKind::reconnect, EventLevel::info,
          "opened " + std::to_string(n) + (n == 1 ? " connection" : " connections") +
              " after a lost or stalled one (requests on it fail: definite if unwritten, else indefinite; E2)",
          transport_failure_, n);
      losses_reported_ = losses_;
    }
    connections_opened_ = session.connections_opened;
    if (core.state() == ProducerState::failed) {  // E1: last, once; nothing after it
      terminal_reported_ = true;
      add(out, EventKind::terminal, EventLevel::error,
          "the producer failed: every unacknowledged and later record fails (E1)", core.terminal_error(), 1);
    }
  }

 private:
  void add(std::vector<ProducerEvent>& out, EventKind kind, EventLevel level, std::string message,
           const std::optional<Error>& cause, std::uint64_t count, std::uint64_t epoch = 0) const {
    if (level < min_level_) return;
    out.push_back(ProducerEvent{kind, level, std::move(message), cause, count, epoch});
  }

  /// A failure that came from the transport (no HTTP status) is a reconnect's cause.
  void remember_transport_failure(const std::optional<Error>& e) {
    if (e && e->http_status == 0 &&
        (e->code == ErrorCode::connection_lost || e->code == ErrorCode::unavailable ||
         e->code == ErrorCode::request_timeout || e->code == ErrorCode::tls_failed)) {
      transport_failure_ = e;
    }
  }

  EventLevel min_level_;
  std::uint64_t retries_ = 0;
  std::uint64_t gap_resends_ = 0;
  std::uint64_t claims_ = 0;
  bool terminal_reported_ = false;
  std::uint64_t connections_opened_;
  std::uint64_t connect_failures_;
  std::uint64_t losses_;
  std::uint64_t losses_reported_;
  std::optional<Error> transport_failure_;
};

}  // namespace prodsm::detail
