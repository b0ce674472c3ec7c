// SPDX-License-Identifier: Apache-2.0
// Records/s through the Producer core for 100-byte records, batches of 1000 records
// (well under 1 MiB), acks returned at once — next to the cost of copying the same
// payload bytes into a buffer. Heap allocations per record are counted by a counting
// allocator. Figures go to docs/performance.md; nothing here asserts a timing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "counting_allocator.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/s2.hpp"

namespace {

using namespace std::chrono_literals;
constexpr std::size_t kRecordBytes = 100;
constexpr std::uint32_t kBatchRecords = 1000;

template <class Policy>
struct AckFor;
template <>
struct AckFor<prodsm::DurableStreamsPolicy> {
  // A 15-digit offset fits std::string's inline buffer, so the count below is the
  // core's own. (A real 33-byte offset costs the codec one allocation per batch.)
  static prodsm::DurableStreamsPolicy::Ack make(std::uint64_t n, std::uint32_t) {
    std::string offset = std::to_string(n);
    offset.insert(0, 15 - std::min<std::size_t>(15, offset.size()), '0');
    return {std::move(offset), false};
  }
};
template <>
struct AckFor<prodsm::S2Policy> {
  static prodsm::S2Policy::Ack make(std::uint64_t n, std::uint32_t count) { return {n, n + count}; }
};

template <class Policy>
void run_core(benchmark::State& state, prodsm::ProducerConfig<Policy> config) {
  config.linger = prodsm::Linger::disabled();
  config.max_batch_records = kBatchRecords;
  config.max_batch_bytes = 1 << 20;
  auto producer = prodsm::Producer<Policy>::create(config).value();
  std::string record(kRecordBytes, 'x');
  if constexpr (std::is_same_v<Policy, prodsm::DurableStreamsPolicy>) {
    if (config.protocol.body_format == prodsm::DurableStreamsPolicy::BodyFormat::json) {
      record = "\"" + std::string(kRecordBytes - 2, 'x') + "\"";
    }
  }
  prodsm::Instant now{};
  std::uint64_t position = 0;
  std::uint64_t sends = 0;
  // The drive rule: after every input, drain the actions. Handling one is out of line,
  // as in any real loop, so the common "nothing to do" check stays small and inlined.
  auto handle = [&](typename prodsm::Producer<Policy>::ActionType & action) __attribute__((noinline)) {
    if (auto* send = std::get_if<prodsm::SendBatch<Policy>>(&action)) {
      ++sends;
      auto ack = AckFor<Policy>::make(position, send->record_count);
      position += send->record_count;
      producer.handle_ack(now, send->batch, send->attempt, std::move(ack));
    }
  };
  auto drive = [&] {
    while (auto action = producer.poll_action()) handle(*action);
  };
  // Warm up: fill and recycle the buffer pool so the measured loop is steady state.
  for (int i = 0; i < 20 * static_cast<int>(kBatchRecords); ++i) {
    (void)producer.submit(now, record);
    drive();
  }
  const std::uint64_t allocations_before = prodsm::bench::allocation_count();
  const std::uint64_t sends_before = sends;
  for (auto _ : state) {
    auto ticket = producer.submit(now, record);
    benchmark::DoNotOptimize(ticket);
    drive();
  }
  const auto records = static_cast<double>(state.iterations());
  const auto allocations = static_cast<double>(prodsm::bench::allocation_count() - allocations_before);
  const auto batches = static_cast<double>(sends - sends_before);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(record.size()));
  state.counters["allocs_per_record"] = allocations / records;
  state.counters["allocs_per_batch"] = batches > 0 ? allocations / batches : 0.0;
}

// The same workload fed through submit_many, kRecordsPerCall records per call (a
// reader's chunk). One iteration = one call plus the drain; figures are per record.
constexpr std::size_t kRecordsPerCall = 64;

