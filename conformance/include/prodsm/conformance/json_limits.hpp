// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_limits.hpp
/// Bounds on the JSON the conformance tooling reads — vector files, verdict files and
/// SDK drivers' replies (R3): a nesting depth (a deeply nested file is an error, never a
/// stack overflow while the value is copied or destroyed), a file size, and numbers of
/// milliseconds that must be finite, non-negative and in range before they become a
/// Duration (an out-of-range double has no defined conversion).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "prodsm/time.hpp"

namespace prodsm::conformance {

/// Deepest nesting accepted (objects and arrays), levels.
inline constexpr std::size_t kMaxJsonDepth = 64;
/// Largest JSON file read, bytes (64 MiB).
inline constexpr std::size_t kMaxJsonFileBytes = 64U << 20;

/// `text` parsed by nlohmann/json, refusing nesting deeper than `max_depth` levels before
/// any deep value is built. Errors: "not valid JSON", "nested deeper than 64 levels".
tl::expected<nlohmann::json, std::string> parse_json_limited(std::string_view text,
                                                             std::size_t max_depth = kMaxJsonDepth);

/// The file at `path` parsed by parse_json_limited. Errors: it cannot be read, is larger
/// than kMaxJsonFileBytes, or does not parse (as above).
tl::expected<nlohmann::json, std::string> read_json_file(const std::string& path,
                                                         std::size_t max_depth = kMaxJsonDepth);

/// A JSON number of milliseconds as a Duration (ns): nullopt when it is not finite, is
/// negative, or exceeds `max`.
std::optional<Duration> milliseconds_in_range(double ms, Duration max);

}  // namespace prodsm::conformance
