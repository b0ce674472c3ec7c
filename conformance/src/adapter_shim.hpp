// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: one interface over prodsm's two adapter producers (Durable Streams), so the
// adapter targets' driver (adapter_driver.cpp) runs either the same way. Each call is
// linearized (P1): it returns once the producer registered it, and its outcome arrives
// later through `done` — on the Asio producer a completion handler on its callback
// strand, on the blocking producer the blocking call returning on a thread of the shim.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/ds/client.hpp"

namespace prodsm::conformance::detail {

/// Which adapter a shim runs.
enum class AdapterKind : std::uint8_t { asio, blocking };

class AdapterShim {
 public:
  virtual ~AdapterShim() = default;
  /// submit(record, callback): accepted (the ticket) or refused at the call (A4); the
  /// callback runs on the adapter's dispatcher once, only when accepted.
  virtual tl::expected<Ticket, Rejection> submit(std::string_view record,
                                                 std::function<void(const ds::RecordResult&)> callback) = 0;
  /// Starts a flush barrier; returns once the producer took it (registered or refused).
  virtual void flush(std::function<void(const ds::VoidResult&)> done) = 0;
  /// Starts closing the producer; returns once the producer took it.
  virtual void close(std::function<void(const ds::VoidResult&)> done) = 0;
  /// Starts closing the stream (C4); returns once the producer took it.
  virtual void close_stream(std::function<void(const ds::CloseStreamResult&)> done) = 0;
  /// Aborts (C5).
  virtual void abort() = 0;
  /// The producer's counters and gauges (takes its lock).
  [[nodiscard]] virtual ProducerAdapterStats stats() const = 0;
  /// True when flush, close and close_stream outcomes are callbacks on the dispatcher
  /// (Asio); false when they are blocking calls returning (the blocking producer).
  [[nodiscard]] virtual bool outcomes_are_callbacks() const = 0;
  /// Destroys the producer (C5: aborts unless closed; its callbacks run) and joins every
  /// thread the shim started.
  virtual void shutdown() = 0;
};

/// Creates the adapter's producer with `options` (its own session: C4, owned). Errors
/// name the invalid option as the adapter does.
tl::expected<std::unique_ptr<AdapterShim>, std::string> make_adapter_shim(
    AdapterKind kind, ds::ProducerOptions options, std::function<void(std::exception_ptr)> on_callback_exception);

}  // namespace prodsm::conformance::detail
