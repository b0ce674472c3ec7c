// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file config.hpp
/// Producer configuration and its validation (B2, B3, R1, R3, E4, E6).
/// Every field has a default, a documented range and a unit; invalid values are
/// rejected with a ConfigError naming the field, never clamped (B2, B3).

#include <chrono>
#include <cstdint>
#include <string>

#include "prodsm/time.hpp"

namespace prodsm {

/// How long a partial batch may wait for more records (B1, B2).
/// Three distinct values: a positive duration; zero ("no intentional delay": the batch
/// is due the instant its first record arrives, so it is sealed at the very next
/// handle_timeout, together with whatever was submitted before that call); disabled
/// (no timer: a batch is sealed only when full, on flush, on close or on would-block).
class Linger {
 public:
  /// Linger for `d` (ns) after the batch's first record. 0 = no intentional delay.
  /// Negative or over kMaxLinger is rejected by validation (field "linger").
  static constexpr Linger after(Duration d) noexcept { return Linger{d, false}; }
  /// No time-based sealing at all. A partial batch then waits for the next flush, close,
  /// a full batch or a would-block: a caller that submits a last record and then neither
  /// flushes nor closes sees it fail with `delivery_timeout` (definite: never sent) once
  /// delivery_timeout_ns passed (E6). Flush after the last record of a burst.
  static constexpr Linger disabled() noexcept { return Linger{Duration{0}, true}; }
  /// True for Linger::disabled().
  [[nodiscard]] constexpr bool is_disabled() const noexcept { return disabled_; }
  /// The linger duration (ns); 0 when disabled.
  [[nodiscard]] constexpr Duration duration_ns() const noexcept { return d_; }
  friend constexpr bool operator==(Linger, Linger) = default;

  /// Longest accepted linger: 1 hour.
  static constexpr Duration kMaxLinger = std::chrono::hours{1};

 private:
  constexpr Linger(Duration d, bool disabled) noexcept : d_{d}, disabled_{disabled} {}
  Duration d_;
  bool disabled_;
};

/// Which failed attempts are retried (E4).
enum class RetryMode : std::uint8_t {
  /// Retry definite failures (nothing appended), and indefinite ones (connection lost,
  /// request timeout) only when the protocol's sequencing makes a resend safe
  /// (Durable Streams idempotent producer; S2 match_seq_num). Without sequencing an
  /// indefinite failure is terminal whatever the mode (E4).
  all,
  /// Retry only definite failures: a resend can never have side effects.
  no_side_effects,
};

/// Retry and backoff (E4, R3). The wait before the k-th backing-off retry is
/// min(backoff_max_ns, backoff_initial_ns * backoff_multiplier^(k-1)), jittered uniformly
/// into [half, full] from a deterministic generator seeded with jitter_seed (D2); a
/// server's Retry-After raises it to at least that long (delay-seconds, or an IMF-fixdate
/// measured from the response's Date; at most 24 h: http::retry_after). The first retry after a lost
/// connection goes out at once (detail/backoff.hpp). In the usual names: max retries =
/// max_attempts - 1, initial delay, max delay, multiplier.
struct RetryPolicy {
  /// Sends per batch including the first, 1..1000 (1 = never retry). Default 1000: with
  /// the default backoff that is hours of retries, so delivery_timeout_ns (E6) is the
  /// bound that ends them, as Kafka's retries = MAX_INT under delivery.timeout.ms. Set it
  /// low to fail fast while the server is down.
  std::uint32_t max_attempts = 1000;
  /// First backoff (ns), 1 us..backoff_max_ns (no retry loop without a pause). Default 5 ms.
  Duration backoff_initial_ns = std::chrono::milliseconds{5};
  /// Longest backoff (ns), backoff_initial_ns..10 min. Default 10 s.
  Duration backoff_max_ns = std::chrono::seconds{10};
  /// Growth of the backoff per retry, 1.0..16.0 (1.0: constant). Default 2.0.
  double backoff_multiplier = 2.0;
  /// Which failures are retried. Default all.
  RetryMode mode = RetryMode::all;
  /// Seed of the jitter generator; the same seed gives the same backoffs (D2).
  std::uint64_t jitter_seed = 0x70726f64736d2121ULL;

