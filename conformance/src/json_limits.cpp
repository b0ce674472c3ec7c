// SPDX-License-Identifier: Apache-2.0
#include "prodsm/conformance/json_limits.hpp"

#include <cmath>
#include <fstream>

namespace prodsm::conformance {

tl::expected<nlohmann::json, std::string> parse_json_limited(std::string_view text, std::size_t max_depth) {
  // nlohmann's parser itself is iterative; what recurses is copying and destroying a
  // value. The callback sees every value's depth first and drops what is too deep, so
  // no deep value is ever built.
  bool too_deep = false;
  const auto callback = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (static_cast<std::size_t>(depth) > max_depth) too_deep = true;
    return !too_deep;
  };
  nlohmann::json value = nlohmann::json::parse(text, callback, false);
  if (too_deep) return tl::unexpected("nested deeper than " + std::to_string(max_depth) + " levels");
  if (value.is_discarded()) return tl::unexpected(std::string("not valid JSON"));
  return value;
}

tl::expected<nlohmann::json, std::string> read_json_file(const std::string& path, std::size_t max_depth) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return tl::unexpected(std::string("cannot be read"));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxJsonFileBytes) {
      return tl::unexpected("larger than " + std::to_string(kMaxJsonFileBytes) + " bytes");
    }
  }
  return parse_json_limited(text, max_depth);
}

std::optional<Duration> milliseconds_in_range(double ms, Duration max) {
  if (!std::isfinite(ms) || ms < 0) return std::nullopt;
  if (ms > std::chrono::duration<double, std::milli>(max).count()) return std::nullopt;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace prodsm::conformance
