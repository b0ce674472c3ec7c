// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Producer: drives the sans-IO core with a Session and one timer.
// Locking: `mu` guards the core and every table of pending handlers. Everything that
// must keep the core's order — sends (pipelined seq order), completions (A1 ticket
// order) — is posted to its strand while `mu` is held, so strand FIFO order is core
// order.
#include "prodsm/asio/producer.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <vector>

namespace prodsm::asio {
namespace net = ::asio;

namespace {
Instant steady_now() {
  return std::chrono::steady_clock::now();
}

Error local_error(ErrorCode code, std::string message) {
  return make_error(code, Certainty::definite, false, std::move(message));
}

}  // namespace

namespace detail {
struct CancelState {
  std::weak_ptr<Producer::Impl> producer;
  std::uint64_t waiter_id = 0;
};
}  // namespace detail

struct Producer::Impl : std::enable_shared_from_this<Producer::Impl> {
  using RecordCompletion = std::unique_ptr<detail::Completion<RecordResult>>;
  using VoidCompletion = std::unique_ptr<detail::Completion<VoidResult>>;
  using CloseStreamCompletion = std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>>;

  struct Waiter {
    std::uint64_t id;
    std::string record;
    RecordCompletion completion;
    Instant deadline;
  };
  struct BarrierWaiter {
    std::uint64_t barrier;
    VoidCompletion completion;           // a flush
    CloseStreamCompletion close_stream;  // or a close_stream waiting for its flush
  };

  Impl(ds::StreamUrl u, ProducerOptions o, std::shared_ptr<Session> s, bool owned, DurableStreamsProducer c)
      : url{std::move(u)},
        options{std::move(o)},
        session{std::move(s)},
        owns_session{owned},
        callback_strand{net::make_strand(options.callback_executor ? *options.callback_executor
                                                                   : net::any_io_executor{session->strand()})},
        timer{session->strand()},
        core{std::move(c)} {
    request_options.extra_headers = options.extra_headers;
    if (options.producer.protocol.idempotent) {
      producer_id = options.producer.protocol.idempotent->producer_id;
    }
  }

  ds::StreamUrl url;
  ProducerOptions options;
  std::shared_ptr<Session> session;
  bool owns_session;
  ds::RequestOptions request_options;
  std::string producer_id;
  net::strand<net::any_io_executor> callback_strand;
  net::steady_timer timer;  // used on the session strand only

  mutable std::mutex mu;
  DurableStreamsProducer core;
  std::deque<RecordCompletion> record_handlers;  // index = ticket - handler_base
  std::uint64_t handler_base = 0;
  std::deque<BarrierWaiter> barrier_waiters;  // in barrier order
  std::vector<VoidCompletion> close_waiters;
  std::optional<VoidResult> close_result;
  std::deque<Waiter> waiters;  // async_submits waiting for capacity
  std::uint64_t next_waiter_id = 0;
  std::optional<Instant> armed;           // what the timer is set to
  std::uint64_t callback_exceptions = 0;  // guarded by mu
  std::uint64_t capacity_waits = 0;
  std::condition_variable capacity_cv;  // submit_blocking waits here (with mu)
  // async_close_with_stream: the stream close is sent once the core has emitted Closed.
  bool close_stream_requested = false;
  std::optional<std::string> close_stream_body;  // the framed final record, if any
  std::vector<CloseStreamCompletion> close_stream_waiters;
  std::optional<tl::expected<ds::CloseResult, Error>> close_stream_result;

  // ---- core driving (mu held) ---------------------------------------------------------
  void register_handler(Ticket t, RecordCompletion c) {
    const std::uint64_t index = t.value - handler_base;
    if (record_handlers.size() <= index) record_handlers.resize(index + 1);
    record_handlers[index] = std::move(c);
  }

  void run_callback(const std::function<void()>& f) {
    try {
      f();
    } catch (...) {  // A3: never unwinds into Asio or the core
      std::function<void(std::exception_ptr)> hook;
      {
        std::lock_guard lock(mu);
        ++callback_exceptions;
        hook = options.on_callback_exception;
      }
      if (hook) {
        try {
          hook(std::current_exception());
        } catch (...) {
        }
      }
    }
  }

  void post_callback(std::function<void()> f) {
    net::post(callback_strand, [self = shared_from_this(), f = std::move(f)] { self->run_callback(f); });
  }

