// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file pool_exchanges.hpp
/// Internal: the request/response bookkeeping both adapters' sessions keep over their
/// sans-IO http::Pool — the per-attempt header provider, request ids, the handler of
/// every request until its outcome, and the counters other threads read. The session
/// only moves bytes and runs timers around it. Not thread-safe except stats(): the
/// session calls it where it runs (the Asio strand, the blocking I/O thread).

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <tl/expected.hpp>

#include "prodsm/session_options.hpp"
#include "prodsm/time.hpp"

namespace prodsm::detail {

class PoolExchanges {
 public:
  /// Called once with a request's outcome, where the session runs.
  using Handler = std::function<void(ExchangeResult)>;

  PoolExchanges(http::Pool p, SessionOptions o) : pool{std::move(p)}, options{std::move(o)} {}

  http::Pool pool;               ///< the session's connections' state machine
  const SessionOptions options;  ///< as validated (the pool holds its transport part)

  /// Applies the header provider to `request` (this attempt only; its headers checked by
  /// the request's own header_rule, ds::check_extra_header when it has none), gives it an id,
  /// registers `done` and queues the request at `now`. A provider failure completes
  /// `done` at once (header_provider_failed, definite: nothing was sent); `done` may then
  /// start another exchange.
  void enqueue(Instant now, http::Request request, Handler done) {
    const http::HeaderRule rule = request.header_rule != nullptr ? request.header_rule : &ds::check_extra_header;
    if (auto failed = apply_header_provider(options.header_provider, request, rule)) {
      done(tl::unexpected(std::move(*failed)));
      return;
    }
    request.id = http::RequestId{next_request_id_++};
    handlers_.emplace(request.id.value, std::move(done));
    pool.enqueue(now, std::move(request));
  }

  /// Hands the pool's next outcome to its handler (the counters refreshed first, so the
  /// handler's producer sees the failed connect or reconnect that came with it); false
  /// when the pool has none (true also for an outcome whose handler is gone: it is
  /// dropped). The handler may start another exchange.
  bool deliver_one() {
    auto outcome = pool.poll_outcome();
    if (!outcome) return false;
    auto it = handlers_.find(outcome->id.value);
    if (it == handlers_.end()) return true;
    Handler done = std::move(it->second);
    handlers_.erase(it);
    refresh_stats();
    done(std::move(outcome->result));
    return true;
  }

  /// True when no request waits for its outcome.
  [[nodiscard]] bool idle() const noexcept { return handlers_.empty(); }

  /// Copies the pool's counters for stats() (before each handler and after each drive).
  void refresh_stats() {
    std::lock_guard lock(stats_mu_);
    stats_snapshot_ = pool.stats();
  }

  /// The counters as of the last refresh; any thread.
  [[nodiscard]] SessionStats stats() const {
    std::lock_guard lock(stats_mu_);
    return stats_snapshot_;
  }

 private:
  std::unordered_map<std::uint64_t, Handler> handlers_;
  std::uint64_t next_request_id_ = 1;
  mutable std::mutex stats_mu_;
  SessionStats stats_snapshot_;
};

/// Session::create's pool for `host`:`port` (`tls`) and the options as validated, or the
/// first bad field as "session.<field>: ...".
inline tl::expected<std::pair<http::Pool, SessionOptions>, std::string> make_pool(std::string host, std::uint16_t port,
                                                                                  bool tls, SessionOptions options) {
  auto pool = http::Pool::create(std::move(host), port, tls, options);
  if (!pool) return tl::unexpected("session." + pool.error());
  options.http::TransportOptions::operator=(pool->options().transport);  // as validated
  return std::pair{std::move(*pool), std::move(options)};
}

}  // namespace prodsm::detail
