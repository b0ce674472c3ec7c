// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file config_validation.hpp
/// Internal: the Producer's configuration checks (B3): every limit in its range, each
/// error naming the field, then the policy's own checks. Producer<Policy>::validate and
/// create() call it.

#include <optional>
#include <string>

#include "prodsm/config.hpp"
#include "prodsm/error.hpp"

namespace prodsm::detail {

/// The first field of `r` out of its range (E4, B3), named `retry.<field>`
/// ("retry.backoff_multiplier: must be in 1.0..16.0 (got 100.000000)"), or nullopt. The
/// Producer's and a catch-up read's (ds::ReadOptions) retry policies are held to it.
inline std::optional<ConfigError> validate_retry_policy(const RetryPolicy& r) {
  auto bad = [](const char* field, std::string reason) {
    return std::optional<ConfigError>(ConfigError{std::string("retry.") + field, std::move(reason)});
  };
  if (r.max_attempts < 1 || r.max_attempts > Bounds::kMaxAttemptsCap) {
    return bad("max_attempts", "must be in 1.." + std::to_string(Bounds::kMaxAttemptsCap) + " (got " +
                                   std::to_string(r.max_attempts) + ")");
  }
  auto ns_range = [](Duration lo, Duration hi, Duration got) {
    return "must be in " + std::to_string(lo.count()) + ".." + std::to_string(hi.count()) + " ns (got " +
           std::to_string(got.count()) + " ns)";
  };
  if (r.backoff_max_ns < Bounds::kMinBackoff || r.backoff_max_ns > Bounds::kMaxBackoff) {
    return bad("backoff_max_ns", ns_range(Bounds::kMinBackoff, Bounds::kMaxBackoff, r.backoff_max_ns));
  }
  if (r.backoff_initial_ns < Bounds::kMinBackoff || r.backoff_initial_ns > r.backoff_max_ns) {
    return bad("backoff_initial_ns", ns_range(Bounds::kMinBackoff, r.backoff_max_ns, r.backoff_initial_ns) +
                                         "; it must not exceed retry.backoff_max_ns");
  }
  // Written so that NaN fails too.
  if (!(r.backoff_multiplier >= 1.0 && r.backoff_multiplier <= Bounds::kMaxBackoffMultiplier)) {
    return bad("backoff_multiplier", "must be in 1.0..16.0 (got " + std::to_string(r.backoff_multiplier) + ")");
  }
  if (r.mode != RetryMode::all && r.mode != RetryMode::no_side_effects) {
    return bad("mode", "must be RetryMode::all or RetryMode::no_side_effects");
  }
  return std::nullopt;
}

/// The first field of `c` out of its range (B3: "max_batch_bytes: must be in ..."), or
/// the policy's own error, or nullopt.
template <class Policy>
std::optional<ConfigError> validate_config(const ProducerConfig<Policy>& c) {
  auto bad = [](std::string field, std::string reason) {
    return std::optional<ConfigError>(ConfigError{std::move(field), std::move(reason)});
  };
  auto range = [](auto lo, auto hi, auto got) {
    return "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + std::to_string(got) + ")";
  };
  if (!c.linger.is_disabled() && (c.linger.duration_ns().count() < 0 || c.linger.duration_ns() > Linger::kMaxLinger)) {
    return bad("linger", "must be 0.." + std::to_string(Linger::kMaxLinger.count()) +
                             " ns or Linger::disabled() (got " + std::to_string(c.linger.duration_ns().count()) +
                             " ns)");
  }
  if (c.max_batch_records < 1 || c.max_batch_records > Policy::kMaxBatchRecordsCap) {
    return bad("max_batch_records", range(1U, Policy::kMaxBatchRecordsCap, c.max_batch_records));
  }
  if (c.max_batch_bytes < Policy::kMinBatchBytes || c.max_batch_bytes > Policy::kMaxBatchBytesCap) {
    return bad("max_batch_bytes", range(Policy::kMinBatchBytes, Policy::kMaxBatchBytesCap, c.max_batch_bytes));
  }
  if (c.max_unacked_bytes < c.max_batch_bytes || c.max_unacked_bytes > Bounds::kMaxUnackedBytesCap) {
    return bad("max_unacked_bytes", range(c.max_batch_bytes, Bounds::kMaxUnackedBytesCap, c.max_unacked_bytes) +
                                        "; it must be at least max_batch_bytes");
  }
  if (c.max_in_flight < 1 || c.max_in_flight > Bounds::kMaxInFlightCap) {
    return bad("max_in_flight", range(1U, Bounds::kMaxInFlightCap, c.max_in_flight));
  }
  if (c.max_unacked_batches < c.max_in_flight || c.max_unacked_batches > Bounds::kMaxUnackedBatchesCap) {
    return bad("max_unacked_batches", range(c.max_in_flight, Bounds::kMaxUnackedBatchesCap, c.max_unacked_batches) +
                                          "; it must be at least max_in_flight");
  }
  if (c.max_pending_barriers < 1 || c.max_pending_barriers > Bounds::kMaxPendingBarriersCap) {
    return bad("max_pending_barriers", range(1U, Bounds::kMaxPendingBarriersCap, c.max_pending_barriers));
  }
  const Duration min_delivery = c.linger.is_disabled() ? Duration{0} : c.linger.duration_ns();
  if (c.delivery_timeout_ns <= min_delivery || c.delivery_timeout_ns > Bounds::kMaxDeliveryTimeout) {
    return bad("delivery_timeout_ns", "must be above the linger (" + std::to_string(min_delivery.count()) +
                                          " ns) and at most " + std::to_string(Bounds::kMaxDeliveryTimeout.count()) +
                                          " ns (got " + std::to_string(c.delivery_timeout_ns.count()) + " ns)");
  }
  if (auto why = validate_retry_policy(c.retry)) return why;
  return Policy::validate(c.protocol);
}

}  // namespace prodsm::detail