  void on_tickets_completed(TicketsCompleted<DurableStreamsPolicy>& done) {
    if (record_handlers.empty()) {  // fire-and-forget records: O(1) per batch
      handler_base = std::max(handler_base, done.last.value + 1);
      return;
    }
    std::vector<std::pair<Ticket, RecordCompletion>> handlers;
    for (std::uint64_t t = done.first.value; t <= done.last.value; ++t) {
      if (!record_handlers.empty() && handler_base == t) {
        if (record_handlers.front()) handlers.emplace_back(Ticket{t}, std::move(record_handlers.front()));
        record_handlers.pop_front();
        ++handler_base;
      } else if (handler_base <= t) {
        handler_base = t + 1;  // fire-and-forget tickets beyond the table
      }
    }
    if (handlers.empty()) return;
    std::shared_ptr<const DurableStreamsPolicy::Ack> ack;
    std::optional<Error> error;
    if (done.result) {
      ack = std::make_shared<const DurableStreamsPolicy::Ack>(std::move(*done.result));
    } else {
      error = std::move(done.result.error());
    }
    const Ticket first = done.first;
    auto shared = std::make_shared<decltype(handlers)>(std::move(handlers));
    net::post(callback_strand, [self = shared_from_this(), shared, ack, error, first] {
      for (auto& entry : *shared) {  // A1: ticket order
        const Ticket ticket = entry.first;
        auto& completion = entry.second;
        self->run_callback([&] {
          if (ack) {
            completion->complete(RecordAck{ticket, ticket.value - first.value, ack});
          } else {
            completion->complete(tl::unexpected(*error));
          }
        });
      }
    });
  }

  void send(const SendBatch<DurableStreamsPolicy>& s) {
    // The body is copied into the request here, under mu, while the core still owns it.
    std::string request =
        ds::encode_batch(url, options.content_type, s.body.size(), s.stamp, producer_id, request_options);
    request.append(reinterpret_cast<const char*>(s.body.data()), s.body.size());
    const BatchId batch = s.batch;
    const std::uint32_t attempt = s.attempt;
    const bool sequenced = s.stamp.sequenced;
    std::weak_ptr<Impl> weak = weak_from_this();
    net::post(session->strand(),
              [weak, session = session, request = std::move(request), batch, attempt, sequenced]() mutable {
                session->exchange(std::move(request), false, [weak, batch, attempt, sequenced](ExchangeResult r) {
                  if (auto self = weak.lock()) self->on_response(batch, attempt, sequenced, std::move(r));
                });
              });
  }

  void on_response(BatchId batch, std::uint32_t attempt, bool sequenced, ExchangeResult r) {
    std::lock_guard lock(mu);
    const Instant now = steady_now();
    if (!r) {
      core.handle_failure(now, batch, attempt, std::move(r.error()));
    } else {
      auto outcome = ds::classify_append(*r, sequenced);  // S7
      if (outcome) {
        core.handle_ack(now, batch, attempt, std::move(*outcome));
      } else {
        core.handle_failure(now, batch, attempt, std::move(outcome.error()));
      }
    }
    drive();
  }

  void on_barrier(BarrierCompleted& b) {
    auto it = std::find_if(barrier_waiters.begin(), barrier_waiters.end(),
                           [&](const BarrierWaiter& w) { return w.barrier == b.barrier.value; });
    if (it == barrier_waiters.end()) return;
    BarrierWaiter w = std::move(*it);
    barrier_waiters.erase(it);
    if (w.close_stream) {
      if (!b.result) {
        auto c = std::make_shared<CloseStreamCompletion>(std::move(w.close_stream));
        post_callback([c, e = b.result.error()] { (*c)->complete(tl::unexpected(e)); });
        return;
      }
      send_close_stream(std::move(w.close_stream));
      return;
    }
    auto c = std::make_shared<VoidCompletion>(std::move(w.completion));
    post_callback([c, r = b.result] { (*c)->complete(r); });
  }

