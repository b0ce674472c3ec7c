// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file adapter_stats.hpp
/// prodsm::ProducerAdapterStats: what stats() of every adapter producer reports (the Asio
/// and blocking producers, Durable Streams and S2 alike) — the core's counters, the
/// session's, the adapter's own counters, and gauges of what is outstanding now.

#include <cstdint>

#include "prodsm/http/pool.hpp"
#include "prodsm/latency.hpp"
#include "prodsm/producer.hpp"

namespace prodsm {

/// Counters (monotonic since creation) and gauges (the value at the call) of one adapter
/// producer. Read under the producer's lock: the gauges agree with each other.
struct ProducerAdapterStats {
  ProducerStats core;                     ///< the core's counters
  http::PoolStats session;                ///< the session's counters (owned or attached)
  std::uint64_t callback_exceptions = 0;  ///< A3: exceptions thrown by completion callbacks
  std::uint64_t capacity_waits = 0;       ///< submits that had to wait for capacity (R1)
  // Gauges.
  std::uint64_t unacked_bytes = 0;      ///< metered bytes accepted and not yet completed (R1; bytes)
  std::uint32_t in_flight_batches = 0;  ///< batches with an attempt outstanding (R1)
  std::uint32_t unacked_batches = 0;    ///< batches accepted and not completed, the partial one included (R3)
  std::uint64_t pending_records = 0;    ///< records accepted whose outcome was not yet delivered (R3)
  /// Submit-to-acknowledgement latency of every acknowledged record since creation
  /// (percentiles in ns, within 6.25 %; prodsm/latency.hpp): from the submit that
  /// accepted the record to the input that acknowledged it, before its callback ran.
  LatencySummary submit_to_ack{};
  /// Events made for the event hook (at or above its min_level; 0 without a hook:
  /// prodsm/producer_event.hpp), counted when queued: the hook may not have run yet.
  std::uint64_t events = 0;
};

namespace detail {
/// Every adapter producer's stats(), with its lock held: the client's core counters and
/// gauges (Client: ds::ProducerClient or s2::ProducerClient) and the adapter's counters.
template <class Client>
ProducerAdapterStats adapter_stats(const Client& client, http::PoolStats session, std::uint64_t callback_exceptions,
                                   std::uint64_t capacity_waits, std::uint64_t events) {
  const auto& core = client.core();
  return ProducerAdapterStats{core.stats(),           session,
                              callback_exceptions,    capacity_waits,
                              core.unacked_bytes(),   core.in_flight(),
                              core.unacked_batches(), client.pending_records(),
                              client.submit_to_ack(), events};
}
}  // namespace detail

}  // namespace prodsm
