// SPDX-License-Identifier: Apache-2.0
// http::Pool's time (see pool.cpp): the stall timeout estimated from the head-of-line
// waits of the responses, its doublings after stalls, the next deadline and its handling.
#include <algorithm>

#include "prodsm/http/pool.hpp"

namespace prodsm::http {

Duration Pool::undoubled_stall_timeout() const noexcept {
  const Duration base =
      have_sample_ ? 2 * std::max(wait_max_current_, wait_max_previous_) : options_.transport.stall.initial_ns;
  // At least min_ns, so that the doublings double the timeout in use (min_ns would
  // absorb a doubled base below it).
  return std::max(base, options_.transport.stall.min_ns);
}

Duration Pool::stall_timeout() const noexcept {
  if (!options_.transport.stall.enabled) return Duration{0};
  const Duration limit = options_.transport.request_timeout_ns;
  Duration base = undoubled_stall_timeout();
  // min() rather than clamp(): stall.min_ns may exceed request_timeout_ns (both valid),
  // which clamp() forbids (undefined behaviour).
  for (std::uint32_t i = 0; i < stall_backoff_ && base < limit; ++i) base *= 2;
  return std::min(base, limit);
}

/// Sliding maximum of the head-of-line waits: two buckets of kWaitBucket samples, so a
/// long wait is remembered for 128 to 256 responses.
void Pool::note_sample(Duration wait) {
  have_sample_ = true;
  wait_max_current_ = std::max(wait_max_current_, wait);
  if (++bucket_samples_ == kWaitBucket) {
    wait_max_previous_ = wait_max_current_;
    wait_max_current_ = Duration{0};
    bucket_samples_ = 0;
  }
  // A response came: at most kStallHeldDoublings of the doublings since the last response
  // stay (more would switch stall detection off under frequent swallowed requests), as
  // many as keep the timeout within kStallHeldTimeoutNs, and
  // each kStallHoldResponses responses in a row without a stall take one off (one fast
  // response does not end them, or a server answering some requests slowly would have
  // every slow one cut, never measured).
  // Held doublings also keep the timeout within kStallHeldTimeoutNs: 64x a wait that is
  // already long would make every swallowed request cost tens of seconds.
  std::uint32_t held = 0;
  for (Duration t = undoubled_stall_timeout(); held < kStallHeldDoublings && 2 * t <= kStallHeldTimeoutNs; t *= 2) {
    ++held;
  }
  stall_backoff_ = std::min(stall_backoff_, held);
  if (++responses_since_stall_ >= kStallHoldResponses) {
    responses_since_stall_ = 0;
    if (stall_backoff_ > 0) --stall_backoff_;
  }
}

std::optional<Instant> Pool::next_deadline() const {
  std::optional<Instant> when;
  const Duration stall = stall_timeout();
  for (const Slot& s : slots_) {
    if (auto d = s.connection.next_deadline(stall)) when = when ? std::min(*when, *d) : *d;
  }
  return when;
}

void Pool::handle_timeout(Instant now) {
  now = latest_now_.observe(now);
  // A stall on one connection doubles the stall timeout the others were just looked at
  // with, and a connection's second look belongs to the stall deadline its first found
  // passed: look again with the new timeout, so every deadline left is after `now` (D3).
  // Ends: the timeout changes only when a stall closes a connection.
  for (Duration stall = stall_timeout();;) {
    for (Slot& s : slots_) {
      const auto before = s.connection.state();
      s.connection.handle_timeout(now, stall);
      after_event(s, before);
    }
    if (const Duration after = stall_timeout(); after != stall) {
      stall = after;
    } else {
      break;
    }
  }
  dispatch(now);
  sweep();
}

}  // namespace prodsm::http
