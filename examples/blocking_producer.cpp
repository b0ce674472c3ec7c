// SPDX-License-Identifier: Apache-2.0
// The README's blocking producer as a program: produces COUNT records ("1\n", "2\n",
// ...) to the Durable Streams stream at URL, creating it if missing, then flushes,
// closes and prints one summary line. Run it twice against one stream and both runs'
// records are there: every start is a fresh epoch (ds::ProducerStart::fresh_epoch), so
// nothing of a second run is deduplicated against the first.
//
//   usage: prodsm_example_blocking_producer URL COUNT
//   exit status: 0 every record durable; 2 bad arguments; 3 a server or network failure
#include <prodsm/blocking/producer.hpp>
#include <prodsm/blocking/stream_ops.hpp>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

bool parse_count(std::string_view text, std::uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && out <= 1'000'000'000;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t count = 0;
  if (argc != 3 || !parse_count(argv[2], count)) {
    std::fprintf(stderr, "usage: %s URL COUNT (COUNT: 0..1000000000)\n", argv[0]);
    return 2;
  }
  prodsm::blocking::ProducerOptions options;
  options.url = argv[1];
  options.content_type = "text/plain";
  // A fixed producer id: a restart fences the previous run (S5) and starts a fresh epoch.
  options.producer.protocol.idempotent = {{"example-blocking-producer", 0, /*auto_claim=*/true}};
  // Retries, reconnects, epoch claims and a terminal error, as they happen (never under
  // the producer's lock; on the thread that runs the callbacks).
  options.events.on_event = [](const prodsm::ProducerEvent& e) {
    std::fprintf(stderr, "blocking_producer: %s\n", e.describe().c_str());
  };
  auto producer = prodsm::blocking::Producer::create(options);
  if (!producer) {
    std::fprintf(stderr, "blocking_producer: %s\n", producer.error().c_str());
    return 2;
  }
  const auto created = prodsm::blocking::create_stream(*producer->session(), producer->url(), options.content_type);
  if (!created) {
    std::fprintf(stderr, "blocking_producer: creating the stream failed: %s\n", created.error().describe().c_str());
    return 3;
  }

  std::atomic<std::uint64_t> durable{0};
  std::atomic<std::uint64_t> failed{0};
  std::uint64_t accepted = 0;
  for (std::uint64_t k = 1; k <= count; ++k) {
    auto ticket = producer->submit(std::to_string(k) + "\n", [&](const prodsm::blocking::RecordResult& r) {
      (r ? durable : failed).fetch_add(1, std::memory_order_relaxed);
    });
    if (!ticket) {  // refused now (the producer failed, or no capacity in time): stop
      std::fprintf(stderr, "blocking_producer: record %llu refused: %s\n", static_cast<unsigned long long>(k),
                   ticket.error().describe().c_str());
      break;
    }
    ++accepted;
  }
  const auto flushed = producer->flush();  // every accepted record durable or failed, callbacks ran
  const auto closed = producer->close();
  std::printf("blocking_producer: %llu records accepted, %llu durable, %llu failed%s\n",
              static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(durable.load()),
              static_cast<unsigned long long>(failed.load()), created->created ? " (stream created)" : "");
  if (!flushed) {
    std::fprintf(stderr, "blocking_producer: flush: %s\n", flushed.error().describe().c_str());
  } else if (!closed) {
    std::fprintf(stderr, "blocking_producer: close: %s\n", closed.error().describe().c_str());
  }
  return flushed && closed && accepted == count && failed.load() == 0 ? 0 : 3;
}
