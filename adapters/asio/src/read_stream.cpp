// SPDX-License-Identifier: Apache-2.0
// Streamed catch-up reads over an Asio Session: ds::StreamReader driven on the session's
// strand — its requests carry a body sink that forwards the body to the reader and the
// reader's data to the caller as the bytes are parsed; one timer for retries and the
// read's timeout.
#include <asio/bind_executor.hpp>
#include <asio/steady_timer.hpp>

#include "prodsm/asio/stream_ops.hpp"
#include "prodsm/detail/read_handoff.hpp"
#include "prodsm/detail/steady_now.hpp"

namespace prodsm::asio {
namespace {

using prodsm::detail::steady_now;

struct ReadRun : prodsm::detail::ReadHandoff, std::enable_shared_from_this<ReadRun> {
  ReadRun(std::shared_ptr<Session> s, ds::StreamReader r, ReadHandler h, std::function<void(ReadOutcome)> d,
          ReadRetryHandler on_retry_told)
      : ReadHandoff{std::move(r), std::move(h), std::move(on_retry_told)},
        session{std::move(s)},
        done{std::move(d)},
        timer{session->strand()} {}

  std::shared_ptr<Session> session;
  std::function<void(ReadOutcome)> done;
  ::asio::steady_timer timer;
  bool finished = false;

  /// The drive rule of ds::StreamReader, on the strand.
  void step() {
    if (finished) return;
    hand_on_with_offsets();
    if (auto request = reader.poll_request(steady_now())) {
      request->body_sink = std::make_shared<Sink>(weak_from_this());
      session->exchange(std::move(*request), [self = shared_from_this()](ExchangeResult r) {
        self->reader.on_outcome(steady_now(), std::move(r));
        self->step();
      });
    }
    if (reader.finished()) {
      finished = true;
      timer.cancel();
      auto result = *reader.result();
      done(std::move(result));
      return;
    }
    if (auto when = reader.next_deadline()) {
      timer.expires_at(std::chrono::time_point_cast<std::chrono::steady_clock::duration>(*when));
      timer.async_wait(::asio::bind_executor(session->strand(), [self = shared_from_this()](std::error_code ec) {
        if (ec || self->finished) return;
        self->reader.handle_timeout(steady_now());
        self->step();
      }));
    }
  }

  /// The request's body sink: runs on the strand while the response is parsed.
  struct Sink : http::BodySink {
    explicit Sink(std::weak_ptr<ReadRun> r) : run{std::move(r)} {}
    std::weak_ptr<ReadRun> run;
    bool on_head(const http::Response& head) override {
      auto r = run.lock();
      return r ? r->reader.on_head(head) : true;  // gone: streamed into on_body, which abandons it
    }
    bool on_body(std::span<const char> bytes) override {
      auto r = run.lock();
      if (!r || r->finished) return false;
      const bool ok = r->reader.on_body(bytes);
      return r->hand_on() && ok;
    }
  };
};

}  // namespace

void read_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::ReadOptions options,
                 ReadHandler on_data, std::function<void(ReadOutcome)> done, ReadRetryHandler on_retry) {
  auto reader = ds::StreamReader::create(url, std::move(options), steady_now());
  if (!reader) {
    auto error = make_error(ErrorCode::rejected, Certainty::definite, false, "read options: " + reader.error());
    ::asio::dispatch(session->strand(), [done = std::move(done), error]() { done(tl::unexpected(error)); });
    return;
  }
  auto run =
      std::make_shared<ReadRun>(session, std::move(*reader), std::move(on_data), std::move(done), std::move(on_retry));
  ::asio::dispatch(session->strand(), [run] { run->step(); });
}

void read_stream_all(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, bool json,
                     std::size_t max_bytes, ds::RequestOptions options, std::function<void(ReadStreamResult)> done) {
  auto collector = std::make_shared<ds::ReadCollector>(json);
  read_stream(
      session, url, prodsm::detail::read_all_options(json, max_bytes, std::move(options)),
      [collector](const ds::ReadChunk& c) { return collector->add(c); },
      [collector, done = std::move(done)](ReadOutcome r) {
        if (!r) return done(tl::unexpected(std::move(r.error())));
        done(collector->finish(*r));
      });
}

}  // namespace prodsm::asio