template <class Policy>
void run_core_many(benchmark::State& state, prodsm::ProducerConfig<Policy> config) {
  config.linger = prodsm::Linger::disabled();
  config.max_batch_records = kBatchRecords;
  config.max_batch_bytes = 1 << 20;
  auto producer = prodsm::Producer<Policy>::create(config).value();
  std::string record(kRecordBytes, 'x');
  if constexpr (std::is_same_v<Policy, prodsm::DurableStreamsPolicy>) {
    if (config.protocol.body_format == prodsm::DurableStreamsPolicy::BodyFormat::json) {
      record = "\"" + std::string(kRecordBytes - 2, 'x') + "\"";
    }
  }
  const std::vector<std::string_view> records(kRecordsPerCall, record);
  prodsm::Instant now{};
  std::uint64_t position = 0;
  std::uint64_t sends = 0;
  auto handle = [&](typename prodsm::Producer<Policy>::ActionType & action) __attribute__((noinline)) {
    if (auto* send = std::get_if<prodsm::SendBatch<Policy>>(&action)) {
      ++sends;
      auto ack = AckFor<Policy>::make(position, send->record_count);
      position += send->record_count;
      producer.handle_ack(now, send->batch, send->attempt, std::move(ack));
    }
  };
  auto drive = [&] {
    while (auto action = producer.poll_action()) handle(*action);
  };
  std::uint64_t accepted = 0;
  for (int i = 0; i < 20 * static_cast<int>(kBatchRecords / kRecordsPerCall + 1); ++i) {
    accepted += producer.submit_many(now, records).accepted;
    drive();
  }
  const std::uint64_t allocations_before = prodsm::bench::allocation_count();
  const std::uint64_t sends_before = sends;
  accepted = 0;
  for (auto _ : state) {
    auto result = producer.submit_many(now, records);
    benchmark::DoNotOptimize(result);
    accepted += result.accepted;
    drive();
  }
  if (accepted != state.iterations() * kRecordsPerCall) state.SkipWithError("a record was refused");
  const auto total = static_cast<double>(accepted);
  const auto allocations = static_cast<double>(prodsm::bench::allocation_count() - allocations_before);
  const auto batches = static_cast<double>(sends - sends_before);
  state.SetItemsProcessed(static_cast<std::int64_t>(accepted));
  state.SetBytesProcessed(static_cast<std::int64_t>(accepted * record.size()));
  state.counters["ns_per_record"] =
      benchmark::Counter(total, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_record"] = total > 0 ? allocations / total : 0.0;
  state.counters["allocs_per_batch"] = batches > 0 ? allocations / batches : 0.0;
}

void BM_CoreDurableStreamsBytes(benchmark::State& state) {
  run_core<prodsm::DurableStreamsPolicy>(state, {});
}
void BM_CoreDurableStreamsIdempotent(benchmark::State& state) {
  prodsm::DurableStreamsConfig c;
  c.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{"bench", 0, false};
  run_core<prodsm::DurableStreamsPolicy>(state, c);
}
void BM_CoreDurableStreamsJsonValidated(benchmark::State& state) {
  prodsm::DurableStreamsConfig c;
  c.protocol.body_format = prodsm::DurableStreamsPolicy::BodyFormat::json;
  run_core<prodsm::DurableStreamsPolicy>(state, c);
}
void BM_CoreDurableStreamsJsonUnvalidated(benchmark::State& state) {
  prodsm::DurableStreamsConfig c;
  c.protocol.body_format = prodsm::DurableStreamsPolicy::BodyFormat::json;
  c.protocol.validate_json = false;
  run_core<prodsm::DurableStreamsPolicy>(state, c);
}
void BM_CoreS2MatchSeqNum(benchmark::State& state) {
  prodsm::S2Config c;
  c.protocol.match_seq_num = 0;
  run_core<prodsm::S2Policy>(state, c);
}

void BM_CoreDurableStreamsBytesMany(benchmark::State& state) {
  run_core_many<prodsm::DurableStreamsPolicy>(state, {});
}
void BM_CoreDurableStreamsIdempotentMany(benchmark::State& state) {
  prodsm::DurableStreamsConfig c;
  c.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{"bench", 0, false};
  run_core_many<prodsm::DurableStreamsPolicy>(state, c);
}
void BM_CoreDurableStreamsJsonUnvalidatedMany(benchmark::State& state) {
  prodsm::DurableStreamsConfig c;
  c.protocol.body_format = prodsm::DurableStreamsPolicy::BodyFormat::json;
  c.protocol.validate_json = false;
  run_core_many<prodsm::DurableStreamsPolicy>(state, c);
}
void BM_CoreS2MatchSeqNumMany(benchmark::State& state) {
  prodsm::S2Config c;
  c.protocol.match_seq_num = 0;
  run_core_many<prodsm::S2Policy>(state, c);
}

// The baseline: copy the same 100-byte payloads into a 1 MiB buffer, restarting it
// every 1000 records (what batching at minimum must do).
void BM_PayloadCopy(benchmark::State& state) {
  std::string record(kRecordBytes, 'x');
  std::vector<std::byte> buffer(1 << 20);
  std::size_t used = 0;
  std::uint32_t in_batch = 0;
  for (auto _ : state) {
    std::memcpy(buffer.data() + used, record.data(), record.size());
    used += record.size();
    if (++in_batch == kBatchRecords) {
      benchmark::DoNotOptimize(buffer.data());
      benchmark::ClobberMemory();
      used = 0;
      in_batch = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kRecordBytes));
}

// Context for the ratio: the same copy done the way any batcher must do it without
// knowing the size at compile time — appending to a std::vector with a runtime length.
void BM_PayloadAppendVector(benchmark::State& state) {
  std::string record(kRecordBytes, 'x');
  benchmark::DoNotOptimize(record.data());
  std::vector<std::byte> buffer;
  buffer.reserve(1 << 20);
  std::uint32_t in_batch = 0;
  const auto* bytes = reinterpret_cast<const std::byte*>(record.data());
  for (auto _ : state) {
    buffer.insert(buffer.end(), bytes, bytes + record.size());
    if (++in_batch == kBatchRecords) {
      benchmark::DoNotOptimize(buffer.data());
      benchmark::ClobberMemory();
      buffer.clear();
      in_batch = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kRecordBytes));
}

}  // namespace

BENCHMARK(BM_PayloadCopy);
BENCHMARK(BM_PayloadAppendVector);
BENCHMARK(BM_CoreDurableStreamsBytes);
BENCHMARK(BM_CoreDurableStreamsIdempotent);
BENCHMARK(BM_CoreS2MatchSeqNum);
BENCHMARK(BM_CoreDurableStreamsJsonUnvalidated);
BENCHMARK(BM_CoreDurableStreamsJsonValidated);
BENCHMARK(BM_CoreDurableStreamsBytesMany);
BENCHMARK(BM_CoreDurableStreamsIdempotentMany);
BENCHMARK(BM_CoreS2MatchSeqNumMany);
BENCHMARK(BM_CoreDurableStreamsJsonUnvalidatedMany);
BENCHMARK_MAIN();
