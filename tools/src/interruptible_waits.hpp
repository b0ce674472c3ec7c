// SPDX-License-Identifier: Apache-2.0
#pragma once
// The waits of `prodsm produce` (Durable Streams and s2:// alike) that an interrupt must
// be able to end (interrupt.hpp): a submit waiting for capacity ends at the first
// interrupt (the input stops there), and a flush, stream close or close waiting for
// acknowledgements ends at the second, which aborts the producer (C5) so that the run
// still says how many records were acknowledged and how to append the rest.

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string_view>

#include "interrupt.hpp"
#include "prodsm/producer.hpp"
#include "tl/expected.hpp"

namespace prodsm::tools {

/// What `prodsm produce`'s first interrupt writes (set_interrupt_message) while it reads input.
inline constexpr const char* kProduceInterruptMessage =
    "prodsm produce: interrupted: input stopped; waiting until every record already accepted is acknowledged (at "
    "most --delivery-timeout-ms); interrupt again to abort (records not yet acknowledged then fail, and the summary "
    "says how many were acknowledged)\n";

/// What `prodsm produce`'s second interrupt writes (abort_on_second_interrupt).
inline constexpr const char* kProduceAbortMessage =
    "prodsm produce: aborting: records not yet acknowledged fail now (those already sent may still reach the "
    "stream); interrupt once more to kill at once\n";

/// How often these waits look at the interrupt flags: 50 ms.
inline constexpr std::chrono::milliseconds kInterruptPollInterval{50};

/// The result of `future`, waited for kInterruptPollInterval at a time; `on_poll` runs
/// after each slice (ack_wait_notices). The first look that finds abort_requested() runs
/// `abort()` (once: the producer's abort, C5, which fails what is pending with `aborted`
/// and so makes the future ready); a future that never gets ready is ended by the third
/// signal, which kills.
template <class T, class Abort>
T wait_or_abort(std::future<T> future, Abort&& abort, const std::function<void()>& on_poll) {
  bool aborted = false;
  while (future.wait_for(kInterruptPollInterval) != std::future_status::ready) {
    on_poll();
    if (!aborted && abort_requested()) {
      aborted = true;
      abort();
    }
  }
  return future.get();
}

/// `producer.submit_blocking(record, timeout)`, waiting for capacity (R1) at most
/// kInterruptPollInterval at a time so that an interrupt is seen: the submit's result, or
/// nullopt when the first interrupt came while it waited (the record was not accepted;
/// the input stops before it). `timeout` bounds the whole wait as it bounded the one call;
/// `on_poll` runs after each slice that did not end it.
template <class Producer>
std::optional<tl::expected<Ticket, Rejection>> submit_unless_interrupted(Producer& producer, std::string_view record,
                                                                         std::chrono::milliseconds timeout,
                                                                         const std::function<void()>& on_poll) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    auto r = producer.submit_blocking(record, std::clamp(left, std::chrono::milliseconds{0}, kInterruptPollInterval));
    if (r || r.error().reason != RejectReason::would_block || left <= kInterruptPollInterval) return r;
    if (interrupted()) return std::nullopt;
    on_poll();
  }
}

}  // namespace prodsm::tools