  void send_close_stream(CloseStreamCompletion completion) {
    std::string request = ds::encode_close(url, options.content_type, std::nullopt, request_options);
    auto c = std::make_shared<CloseStreamCompletion>(std::move(completion));
    std::weak_ptr<Impl> weak = weak_from_this();
    net::post(session->strand(), [weak, session = session, request = std::move(request), c]() mutable {
      session->exchange(std::move(request), false, [weak, c](ExchangeResult r) {
        auto self = weak.lock();
        if (!self) return;
        tl::expected<ds::CloseResult, Error> result =
            r ? ds::classify_close(*r, false) : tl::expected<ds::CloseResult, Error>(tl::unexpected(r.error()));
        std::lock_guard lock(self->mu);
        self->post_callback([c, result = std::move(result)] { (*c)->complete(result); });
      });
    });
  }

  void on_closed(const Closed& closed) {
    close_result = closed.result;
    capacity_cv.notify_all();
    for (auto& w : close_waiters) {
      auto c = std::make_shared<VoidCompletion>(std::move(w));
      post_callback([c, r = closed.result] { (*c)->complete(r); });
    }
    close_waiters.clear();
    for (auto& w : waiters) {
      auto c = std::make_shared<RecordCompletion>(std::move(w.completion));
      Error e = closed.result ? local_error(ErrorCode::closed, "the producer closed while waiting for capacity")
                              : closed.result.error();
      post_callback([c, e] { (*c)->complete(tl::unexpected(e)); });
    }
    waiters.clear();
    net::post(session->strand(), [self = shared_from_this()] { self->timer.cancel(); });
    if (close_stream_requested) {  // async_close_with_stream: the stream close comes next
      if (closed.result) {
        send_final_close(core.policy().epoch(), core.policy().next_seq(), false);
      } else {
        finish_close_stream(tl::unexpected(closed.result.error()));
      }
      return;  // the owned session is closed once the stream close completed
    }
    if (owns_session) session->close();  // C4: owned session closed, attached left open
  }

  /// Sends the `Stream-Closed: true` request of async_close_with_stream (mu held). Every
  /// batch is acknowledged by now, so `seq` is the first one no batch used.
  void send_final_close(std::uint64_t epoch, std::uint64_t seq, bool claimed) {
    std::optional<ds::ProducerHeaders> producer;
    if (options.producer.protocol.idempotent) producer = ds::ProducerHeaders{producer_id, epoch, seq};
    const bool with_body = close_stream_body.has_value();
    std::string request;
    if (with_body) {
      ds::AppendOptions append;
      append.producer = producer;
      append.close_stream = true;
      request = ds::encode_append(url, options.content_type, close_stream_body->size(), append, request_options);
      request += *close_stream_body;
    } else {
      request = ds::encode_close(url, options.content_type, producer, request_options);
    }
    const bool sequenced = producer.has_value();
    net::post(session->strand(), [self = shared_from_this(), request = std::move(request), with_body, sequenced,
                                  claimed]() mutable {
      self->session->exchange(std::move(request), false, [self, with_body, sequenced, claimed](ExchangeResult r) {
        self->on_final_close_response(std::move(r), with_body, sequenced, claimed);
      });
    });
  }

  void on_final_close_response(ExchangeResult r, bool with_body, bool sequenced, bool claimed) {
    tl::expected<ds::CloseResult, Error> result{ds::CloseResult{}};
    if (!r) {
      result = tl::unexpected(std::move(r.error()));
    } else if (with_body) {  // append + close: classified as an append (S3, S6, S7)
      auto ack = ds::classify_append(*r, sequenced);
      if (ack) {
        result->final_offset = ack->next_offset;
        if (result->final_offset.empty()) {  // a duplicate carries the offset only sometimes
          if (auto offset = r->header("Stream-Next-Offset")) result->final_offset = std::string(*offset);
        }
      } else {
        result = tl::unexpected(std::move(ack.error()));
      }
    } else {
      result = ds::classify_close(*r, sequenced);
    }
    std::lock_guard lock(mu);
    const auto& idempotent = options.producer.protocol.idempotent;
    if (!result && result.error().code == ErrorCode::stale_epoch && sequenced && !claimed && idempotent &&
        idempotent->auto_claim && result.error().server_epoch < DurableStreamsPolicy::kMaxSequenceValue) {
      send_final_close(result.error().server_epoch + 1, 0, true);  // S5: one claim step
      return;
    }
    finish_close_stream(std::move(result));
  }

  /// Completes every async_close_with_stream with `result`, then releases the owned
  /// session (C4). mu held.
  void finish_close_stream(tl::expected<ds::CloseResult, Error> result) {
    close_stream_result = result;
    for (auto& w : close_stream_waiters) {
      auto c = std::make_shared<CloseStreamCompletion>(std::move(w));
      post_callback([c, result] { (*c)->complete(result); });
    }
    close_stream_waiters.clear();
    if (owns_session) session->close();
  }

