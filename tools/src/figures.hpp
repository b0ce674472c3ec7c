// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small formatting helpers for the figures `prodsm produce` and `prodsm bench` print.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace prodsm::tools {

/// "512 B", "1.5 KiB", "93.2 MiB": binary units, one decimal above bytes.
inline std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

/// The nearest-rank p-th percentile (p in 0..100) of already sorted values; 0 when empty.
inline double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(rank, sorted.size() - 1)];
}

/// The nearest-rank p-th percentile of `values` (copied and sorted); 0 when empty.
inline double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, p);
}

}  // namespace prodsm::tools
