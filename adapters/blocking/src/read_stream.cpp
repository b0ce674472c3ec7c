// SPDX-License-Identifier: Apache-2.0
// Streamed catch-up reads over a blocking Session: ds::StreamReader driven from the
// calling thread (requests, retries' waits, the read's timeout), its body sink run by the
// session's I/O thread; one mutex keeps the two apart.
#include <condition_variable>
#include <mutex>

#include "prodsm/blocking/stream_ops.hpp"
#include "prodsm/detail/read_handoff.hpp"
#include "prodsm/detail/steady_now.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking {
namespace {

using prodsm::detail::steady_now;

/// The reader, the caller's handler and the request's outcome; `mu` guards them all (the
/// I/O thread's sink and the caller).
struct ReadRun : prodsm::detail::ReadHandoff {
  using ReadHandoff::ReadHandoff;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<ExchangeResult> outcome;
};

/// The request's body sink: runs on the session's I/O thread while the response is parsed.
struct Sink : http::BodySink {
  explicit Sink(std::shared_ptr<ReadRun> r) : run{std::move(r)} {}
  std::shared_ptr<ReadRun> run;
  bool on_head(const http::Response& head) override {
    std::lock_guard lock(run->mu);
    return run->reader.on_head(head);
  }
  bool on_body(std::span<const char> bytes) override {
    std::lock_guard lock(run->mu);
    if (run->reader.finished()) return false;
    const bool ok = run->reader.on_body(bytes);
    return run->hand_on() && ok;
  }
};

}  // namespace

ReadOutcome read_stream(Session& session, const ds::StreamUrl& url, ds::ReadOptions options, ReadHandler on_data,
                        ReadRetryHandler on_retry) {
  if (session.impl()->on_io_thread()) {
    return tl::unexpected(make_error(ErrorCode::would_block, Certainty::definite, false,
                                     "read_stream called on the session's I/O thread would wait for itself"));
  }
  auto reader = ds::StreamReader::create(url, std::move(options), steady_now());
  if (!reader) {
    return tl::unexpected(
        make_error(ErrorCode::rejected, Certainty::definite, false, "read options: " + reader.error()));
  }
  auto run = std::make_shared<ReadRun>(std::move(*reader), std::move(on_data), std::move(on_retry));
  std::unique_lock lock(run->mu);
  while (true) {
    run->hand_on_with_offsets();
    if (auto request = run->reader.poll_request(steady_now())) {
      request->body_sink = std::make_shared<Sink>(run);
      run->outcome.reset();
      lock.unlock();  // the handler below may run at once on the I/O thread
      session.exchange(std::move(*request), [run](ExchangeResult r) {
        {
          std::lock_guard inner(run->mu);
          run->outcome = std::move(r);
        }
        run->cv.notify_all();
      });
      lock.lock();
      // Wait for the outcome, or for the read's timeout.
      while (!run->outcome && !run->reader.finished()) {
        const auto when = run->reader.next_deadline();
        if (!when) break;
        if (run->cv.wait_until(lock, *when) == std::cv_status::timeout) run->reader.handle_timeout(steady_now());
      }
      if (run->outcome) {
        auto outcome = std::move(*run->outcome);
        run->outcome.reset();
        run->reader.on_outcome(steady_now(), std::move(outcome));
      }
      continue;
    }
    if (run->reader.finished()) break;
    const auto when = run->reader.next_deadline();  // a retry's backoff
    if (!when) break;
    run->cv.wait_until(lock, *when);  // nothing else wakes it: the wait is the backoff
    run->reader.handle_timeout(steady_now());
  }
  if (!run->reader.result()) {
    return tl::unexpected(make_error(ErrorCode::internal, Certainty::definite, false, "the read stopped unfinished"));
  }
  return *run->reader.result();
}

ReadStreamResult read_stream_all(Session& session, const ds::StreamUrl& url, bool json, std::size_t max_bytes,
                                 const ds::RequestOptions& options) {
  ds::ReadCollector collector(json);
  auto r = read_stream(session, url, prodsm::detail::read_all_options(json, max_bytes, options),
                       [&collector](const ds::ReadChunk& c) { return collector.add(c); });
  if (!r) return tl::unexpected(std::move(r.error()));
  return collector.finish(*r);
}

}  // namespace prodsm::blocking