  /// R1: capacity freed — retry waiting async_submits in FIFO order.
  void retry_waiters() {
    const Instant now = steady_now();
    while (!waiters.empty()) {
      Waiter& w = waiters.front();
      auto r = core.submit(now, w.record);
      if (!r && r.error().reason == RejectReason::would_block) return;
      if (r) {
        register_handler(*r, std::move(w.completion));
      } else {
        auto c = std::make_shared<RecordCompletion>(std::move(w.completion));
        post_callback([c, e = to_error(r.error())] { (*c)->complete(tl::unexpected(e)); });
      }
      waiters.pop_front();
    }
  }

  /// The drive rule: drain every action, then arm one timer.
  void drive() {
    while (auto action = core.poll_action()) {
      std::visit(
          [this](auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, SendBatch<DurableStreamsPolicy>>) {
              send(a);
            } else if constexpr (std::is_same_v<T, TicketsCompleted<DurableStreamsPolicy>>) {
              on_tickets_completed(a);
            } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
              on_barrier(a);
            } else if constexpr (std::is_same_v<T, Closed>) {
              on_closed(a);
            } else if constexpr (std::is_same_v<T, CapacityAvailable>) {
              capacity_cv.notify_all();
              retry_waiters();
            }
          },
          *action);
    }
    arm_timer();
  }

  void arm_timer() {
    std::optional<Instant> when = core.next_deadline();
    if (!waiters.empty()) {
      const Instant w = waiters.front().deadline;  // FIFO: earliest submit, earliest deadline
      when = when ? std::min(*when, w) : w;
    }
    if (when == armed) return;
    armed = when;
    net::post(session->strand(), [weak = weak_from_this(), when] {
      auto self = weak.lock();
      if (!self) return;
      if (!when) {
        self->timer.cancel();
        return;
      }
      self->timer.expires_at(*when);
      self->timer.async_wait([weak](std::error_code ec) {
        if (ec) return;  // re-armed or cancelled
        if (auto s = weak.lock()) s->on_timer();
      });
    });
  }

  void on_timer() {
    std::lock_guard lock(mu);
    const Instant now = steady_now();
    armed.reset();
    while (!waiters.empty() && waiters.front().deadline <= now) {
      auto c = std::make_shared<RecordCompletion>(std::move(waiters.front().completion));
      waiters.pop_front();
      post_callback([c] {
        (*c)->complete(tl::unexpected(
            local_error(ErrorCode::would_block, "no capacity within submit_timeout_ns (max_unacked_bytes reached)")));
      });
    }
    core.handle_timeout(now);
    drive();
  }

  void cancel_waiter(std::uint64_t id) {
    std::lock_guard lock(mu);
    auto it = std::find_if(waiters.begin(), waiters.end(), [&](const Waiter& w) { return w.id == id; });
    if (it == waiters.end()) return;  // already submitted: a durable record cannot be unsent
    auto c = std::make_shared<RecordCompletion>(std::move(it->completion));
    waiters.erase(it);
    post_callback([c] {
      (*c)->complete(
          tl::unexpected(local_error(ErrorCode::cancelled, "async_submit cancelled while waiting for capacity")));
    });
  }
};

// ---- Producer ---------------------------------------------------------------------------

namespace {
std::optional<std::string> check_options(const ProducerOptions& o, const ds::StreamUrl& url) {
  (void)url;
  if (o.content_type.empty() || o.content_type.find_first_of("\r\n") != std::string::npos) {
    return "content_type: must be a non-empty header value without CR/LF";
  }
  const bool json = ds::is_json_content_type(o.content_type);
  if (json != (o.producer.protocol.body_format == DurableStreamsPolicy::BodyFormat::json)) {
    return "content_type: '" + o.content_type + "' needs producer.protocol.body_format = " + (json ? "json" : "bytes");
  }
  for (const auto& h : o.extra_headers) {
    if (auto why = ds::check_extra_header(h)) return "extra_headers: " + *why;
  }
  if (o.submit_timeout_ns.count() < 0 || o.submit_timeout_ns > std::chrono::minutes{10}) {
    return "submit_timeout_ns: must be in 0..10 min";
  }
  if (auto e = DurableStreamsProducer::validate(o.producer)) return "producer." + e->message();
  if (!o.producer.protocol.idempotent && o.session.mode == ConnectionMode::pool && o.producer.max_in_flight > 1) {
    // Requests on different connections race at the server: plain appends would land
    // out of order (measured). Sequenced appends are reordered by S4 instead.
    return "producer.max_in_flight: plain appends (no idempotent producer) over pooled "
           "connections can land out of order; use max_in_flight = 1, the pipelined "
           "connection mode, or an idempotent producer";
  }
  return std::nullopt;
}
}  // namespace

