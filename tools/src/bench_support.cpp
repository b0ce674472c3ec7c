// SPDX-License-Identifier: Apache-2.0
// `prodsm bench`'s helpers (bench_support.hpp).
#include "bench_support.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

#include "figures.hpp"

namespace prodsm::tools {

/// Every k-th record is timed: k keeps the samples at most kMaxLatencySamples and at
/// most one in kMinSampleInterval, with at least min(records, 1000) samples.
std::uint64_t sample_interval(std::uint64_t records) {
  const std::uint64_t cap = (records + kMaxLatencySamples - 1) / kMaxLatencySamples;
  const std::uint64_t light = std::min<std::uint64_t>(kMinSampleInterval, records / 1000);
  return std::max<std::uint64_t>({1, cap, light});
}

/// CPU time this process has used so far (user + system, every thread), in ns.
std::uint64_t process_cpu_ns() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto ns = [](const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_usec) * 1'000ULL;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

/// One progress line for a window of `secs` seconds: records submitted and acknowledged in it.
std::string window_line(std::uint64_t sent, std::uint64_t acked, double secs, std::uint64_t record_bytes) {
  char buf[200];
  const double rate = secs > 0 ? static_cast<double>(sent) / secs : 0;
  std::snprintf(buf, sizeof buf, "%llu records sent, %llu acknowledged, %.1f records/sec (%s/sec)",
                static_cast<unsigned long long>(sent), static_cast<unsigned long long>(acked), rate,
                format_bytes(rate * static_cast<double>(record_bytes)).c_str());
  return buf;
}

/// A bench record: any bytes will do; a printable pattern keeps the stream readable.
std::string bench_record(std::uint64_t bytes) {
  std::string record(bytes, 'x');
  for (std::size_t i = 0; i < record.size(); ++i) record[i] = static_cast<char>('a' + i % 26);
  record.back() = '\n';
  return record;
}

}  // namespace prodsm::tools
