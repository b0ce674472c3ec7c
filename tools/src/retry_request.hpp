// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm produce --create`'s stream creation, retried as the appends are (E4): a create
// is idempotent at the server (Durable Streams: PUT with the same configuration answers
// 200; S2: a stream that exists is fine), so a retryable failure — 429, 5xx, a lost
// connection, a request timeout — is sent again by the appends' backoff rule
// (prodsm::detail::backoff_delay: a lost connection at once the first time, else 100 ms
// doubling to 5 s with equal jitter, or the server's Retry-After), up to --max-attempts attempts and
// within --delivery-timeout-ms, told on stderr at most once a second unless -q. An
// interrupt ends the waiting (the caller sees tools::interrupted()).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <tl/expected.hpp>

#include "commands.hpp"
#include "connection_flags.hpp"
#include "interrupt.hpp"
#include "prodsm/config.hpp"
#include "prodsm/detail/backoff.hpp"
#include "prodsm/error.hpp"

namespace prodsm::tools {

/// How retry_request retries.
struct RetryBounds {
  std::uint32_t max_attempts = 1000;                         ///< --max-attempts (attempts in all)
  std::chrono::milliseconds give_up_after{120'000};          ///< --delivery-timeout-ms (ms from the first attempt)
  bool quiet = false;                                        ///< -q: no retry lines
  const char* what = "prodsm produce: creating the stream";  ///< the retry line's prefix
};

/// Runs `attempt` until it succeeds, fails with an error that is not retryable, or
/// `bounds` end it, and returns its last result. `saw_indefinite` (may be null) is set
/// when an attempt failed indefinite (it may have been applied: a later "it exists"
/// may be this run's own creation).
template <class T>
tl::expected<T, Error> retry_request(const std::function<tl::expected<T, Error>()>& attempt, const RetryBounds& bounds,
                                     bool* saw_indefinite = nullptr) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  // The appends' backoff rule (E4), with this request's bounds.
  RetryPolicy policy;
  policy.backoff_initial_ns = std::chrono::milliseconds{100};
  policy.backoff_max_ns = std::chrono::seconds{5};
  policy.backoff_multiplier = 2.0;
  prodsm::detail::SplitMix64 rng{std::random_device{}()};
  std::optional<Clock::time_point> told;
  for (std::uint32_t n = 1;; ++n) {
    auto r = attempt();
    if (r || !r.error().retryable || n >= bounds.max_attempts || interrupted() || abort_requested()) return r;
    if (saw_indefinite && r.error().certainty == Certainty::indefinite) *saw_indefinite = true;
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(prodsm::detail::backoff_delay(policy, n, r.error(), rng));
    const auto resend_at = Clock::now() + wait;
    if (resend_at - started > bounds.give_up_after) return r;
    if (!bounds.quiet && (!told || Clock::now() - *told >= std::chrono::seconds{1})) {
      told = Clock::now();
      std::fprintf(stderr, "%s: attempt %u failed: %s; retrying in %lld ms\n", bounds.what, n,
                   r.error().describe().c_str(), static_cast<long long>(wait.count()));
    }
    while (Clock::now() < resend_at) {  // in slices, so an interrupt ends the wait
      if (interrupted() || abort_requested()) return r;
      std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds{50}, resend_at - Clock::now()));
    }
  }
}

/// Tells stderr why creating `target` failed (retry_request's last result) and returns
/// the exit status: 130 when an interrupt ended the retries, else 3. Nothing was appended.
inline int report_create_failure(const std::string& target, const Error& error) {
  if (interrupted() || abort_requested()) {
    std::fprintf(stderr, "prodsm produce: interrupted while creating %s; nothing was appended\n", target.c_str());
    return kExitInterrupted;
  }
  std::fprintf(stderr, "prodsm produce: creating %s failed: %s; nothing was appended\n", target.c_str(),
               error.describe().c_str());
  if (const auto hint = plain_http_at_tls_port_hint(target, error); !hint.empty()) {
    std::fprintf(stderr, "prodsm produce: %s\n", hint.c_str());
  }
  return kExitServerError;
}

}  // namespace prodsm::tools
