// SPDX-License-Identifier: Apache-2.0
#pragma once
// Progress on stderr: the line `prodsm produce` redraws on a terminal (Progress), and the
// lines `prodsm bench` prints every --report-interval-ms (ProgressReporter).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "bench_support.hpp"
#include "figures.hpp"
#include "interrupt.hpp"

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

/// The progress lines of a run: a thread of its own prints one line to stderr every
/// `interval_ms` (records submitted and acknowledged in the window, records/s, MiB/s),
/// whatever the submitting loop is doing — waiting for capacity, or the final flush —
/// until stop(). Signals stay with the main thread. P: asio::Producer or S2Producer.
template <class P>
class ProgressReporter {
 public:
  ProgressReporter(P& producer, std::uint64_t interval_ms, std::uint64_t record_bytes)
      : producer_{producer}, interval_{interval_ms}, record_bytes_{record_bytes} {
    if (interval_ms == 0) return;
    mask_interrupts(true);  // the thread inherits the blocked mask; the handler is left as it is
    thread_ = std::thread([this] { run(); });
    mask_interrupts(false);
  }
  ~ProgressReporter() { stop(); }
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// Records the loop has had accepted so far (the loop's thread).
  void add_sent(std::uint64_t n) noexcept { sent_.fetch_add(n, std::memory_order_relaxed); }

  /// Ends the reports (no line after it returns).
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    auto window_start = std::chrono::steady_clock::now();
    std::uint64_t window_sent = 0;
    std::uint64_t window_acked = 0;
    std::unique_lock lock(mu_);
    while (!cv_.wait_until(lock, window_start + interval_, [this] { return stopping_; })) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - window_start).count();
      const std::uint64_t sent = sent_.load(std::memory_order_relaxed);
      const std::uint64_t acked = producer_.stats().core.records_succeeded;
      std::fprintf(stderr, "%s\n", window_line(sent - window_sent, acked - window_acked, secs, record_bytes_).c_str());
      window_start = now;
      window_sent = sent;
      window_acked = acked;
    }
  }

  P& producer_;
  const std::chrono::milliseconds interval_;
  const std::uint64_t record_bytes_;
  std::atomic<std::uint64_t> sent_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace prodsm::tools
