// SPDX-License-Identifier: Apache-2.0
// End-to-end figures for prodsm's Asio producer against a Durable Streams server:
// records/s and MB/s for 100-byte records (linger 5 ms, idempotent producer), for both
// connection modes; flush latency p50/p99 with linger 5 ms and 1000 ms.
// Usage: prodsm_bench_e2e <base-url> [records] [record-bytes] [flush-iterations]
// Prints one JSON object (bench/e2e/run.sh turns it into the table). No assertions.
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"

namespace {

using Clock = std::chrono::steady_clock;

/// This process's CPU time so far (user + system, every thread), in ns.
std::uint64_t cpu_ns() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto ns = [](const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_usec) * 1'000ULL;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Runner {
  ::asio::io_context io;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard{::asio::make_work_guard(io)};
  std::thread thread{[this] { io.run(); }};
  std::string base;
  int counter = 0;
  ~Runner() {
    guard.reset();
    thread.join();
  }

  prodsm::asio::Producer make(const std::string& name, prodsm::Linger linger, prodsm::asio::ConnectionMode mode) {
    const std::string url =
        base + "/bench-prodsm/" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    prodsm::asio::ProducerOptions o;
    o.url = url;
    o.producer.linger = linger;
    o.producer.delivery_timeout_ns = std::chrono::minutes{10};
    o.producer.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{"bench-" + name, 0, false};
    o.session.mode = mode;
    auto p = prodsm::asio::Producer::create(io.get_executor(), o).value();
    auto created =
        prodsm::asio::async_create_stream(p.session(), p.url(), o.content_type, {}, {}, ::asio::use_future).get();
    if (!created) std::fprintf(stderr, "create failed: %s\n", created.error().describe().c_str());
    return p;
  }
};

std::string throughput(Runner& r, prodsm::asio::ConnectionMode mode, std::size_t records, std::size_t record_bytes) {
  auto p = r.make(mode == prodsm::asio::ConnectionMode::pipelined ? "tp-pipelined" : "tp-pool",
                  prodsm::Linger::after(std::chrono::milliseconds{5}), mode);
  const std::string record(record_bytes - 1, 'x');
  const std::string line = record + "\n";
  const std::uint64_t cpu0 = cpu_ns();
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < records; ++i) {
    if (!p.submit_blocking(line, std::chrono::minutes{1})) {
      std::fprintf(stderr, "submit failed\n");
      break;
    }
  }
  auto flushed = p.async_flush(::asio::use_future).get();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_per_record = static_cast<double>(cpu_ns() - cpu0) / static_cast<double>(records);
  (void)p.async_close(::asio::use_future).get();
  const auto stats = p.stats();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"ok\":%s,\"records_per_s\":%.0f,\"mb_per_s\":%.1f,\"seconds\":%.3f,\"batches\":%llu,"
                "\"gap_resends\":%llu,\"connections\":%llu,\"client_cpu_ns_per_record\":%.1f}",
                flushed ? "true" : "false", static_cast<double>(records) / secs,
                static_cast<double>(records * record_bytes) / secs / 1e6, secs,
                static_cast<unsigned long long>(stats.core.batches_sealed),
                static_cast<unsigned long long>(stats.core.gap_resends),
                static_cast<unsigned long long>(stats.session.connections_opened), cpu_per_record);
  return buf;
}

std::string flush_latency(Runner& r, int linger_ms, int iterations) {
  auto p = r.make("flush" + std::to_string(linger_ms), prodsm::Linger::after(std::chrono::milliseconds{linger_ms}),
                  prodsm::asio::ConnectionMode::pipelined);
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    (void)p.submit("f\n");
    const auto t0 = Clock::now();
    (void)p.async_flush(::asio::use_future).get();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  (void)p.async_close(::asio::use_future).get();
  char buf[128];
  std::snprintf(buf, sizeof buf, "{\"p50_ms\":%.3f,\"p99_ms\":%.3f}", percentile(ms, 50), percentile(ms, 99));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: prodsm_bench_e2e <base-url> [records] [record-bytes] [flush-iterations]\n");
    return 2;
  }
  Runner r;
  r.base = argv[1];
  const std::size_t records = argc > 2 ? std::stoul(argv[2]) : 1'000'000;
  const std::size_t record_bytes = argc > 3 ? std::stoul(argv[3]) : 100;
  const int iterations = argc > 4 ? std::stoi(argv[4]) : 200;
  const std::string pipelined = throughput(r, prodsm::asio::ConnectionMode::pipelined, records, record_bytes);
  const std::string pool = throughput(r, prodsm::asio::ConnectionMode::pool, records, record_bytes);
  const std::string f5 = flush_latency(r, 5, iterations);
  const std::string f1000 = flush_latency(r, 1000, iterations);
  std::printf(
      "{\"client\":\"prodsm asio::Producer\",\"throughput\":%s,\"throughput_pool\":%s,"
      "\"flush_linger_5ms\":%s,\"flush_linger_1000ms\":%s}\n",
      pipelined.c_str(), pool.c_str(), f5.c_str(), f1000.c_str());
  return 0;
}
