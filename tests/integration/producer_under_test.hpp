// SPDX-License-Identifier: Apache-2.0
#pragma once
// The adapter-neutral face of a producer for the shared integration scenarios
// (scenarios.cpp). Each adapter (Asio, blocking) implements it once; the scenarios run
// against every implementation, so they are written once.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/ds/client.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/header_provider.hpp"
#include "prodsm/http/pool.hpp"
#include "prodsm/producer_event.hpp"

namespace prodsm::test {

/// How the scenario wants the producer configured.
struct ProducerSetup {
  std::string url;
  std::string content_type = "application/octet-stream";
  DurableStreamsConfig config{};
  http::TransportOptions session{};                          ///< connection mode, timeouts, stall detection
  ds::ProducerStart start = ds::ProducerStart::fresh_epoch;  ///< what the start is (restarts)
  HeaderProvider header_provider{};                          ///< per-request headers of the producer's session
  EventLevel event_level = EventLevel::info;                 ///< the event hook's min_level
  std::function<void(const ProducerEvent&)> on_event{};      ///< also called by the event hook, after the log
};

/// Transport options with stall detection off, for scenarios that assert exact attempt
/// counts, duplicate flags or a definite certainty: on a slow machine (sanitizers, a busy
/// CI) the stall detector may rightly replace a connection whose response is merely late,
/// which adds an attempt, turns a failure's certainty indefinite (the first attempt may
/// have been applied) and makes the late original answer a duplicate. The stall detector
/// has scenarios of its own (fault_scenarios.cpp, tests/http/test_pool.cpp).
inline http::TransportOptions without_stall_detection() {
  http::TransportOptions t;
  t.stall.enabled = false;
  return t;
}

/// One record completion as its callback saw it (A1: recorded in callback order).
struct Completion {
  std::uint64_t ticket = 0;
  bool ok = false;
  std::string next_offset;
  bool duplicate = false;
  bool earlier_incarnation = false;
  ErrorCode code = ErrorCode::internal;
  Certainty certainty = Certainty::definite;
};

/// Thread-safe log of a producer's events, filled by its event hook (in hook order).
class EventLog {
 public:
  void add(const ProducerEvent& e) {
    std::lock_guard lock(mu_);
    log_.push_back(e);
  }
  std::vector<ProducerEvent> snapshot() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<ProducerEvent> log_;
};

/// The event hook of a setup: logs, then calls setup.on_event.
inline EventOptions event_options(const ProducerSetup& setup, std::shared_ptr<EventLog> log) {
  EventOptions o;
  o.min_level = setup.event_level;
  o.on_event = [log = std::move(log), extra = setup.on_event](const ProducerEvent& e) {
    log->add(e);
    if (extra) extra(e);
  };
  return o;
}

/// Thread-safe log of completions, filled by the adapters' callbacks.
class CompletionLog {
 public:
  void add(Completion c) {
    std::lock_guard lock(mu_);
    log_.push_back(std::move(c));
  }
  std::vector<Completion> snapshot() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Completion> log_;
};

class ProducerUnderTest {
 public:
  virtual ~ProducerUnderTest() = default;
  /// Submits with a completion callback, waiting while the producer is full.
  virtual tl::expected<Ticket, Rejection> submit(std::string_view record) = 0;
  /// Flush barrier; waits at most `timeout` (a timeout is reported as `cancelled`).
  virtual tl::expected<void, Error> flush(Duration timeout) = 0;
  /// Close the producer; waits at most `timeout`.
  virtual tl::expected<void, Error> close(Duration timeout) = 0;
  /// Every completion so far, in callback order.
  virtual std::vector<Completion> completions() = 0;
  /// The core's counters.
  virtual ProducerStats stats() = 0;
  /// Every counter and gauge of the adapter producer (stats()).
  virtual ProducerAdapterStats adapter_stats() = 0;
  /// Every event its hook was given so far, in hook order.
  virtual std::vector<ProducerEvent> events() = 0;
};

/// Builds a producer for a setup; one per adapter.
using ProducerFactory = std::function<std::unique_ptr<ProducerUnderTest>(const ProducerSetup&)>;

/// A named factory, the parameter of the shared scenario suite.
struct AdapterParam {
  std::string name;
  ProducerFactory make;
};

/// Prints the adapter's name in test logs.
inline void PrintTo(const AdapterParam& param, std::ostream* os) {
  *os << param.name;
}

/// The shared suite; instantiate it per adapter with INSTANTIATE_TEST_SUITE_P.
class Scenario : public ::testing::TestWithParam<AdapterParam> {};

}  // namespace prodsm::test