tl::expected<Producer, std::string> Producer::create(net::any_io_executor executor, ProducerOptions options) {
  auto url = ds::StreamUrl::parse(options.url);
  if (!url) return tl::unexpected("url: " + url.error());
  if (auto why = check_options(options, *url)) return tl::unexpected(*why);
  auto session = Session::create(std::move(executor), *url, options.session);
  if (!session) return tl::unexpected(session.error());
  auto core = DurableStreamsProducer::create(options.producer);
  if (!core) return tl::unexpected("producer." + core.error().message());
  return Producer(
      std::make_shared<Impl>(std::move(*url), std::move(options), std::move(*session), true, std::move(*core)));
}

tl::expected<Producer, std::string> Producer::attach(std::shared_ptr<Session> session, ProducerOptions options) {
  if (!session) return tl::unexpected(std::string{"session: null"});
  auto url = ds::StreamUrl::parse(options.url);
  if (!url) return tl::unexpected("url: " + url.error());
  if (url->host != session->host() || url->port != session->port()) {
    return tl::unexpected("url: " + url->authority() + " is not the session's server " + session->host() + ":" +
                          std::to_string(session->port()));
  }
  if (auto why = check_options(options, *url)) return tl::unexpected(*why);
  auto core = DurableStreamsProducer::create(options.producer);
  if (!core) return tl::unexpected("producer." + core.error().message());
  return Producer(
      std::make_shared<Impl>(std::move(*url), std::move(options), std::move(session), false, std::move(*core)));
}

Producer::Producer(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}
Producer::Producer(Producer&&) noexcept = default;
Producer& Producer::operator=(Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) abort();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Producer::~Producer() {
  if (impl_) abort();  // C5: no-op after a completed close
}

tl::expected<Ticket, Rejection> Producer::submit(std::string_view record) {
  std::lock_guard lock(impl_->mu);
  auto r = impl_->core.submit(steady_now(), record);
  impl_->drive();
  return r;
}

tl::expected<Ticket, Rejection> Producer::submit_with(std::string_view record,
                                                      std::unique_ptr<detail::Completion<RecordResult>> c) {
  std::lock_guard lock(impl_->mu);
  auto r = impl_->core.submit(steady_now(), record);
  if (r) impl_->register_handler(*r, std::move(c));  // A4: only an accepted submit registers
  impl_->drive();
  return r;
}

tl::expected<Ticket, Rejection> Producer::submit_blocking(std::string_view record, Duration timeout_ns) {
  return submit_blocking_with(record, timeout_ns, nullptr);
}

tl::expected<Ticket, Rejection> Producer::submit_blocking_with(std::string_view record, Duration timeout_ns,
                                                               std::unique_ptr<detail::Completion<RecordResult>> c) {
  std::unique_lock lock(impl_->mu);
  const auto give_up = std::chrono::steady_clock::now() + timeout_ns;
  while (true) {
    auto r = impl_->core.submit(steady_now(), record);
    if (r && c) impl_->register_handler(*r, std::move(c));
    impl_->drive();
    if (r || r.error().reason != RejectReason::would_block) return r;
    // R1: wait for CapacityAvailable (or close); the core sealed the partial batch (R2).
    if (impl_->capacity_cv.wait_until(lock, give_up) == std::cv_status::timeout) return r;
  }
}

