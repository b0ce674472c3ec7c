// SPDX-License-Identifier: Apache-2.0
#pragma once
// The waits of `prodsm produce` (Durable Streams and s2:// alike) that an interrupt must
// be able to end (interrupt.hpp): a submit waiting for capacity ends at the first
// interrupt (the input stops there), and a flush, stream close or close waiting for
// acknowledgements ends at the second, which aborts the producer (C5) so that the run
// still says how many records were acknowledged and how to append the rest.

#include <asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "interrupt.hpp"
#include "prodsm/error.hpp"
#include "prodsm/producer.hpp"
#include "retry_notices.hpp"
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

/// `prodsm produce --verify` while it reads the stream back: every record was
/// acknowledged, so an interrupt only ends the verification.
inline constexpr const char* kVerifyInterruptMessage =
    "prodsm produce: interrupted: every record was acknowledged; the reading back for --verify stops (not "
    "verified)\n";

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

/// The waits of one `prodsm produce` run on `producer` (asio::Producer or
/// asio::S2Producer, which must outlive this), shared by the Durable Streams and s2://
/// runs: submits through submit_unless_interrupted, flush, stream close and close through
/// wait_or_abort (the second interrupt aborts the producer, and aborted() says so), the
/// run's ack_wait_notices at every poll, and the latency of every flush (ms).
template <class Producer>
class ProduceWaits {
 public:
  /// `accepted`: the run's count of accepted records, read at each poll (the notices'
  /// waiting records are those accepted and neither acknowledged nor failed); `quiet`:
  /// no notices.
  ProduceWaits(Producer& producer, const std::uint64_t& accepted, bool quiet)
      : producer_{producer}, ack_wait_{ack_wait_notices("prodsm produce", quiet, [&producer, &accepted] {
          const auto core = producer.stats().core;
          return std::pair{core.records_succeeded, accepted - core.records_succeeded - core.records_failed};
        })} {}

  /// submit_unless_interrupted on the producer.
  std::optional<tl::expected<Ticket, Rejection>> submit(std::string_view record, std::chrono::milliseconds timeout) {
    return submit_unless_interrupted(producer_, record, timeout, ack_wait_);
  }

  /// wait_or_abort of `future`, the abort being the producer's (C5).
  template <class T>
  T wait(std::future<T> future) {
    return wait_or_abort(
        std::move(future),
        [this] {
          aborted_ = true;
          producer_.abort();
        },
        ack_wait_);
  }

  /// A flush, its latency kept: waited for (through wait(): its error, or nullopt), or
  /// with `wait` false only started (nullopt; the latency is kept when it completes).
  std::optional<Error> flush(bool wait) {
    const auto t0 = std::chrono::steady_clock::now();
    auto record_latency = [latencies = latencies_, t0] {
      std::lock_guard lock(latencies->mu);
      latencies->ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    };
    if (!wait) {
      producer_.async_flush([record_latency](const auto&) { record_latency(); });
      return std::nullopt;
    }
    auto r = this->wait(producer_.async_flush(::asio::use_future));
    record_latency();
    if (!r) return r.error();
    return std::nullopt;
  }

  /// The latencies of the flushes completed so far (ms).
  [[nodiscard]] std::vector<double> flush_latencies_ms() const {
    std::lock_guard lock(latencies_->mu);
    return latencies_->ms;
  }

  /// True once a second interrupt aborted the producer.
  [[nodiscard]] bool aborted() const noexcept { return aborted_; }

 private:
  struct Latencies {  // shared with flushes still running when the run ends
    std::mutex mu;
    std::vector<double> ms;
  };
  Producer& producer_;
  std::function<void()> ack_wait_;
  std::shared_ptr<Latencies> latencies_ = std::make_shared<Latencies>();
  bool aborted_ = false;
};

}  // namespace prodsm::tools
