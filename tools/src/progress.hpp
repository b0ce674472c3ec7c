// SPDX-License-Identifier: Apache-2.0
#pragma once
// The progress line of `prodsm produce` on a terminal: records, bytes, bytes/s and, when
// the input's size is known, a bar; redrawn on stderr at most every 100 ms.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "figures.hpp"

namespace prodsm::tools {

/// Draws the progress line (nothing when not `enabled`). `total_bytes`: the input's size,
/// or 0 when unknown (no bar).
class Progress {
 public:
  Progress(bool enabled, std::uint64_t total_bytes) : enabled_{enabled}, total_{total_bytes} {}
  /// Redraws the line for `records` read and `bytes` consumed so far, unless it was
  /// drawn less than 100 ms ago and not `force`d.
  void update(std::uint64_t records, std::uint64_t bytes, bool force = false) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_ < std::chrono::milliseconds{100}) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::string bar;
    if (total_ > 0) {
      const double frac = std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_));
      const int filled = static_cast<int>(frac * 30);
      bar = " [" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(30 - filled), '.') + "] " +
            std::to_string(static_cast<int>(frac * 100)) + "%";
    }
    std::fprintf(stderr, "\r%12llu records %12s %10s/s%s", static_cast<unsigned long long>(records),
                 format_bytes(static_cast<double>(bytes)).c_str(),
                 format_bytes(secs > 0 ? static_cast<double>(bytes) / secs : 0).c_str(), bar.c_str());
    std::fflush(stderr);
  }
  /// Ends the line (a newline), when it was drawn at all.
  void finish() {
    if (enabled_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  std::uint64_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace prodsm::tools
