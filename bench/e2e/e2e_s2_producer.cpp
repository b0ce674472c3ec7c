// SPDX-License-Identifier: Apache-2.0
// End-to-end figures for prodsm's Asio S2 producer against an S2 server (the test server
// of tests/s2-server, or s2-lite): records/s and MB/s for 100-byte records (linger 5 ms)
// with one append in flight (unary, no match_seq_num) and with 5 in flight
// (match_seq_num, pipelined); flush latency p50/p99 with linger 5 ms and 1000 ms.
// Usage: prodsm_bench_e2e_s2 <endpoint-url> <basin> [records] [record-bytes] [flush-iterations]
// Prints one JSON object (bench/e2e/run_s2.sh turns it into the table). No assertions.
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "prodsm/asio/s2_producer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Runner {
  ::asio::io_context io;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard{::asio::make_work_guard(io)};
  std::thread thread{[this] { io.run(); }};
  prodsm::s2::Endpoint endpoint;
  int counter = 0;
  ~Runner() {
    guard.reset();
    thread.join();
  }

  /// A producer to a new stream; `pipelined`: match_seq_num from 0 and 5 appends in flight.
  prodsm::asio::S2Producer make(const std::string& name, prodsm::Linger linger, bool pipelined) {
    prodsm::asio::S2ProducerOptions o;
    o.endpoint = endpoint;
    o.stream = "bench-prodsm-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    o.producer.linger = linger;
    o.producer.delivery_timeout_ns = std::chrono::minutes{10};
    if (pipelined) {
      o.producer.protocol.match_seq_num = 0;
      o.producer.max_in_flight = 5;
    }
    auto p = prodsm::asio::S2Producer::create(io.get_executor(), o).value();
    auto request = prodsm::s2::encode_create_stream(o.endpoint, o.stream, {});
    auto response = p.session()->async_exchange(std::move(request).value(), ::asio::use_future).get();
    auto created = response ? prodsm::s2::classify_create_stream(*response)
                            : tl::expected<bool, prodsm::Error>(tl::unexpected(response.error()));
    if (!created) std::fprintf(stderr, "create failed: %s\n", created.error().describe().c_str());
    return p;
  }
};

std::string throughput(Runner& r, bool pipelined, std::size_t records, std::size_t record_bytes) {
  auto p =
      r.make(pipelined ? "tp-pipelined" : "tp-unary", prodsm::Linger::after(std::chrono::milliseconds{5}), pipelined);
  const std::string record(record_bytes, 'x');
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < records; ++i) {
    if (!p.submit_blocking(record, std::chrono::minutes{1})) {
      std::fprintf(stderr, "submit failed\n");
      break;
    }
  }
  auto flushed = p.async_flush(::asio::use_future).get();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  (void)p.async_close(::asio::use_future).get();
  const auto stats = p.stats();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"ok\":%s,\"records_per_s\":%.0f,\"mb_per_s\":%.1f,\"seconds\":%.3f,\"batches\":%llu,"
                "\"retries\":%llu,\"connections\":%llu}",
                flushed ? "true" : "false", static_cast<double>(records) / secs,
                static_cast<double>(records * record_bytes) / secs / 1e6, secs,
                static_cast<unsigned long long>(stats.core.batches_sealed),
                static_cast<unsigned long long>(stats.core.retries),
                static_cast<unsigned long long>(stats.session.connections_opened));
  return buf;
}

std::string flush_latency(Runner& r, int linger_ms, int iterations) {
  auto p =
      r.make("flush" + std::to_string(linger_ms), prodsm::Linger::after(std::chrono::milliseconds{linger_ms}), false);
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    (void)p.submit("f");
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
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: prodsm_bench_e2e_s2 <endpoint-url> <basin> [records] [record-bytes] [flush-iterations]\n");
    return 2;
  }
  auto endpoint = prodsm::s2::Endpoint::custom(argv[1], argv[2]);
  if (!endpoint) {
    std::fprintf(stderr, "prodsm_bench_e2e_s2: %s\n", endpoint.error().c_str());
    return 2;
  }
  Runner r;
  r.endpoint = *endpoint;
  const std::size_t records = argc > 3 ? std::stoul(argv[3]) : 1'000'000;
  const std::size_t record_bytes = argc > 4 ? std::stoul(argv[4]) : 100;
  const int iterations = argc > 5 ? std::stoi(argv[5]) : 200;
  const std::string unary = throughput(r, false, records, record_bytes);
  const std::string pipelined = throughput(r, true, records, record_bytes);
  const std::string f5 = flush_latency(r, 5, iterations);
  const std::string f1000 = flush_latency(r, 1000, iterations);
  std::printf(
      "{\"client\":\"prodsm asio::S2Producer\",\"throughput_unary\":%s,\"throughput_pipelined\":%s,"
      "\"flush_linger_5ms\":%s,\"flush_linger_1000ms\":%s}\n",
      unary.c_str(), pipelined.c_str(), f5.c_str(), f1000.c_str());
  return 0;
}
