// SPDX-License-Identifier: Apache-2.0
// The README's Asio producer as a program: one io_context run by its own thread, the
// records submitted from main; produces COUNT records ("1\n", "2\n", ...) to the
// Durable Streams stream at URL, creating the stream if missing, then flushes, closes
// and prints one summary line. Every start is a fresh epoch
// (ds::ProducerStart::fresh_epoch): a second run's records are appended after the
// first's, none deduplicated away.
//
// Waiting with use_future(...).get() is right here because main is not an io thread; on
// the only io thread (in a handler or a coroutine it runs) it would deadlock — there,
// co_await with use_awaitable or pass a callback.
//
//   usage: prodsm_example_asio_producer URL COUNT
//   exit status: 0 every record durable; 2 bad arguments; 3 a server or network failure
#include <prodsm/asio/producer.hpp>
#include <prodsm/asio/stream_ops.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

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
  asio::io_context io;
  prodsm::asio::ProducerOptions options;
  options.url = argv[1];
  options.content_type = "text/plain";
  options.producer.protocol.idempotent = {{"example-asio-producer", 0, /*auto_claim=*/true}};
  // Retries, reconnects, epoch claims and a terminal error, as they happen (never under
  // the producer's lock; on the thread that runs the callbacks).
  options.events.on_event = [](const prodsm::ProducerEvent& e) {
    std::fprintf(stderr, "asio_producer: %s\n", e.describe().c_str());
  };
  auto producer = prodsm::asio::Producer::create(io.get_executor(), options);
  if (!producer) {
    std::fprintf(stderr, "asio_producer: %s\n", producer.error().c_str());
    return 2;
  }
  auto work = asio::make_work_guard(io);
  std::thread io_thread([&io] { io.run(); });
  auto finish = [&](int status) {
    work.reset();
    io_thread.join();
    return status;
  };

  auto created =
      prodsm::asio::async_create_stream(producer->session(), producer->url(), "text/plain", {}, {}, asio::use_future)
          .get();
  if (!created) {
    std::fprintf(stderr, "asio_producer: creating the stream failed: %s\n", created.error().describe().c_str());
    (void)producer->async_close(asio::use_future).get();  // nothing was submitted
    return finish(3);
  }
  std::atomic<std::uint64_t> durable{0};
  std::atomic<std::uint64_t> failed{0};
  std::uint64_t accepted = 0;
  std::string error;
  for (std::uint64_t k = 1; k <= count; ++k) {
    // Accepted at once while there is capacity; the callback runs on the producer's
    // strand when the record is durable or failed, in ticket order (A1).
    auto ticket = producer->submit(std::to_string(k) + "\n", [&](const prodsm::asio::RecordResult& r) {
      (r ? durable : failed).fetch_add(1, std::memory_order_relaxed);
    });
    if (!ticket && ticket.error().reason == prodsm::RejectReason::would_block) {
      // Full (R1): async_submit waits for capacity, then for this record's outcome.
      auto r = producer->async_submit(std::to_string(k) + "\n", asio::use_future).get();
      (r ? durable : failed).fetch_add(1, std::memory_order_relaxed);
    } else if (!ticket) {
      error = "record " + std::to_string(k) + " refused: " + ticket.error().describe();
      break;
    }
    ++accepted;
  }
  auto flushed = producer->async_flush(asio::use_future).get();  // every earlier record durable
  if (!flushed && error.empty()) error = "flush: " + flushed.error().describe();
  auto closed = producer->async_close(asio::use_future).get();  // the stream stays open
  if (!closed && error.empty()) error = "close: " + closed.error().describe();
  std::printf("asio_producer: %llu records accepted, %llu durable, %llu failed%s\n",
              static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(durable.load()),
              static_cast<unsigned long long>(failed.load()), created->created ? " (stream created)" : "");
  if (!error.empty()) std::fprintf(stderr, "asio_producer: %s\n", error.c_str());
  return finish(error.empty() && accepted == count && failed.load() == 0 ? 0 : 3);
}