  friend bool operator==(const RetryPolicy&, const RetryPolicy&) = default;
};

/// A rejected configuration field (B3): `field` is the config field's name as written
/// in C++ (e.g. "max_batch_bytes", "retry.max_attempts", "protocol.idempotent.producer_id").
struct ConfigError {
  std::string field;   ///< the offending field
  std::string reason;  ///< why, with the accepted range and the value given
  /// "<field>: <reason>"
  [[nodiscard]] std::string message() const { return field + ": " + reason; }
  /// The same as message(), under the name every error-like type of prodsm has.
  [[nodiscard]] std::string describe() const { return message(); }
  friend bool operator==(const ConfigError&, const ConfigError&) = default;
};

/// Protocol-independent bounds on the Producer's knobs (R3).
struct Bounds {
  static constexpr std::uint64_t kMaxUnackedBytesCap = 4ULL << 30;         ///< 4 GiB
  static constexpr std::uint32_t kMaxInFlightCap = 64;                     ///< batches sent and unanswered
  static constexpr std::uint32_t kMaxUnackedBatchesCap = 1U << 16;         ///< batches sealed and not completed
  static constexpr std::uint32_t kMaxPendingBarriersCap = 1U << 16;        ///< flushes not yet completed
  static constexpr std::uint32_t kMaxAttemptsCap = 1000;                   ///< sends per batch, the first included
  static constexpr Duration kMaxDeliveryTimeout = std::chrono::hours{24};  ///< longest delivery_timeout_ns (E6)
  static constexpr Duration kMaxBackoff = std::chrono::minutes{10};        ///< longest backoff_max_ns (E4)
  static constexpr Duration kMinBackoff = std::chrono::microseconds{1};    ///< shortest backoff_initial_ns (E4)
  static constexpr double kMaxBackoffMultiplier = 16.0;                    ///< largest backoff_multiplier (E4)
};

/// Configuration of a Producer<Policy>. Defaults are the cross-SDK contract's.
template <class Policy>
struct ProducerConfig {
  /// Linger (B2). Default 5 ms.
  Linger linger = Linger::after(std::chrono::milliseconds{5});
  /// Most records in one batch, 1..Policy::kMaxBatchRecordsCap (B1, B3).
  std::uint32_t max_batch_records = Policy::kDefaultMaxBatchRecords;
  /// Most bytes in one batch, as the protocol meters them (B1, B3, B4);
  /// Policy::kMinBatchBytes..Policy::kMaxBatchBytesCap.
  std::uint64_t max_batch_bytes = Policy::kDefaultMaxBatchBytes;
  /// Most metered bytes accepted and not yet completed, buffered or in flight (R1);
  /// max_batch_bytes..4 GiB. Default 5 MiB.
  std::uint64_t max_unacked_bytes = 5ULL << 20;
  /// Most batches accepted and not yet completed, including the partial one (R3);
  /// max_in_flight..65536. Default 1024.
  std::uint32_t max_unacked_batches = 1024;
  /// Most batches with an attempt outstanding (R1), 1..64. Default 5. Plain appends (no
  /// sequencing: no Durable Streams producer id, no S2 match_seq_num) keep their order
  /// only with 1: a server may apply pipelined appends concurrently (the reference server
  /// does), and batches behind a refused one may land before its resend (E4).
  std::uint32_t max_in_flight = 5;
  /// Most flush barriers pending at once (R3), 1..65536. Default 1024.
  std::uint32_t max_pending_barriers = 1024;
  /// Every record completes within this time (ns) of its submit, or fails with
  /// delivery_timeout (E6). Must exceed the linger; at most 24 h. Default 120 s.
  Duration delivery_timeout_ns = std::chrono::seconds{120};
  /// Retry and backoff (E4).
  RetryPolicy retry{};
  /// What differs per wire protocol: body format and sequencing (S1, S2).
  typename Policy::Options protocol{};
};

}  // namespace prodsm
