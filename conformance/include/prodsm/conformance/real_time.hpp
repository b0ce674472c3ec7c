// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file real_time.hpp
/// How a wire target — prodsm's adapters (adapter_targets.hpp), or another SDK served
/// over its own HTTP client (external.hpp, `--serve`) — runs on the real clock: trace time
/// is the clock divided by a time scale, and every step ends at quiescence
/// (docs/conformance.md, "Wire targets").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "prodsm/time.hpp"

namespace prodsm::conformance {

/// How a wire target maps trace time onto the real clock. Every field is bounded.
struct RealTimeOptions {
  /// Real time per unit of trace time, 1..1000: each duration of a vector's configuration
  /// (linger, delivery timeout, backoff) and each advance is multiplied by it (each
  /// duration capped at its field's maximum), and measured instants are divided by it. 10:
  /// 1 ms of trace time is 10 ms on the clock, so the harness's own work between commands
  /// (about 0.1-1 ms) stays a small fraction of the shortest timer of a vector (1 ms).
  std::uint32_t time_scale = 10;
  /// Most real time one run may spend in advances (ns), 1 ms..10 min: an advance past it
  /// is refused (a vector needing it is not applicable; a generated one is skipped).
  /// Default 2 s: every vector whose advances add up to at most 200 ms of trace time runs
  /// at the default scale.
  Duration max_advance_real_ns = std::chrono::seconds{2};
  /// A step ends once the counters agree (every send the producer made arrived, every
  /// completion's callback ran, every answer was read) and nothing new happened for this
  /// long (real ns), 100 us..1 s. Default 2 ms.
  Duration quiet_real_ns = std::chrono::milliseconds{2};
  /// Most real time a step waits for that (ns), 1 ms..1 min. Default 2 s.
  Duration settle_timeout_real_ns = std::chrono::seconds{2};
  /// The first field out of range, as "<field>: <reason>", or nullopt.
  [[nodiscard]] std::optional<std::string> validate() const;
};

}  // namespace prodsm::conformance
