// SPDX-License-Identifier: Apache-2.0
// A hand-written drive loop around the Producer core, against an in-memory stand-in for
// a Durable Streams server that acknowledges each batch one virtual millisecond after it
// is sent. It shows the whole integration contract in one screen:
//   after every input, drain poll_action(); arm one timer at next_deadline().
#include <cstdio>
#include <deque>
#include <string>

#include "prodsm/durable_streams.hpp"

namespace {

struct InFlight {
  prodsm::BatchId batch;
  std::uint32_t attempt;
  std::size_t body_bytes;
  prodsm::Instant ack_at;
};

}  // namespace

int main() {
  using namespace std::chrono_literals;
  prodsm::DurableStreamsConfig config;
  config.linger = prodsm::Linger::after(5ms);
  config.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{"demo", 0, false};
  auto created = prodsm::DurableStreamsProducer::create(config);
  if (!created) {
    std::fprintf(stderr, "bad config: %s\n", created.error().message().c_str());
    return 2;
  }
  prodsm::DurableStreamsProducer producer = std::move(*created);

  prodsm::Instant now{};  // virtual time: the demo is deterministic
  std::deque<InFlight> server;
  std::size_t stream_bytes = 0;
  std::uint64_t completed = 0;
  bool closed = false;

  auto drain = [&] {
    while (auto action = producer.poll_action()) {
      if (auto* send = std::get_if<prodsm::SendBatch<prodsm::DurableStreamsPolicy>>(&*action)) {
        std::printf("%6.1f ms  send batch %llu (seq %llu, %u records, %zu bytes)\n",
                    std::chrono::duration<double, std::milli>(now.time_since_epoch()).count(),
                    static_cast<unsigned long long>(send->batch.value),
                    static_cast<unsigned long long>(send->stamp.seq), send->record_count, send->body.size());
        server.push_back({send->batch, send->attempt, send->body.size(), now + 1ms});
      } else if (auto* done = std::get_if<prodsm::TicketsCompleted<prodsm::DurableStreamsPolicy>>(&*action)) {
        completed += done->last.value - done->first.value + 1;
        if (!done->result) std::printf("  failed: %s\n", done->result.error().describe().c_str());
      } else if (auto* barrier = std::get_if<prodsm::BarrierCompleted>(&*action)) {
        std::printf("%6.1f ms  flush %llu done: %s\n",
                    std::chrono::duration<double, std::milli>(now.time_since_epoch()).count(),
                    static_cast<unsigned long long>(barrier->barrier.value),
                    barrier->result ? "every earlier record is durable" : "failed");
      } else if (auto* close = std::get_if<prodsm::Closed>(&*action)) {
        closed = true;
        std::printf("closed: %s\n", close->result ? "ok" : close->result.error().describe().c_str());
      }
    }
  };

  // Submit 2500 records, 100 per virtual millisecond, with a flush after the first 1000.
  for (int i = 0; i < 2500; ++i) {
    if (i % 100 == 0) {
      now += 1ms;
      // Deliver acks that are due, then the timer if it is due.
      while (!server.empty() && server.front().ack_at <= now) {
        const InFlight f = server.front();
        server.pop_front();
        stream_bytes += f.body_bytes;
        producer.handle_ack(now, f.batch, f.attempt, {"offset-" + std::to_string(stream_bytes), false});
        drain();
      }
      if (auto deadline = producer.next_deadline(); deadline && *deadline <= now) {
        producer.handle_timeout(now);
        drain();
      }
    }
    (void)producer.submit(now, "record " + std::to_string(i) + "\n");
    drain();
    if (i == 999) {
      (void)producer.flush(now);
      drain();
    }
  }
  (void)producer.close(now);
  drain();
  while (!closed) {  // the loop a real adapter runs: next ack or next deadline, whichever first
    prodsm::Instant next = server.empty() ? prodsm::kInstantMax : server.front().ack_at;
    if (auto deadline = producer.next_deadline()) next = std::min(next, *deadline);
    now = next;
    while (!server.empty() && server.front().ack_at <= now) {
      const InFlight f = server.front();
      server.pop_front();
      stream_bytes += f.body_bytes;
      producer.handle_ack(now, f.batch, f.attempt, {"offset-" + std::to_string(stream_bytes), false});
      drain();
    }
    producer.handle_timeout(now);
    drain();
  }
  const auto& stats = producer.stats();
  std::printf("records %llu completed %llu, batches %llu, stream bytes %zu\n",
              static_cast<unsigned long long>(stats.records_accepted), static_cast<unsigned long long>(completed),
              static_cast<unsigned long long>(stats.batches_sealed), stream_bytes);
  return completed == stats.records_accepted ? 0 : 1;
}
