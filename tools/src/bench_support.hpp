// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm bench`'s helpers (bench.cpp): latency sampling, the process's CPU time, the
// progress line and the record it sends.

#include <cstddef>
#include <cstdint>
#include <string>

namespace prodsm::tools {

/// At most this many latency samples are kept: every k-th record is timed, k chosen so
/// that a run of any length stays under it (Kafka's perf test samples the same way).
inline constexpr std::uint64_t kMaxLatencySamples = 500'000;
/// Sampling also stays light: at most one record in this many is timed (a timed record
/// takes the per-record path with a callback), but at least min(records, 1000) are.
inline constexpr std::uint64_t kMinSampleInterval = 64;
/// Records handed to the producer in one submit_many call (a reader's chunk).
inline constexpr std::size_t kChunkRecords = 64;

/// Every k-th record of a run of `records` is timed: k keeps the samples at most
/// kMaxLatencySamples and at most one in kMinSampleInterval, with at least
/// min(records, 1000) samples. At least 1.
std::uint64_t sample_interval(std::uint64_t records);

/// CPU time this process has used so far (user + system, every thread), in ns; 0 when
/// the system does not say.
std::uint64_t process_cpu_ns();

/// One progress line for a window of `secs` seconds: records submitted and acknowledged
/// in it, with their rate in records/s and bytes/s (`record_bytes` bytes each).
std::string window_line(std::uint64_t sent, std::uint64_t acked, double secs, std::uint64_t record_bytes);

/// A bench record of `bytes` bytes (at least 1): a printable a–z pattern ending in a
/// newline, so the stream stays readable with `prodsm read`.
std::string bench_record(std::uint64_t bytes);

}  // namespace prodsm::tools
