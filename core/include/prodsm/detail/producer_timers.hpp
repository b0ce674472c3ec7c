// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_timers.hpp
/// Internal: Producer<Policy>::Impl (producer_impl.hpp), part of its definition.
/// The timers: delivery (E6), linger (B1), backoff (E4): deadline_of, next_deadline and
/// handle_timeout (D3: never early).

#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {

template <class Policy>
auto Producer<Policy>::Impl::deadline_of(Timer timer) const -> std::optional<Instant> {
  switch (timer) {
    case Timer::delivery:  // the oldest batch has the earliest delivery deadline
      if (ring.empty()) return std::nullopt;
      return saturating_add(at(0).first_submit, config.delivery_timeout_ns);
    case Timer::linger:
      if (open_ == nullptr || config.linger.is_disabled()) return std::nullopt;
      return saturating_add(open_->first_submit, config.linger.duration_ns());
    case Timer::backoff:  // the oldest batch in backoff gates every later one
      if (backoff_count == 0) return std::nullopt;
      return at(first_backoff()).retry_at;
  }
  return std::nullopt;
}

template <class Policy>
bool Producer<Policy>::Impl::expired(Timer timer, Instant now) const {
  const auto when = deadline_of(timer);
  return when && now >= *when;
}

template <class Policy>
void Producer<Policy>::Impl::handle_timeout(Instant now) {
  now = observe(now);
  if (!live()) return;
  if (expired(Timer::delivery, now)) {  // E6
    std::string why = "record not acknowledged within delivery_timeout_ns";
    if (last_retried_failure) {  // its retry may still have been waiting (a Retry-After past the deadline)
      why += last_retry_sent ? "; the last failure retried: " : "; the last failure (its retry had not gone out): ";
      why += last_retried_failure->describe();
    }
    fail_terminal(make_error(ErrorCode::delivery_timeout, Certainty::definite, false, std::move(why)), &at(0));
    return;
  }
  if (expired(Timer::linger, now)) seal(*open_);  // B1: linger elapsed since the first record
  if (expired(Timer::backoff, now)) end_backoff();
  pump();
}

template <class Policy>
void Producer<Policy>::Impl::end_backoff() {
  for (std::uint32_t i = first_backoff(); i < ring.size(); ++i) {
    Batch& b = at(i);
    if (b.state != BatchState::backoff) continue;
    move_to(b, BatchState::queued);
    --backoff_count;
    note_sendable(i);
  }
}

template <class Policy>
auto Producer<Policy>::Impl::next_deadline() const -> std::optional<Instant> {
  if (!live()) return std::nullopt;
  Instant when = kInstantMax;
  for (const Timer timer : kTimers) {
    if (const auto deadline = deadline_of(timer)) when = std::min(when, *deadline);
  }
  if (when == kInstantMax) return std::nullopt;  // saturated: never
  return when;
}

}  // namespace prodsm