void Producer::initiate_submit(std::string record, std::unique_ptr<detail::Completion<RecordResult>> c,
                               std::function<void(std::function<void()>)> install_cancel) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  // FIFO with earlier waiters: never overtake a submit that is already waiting (P1).
  auto r = impl_->waiters.empty() ? impl_->core.submit(now, record)
                                  : tl::expected<Ticket, Rejection>(tl::unexpected(
                                        Rejection{RejectReason::would_block, "waiting behind earlier submits", {}}));
  if (r) {
    impl_->register_handler(*r, std::move(c));
  } else if (r.error().reason == RejectReason::would_block && impl_->options.submit_timeout_ns.count() > 0) {
    const std::uint64_t id = impl_->next_waiter_id++;
    ++impl_->capacity_waits;
    impl_->waiters.push_back(Impl::Waiter{id, std::move(record), std::move(c), now + impl_->options.submit_timeout_ns});
    if (install_cancel) {
      install_cancel([weak = std::weak_ptr<Impl>(impl_), id] {
        if (auto self = weak.lock()) self->cancel_waiter(id);
      });
    }
  } else {
    auto shared = std::make_shared<std::unique_ptr<detail::Completion<RecordResult>>>(std::move(c));
    impl_->post_callback([shared, e = to_error(r.error())] { (*shared)->complete(tl::unexpected(e)); });
  }
  impl_->drive();
}

void Producer::initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  auto r = impl_->core.flush(steady_now());
  if (r) {
    impl_->barrier_waiters.push_back(Impl::BarrierWaiter{r->value, std::move(c), nullptr});
  } else {
    auto shared = std::make_shared<std::unique_ptr<detail::Completion<VoidResult>>>(std::move(c));
    impl_->post_callback([shared, e = to_error(r.error())] { (*shared)->complete(tl::unexpected(e)); });
  }
  impl_->drive();
}

void Producer::initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  if (impl_->close_result) {  // C1: a second close returns the same result
    auto shared = std::make_shared<std::unique_ptr<detail::Completion<VoidResult>>>(std::move(c));
    impl_->post_callback([shared, r = *impl_->close_result] { (*shared)->complete(r); });
    return;
  }
  impl_->close_waiters.push_back(std::move(c));
  (void)impl_->core.close(steady_now());
  impl_->drive();
}

void Producer::initiate_close_stream(std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c) {
  std::lock_guard lock(impl_->mu);
  auto r = impl_->core.flush(steady_now());
  if (r) {
    impl_->barrier_waiters.push_back(Impl::BarrierWaiter{r->value, nullptr, std::move(c)});
  } else {
    auto shared = std::make_shared<decltype(c)>(std::move(c));
    impl_->post_callback([shared, e = to_error(r.error())] { (*shared)->complete(tl::unexpected(e)); });
  }
  impl_->drive();
}

void Producer::initiate_close_with_stream(std::optional<std::string> final_record,
                                          std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c) {
  std::lock_guard lock(impl_->mu);
  auto shared = std::make_shared<decltype(c)>(std::move(c));
  auto fail = [&](Error e) { impl_->post_callback([shared, e] { (*shared)->complete(tl::unexpected(e)); }); };
  if (impl_->close_stream_result) {  // a second call: the same result
    impl_->post_callback([shared, r = *impl_->close_stream_result] { (*shared)->complete(r); });
    return;
  }
  if (impl_->close_stream_requested) {
    impl_->close_stream_waiters.push_back(std::move(*shared));
    return;
  }
  if (impl_->close_result) {
    fail(local_error(ErrorCode::closed, "the producer is already closed; the stream was not closed"));
    return;
  }
  if (final_record) {
    const auto bytes = std::as_bytes(std::span<const char>(final_record->data(), final_record->size()));
    if (auto why = impl_->core.policy().check_record(bytes)) {
      fail(local_error(ErrorCode::invalid_record, "final record: " + std::string(*why)));
      return;
    }
    if (impl_->options.producer.protocol.body_format == DurableStreamsPolicy::BodyFormat::json) {
      impl_->close_stream_body = "[" + *final_record + "]";
    } else {
      impl_->close_stream_body = std::move(*final_record);
    }
  }
  impl_->close_stream_requested = true;
  impl_->close_stream_waiters.push_back(std::move(*shared));
  (void)impl_->core.close(steady_now());
  impl_->drive();
}

void Producer::abort() {
  std::lock_guard lock(impl_->mu);
  impl_->core.abort(steady_now());
  impl_->drive();
}

ProducerAdapterStats Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->core.stats(), impl_->session->stats(), impl_->callback_exceptions,
                              impl_->capacity_waits};
}

const std::shared_ptr<Session>& Producer::session() const noexcept {
  return impl_->session;
}
const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->url;
}

}  // namespace prodsm::asio
