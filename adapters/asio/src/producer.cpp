// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Producer: a ds::ProducerClient driven by a Session and one timer.
// Locking: `mu` guards the client and every table of pending handlers. Everything that
// must keep the client's order — requests (seal order), completions (A1 ticket order) —
// is posted to its strand while `mu` is held, so strand FIFO order is client order.
#include "prodsm/asio/producer.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "prodsm/ds/detail/waiters.hpp"

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

  struct Waiter {  // an async_submit waiting for capacity (R1)
    std::uint64_t id;
    std::string record;
    RecordCompletion completion;
    Instant deadline;
  };

  Impl(ProducerOptions o, std::shared_ptr<Session> s, bool owned, ds::ProducerClient c)
      : options{std::move(o)},
        session{std::move(s)},
        owns_session{owned},
        callback_strand{net::make_strand(options.callback_executor ? *options.callback_executor
                                                                   : net::any_io_executor{session->strand()})},
        timer{session->strand()},
        client{std::move(c)} {}

  ProducerOptions options;
  std::shared_ptr<Session> session;
  bool owns_session;
  net::strand<net::any_io_executor> callback_strand;
  net::steady_timer timer;  // used on the session strand only

  mutable std::mutex mu;
  ds::ProducerClient client;
  ds::detail::Waiters<RecordCompletion, VoidCompletion, CloseStreamCompletion> waiters;  // routed client events
  std::deque<Waiter> capacity_waiters;
  std::uint64_t next_waiter_id = 0;
  std::optional<Instant> armed;  // what the timer is set to
  bool session_released = false;
  std::uint64_t callback_exceptions = 0;
  std::uint64_t capacity_waits = 0;
  std::condition_variable capacity_cv;  // submit_blocking waits here (with mu)

  // ---- callbacks (A1–A3) ---------------------------------------------------------------

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

  template <class Result, class C>
  void post_result(C completion, Result result) {
    auto shared = std::make_shared<C>(std::move(completion));
    post_callback([shared, result = std::move(result)] { (*shared)->complete(result); });
  }

  // ---- the drive rule (mu held) ----------------------------------------------------------

  void drive(Instant now) {
    while (auto r = client.poll_request()) {
      session->exchange(std::move(r->request), [weak = weak_from_this(), tag = r->tag](ExchangeResult result) {
        auto self = weak.lock();
        if (!self) return;
        std::lock_guard lock(self->mu);
        self->client.handle_outcome(steady_now(), tag, std::move(result));
        self->drive(steady_now());
      });
    }
    while (auto event = client.poll_event()) {
      Sink sink{*this, now};
      waiters.route(*event, sink);
    }
    if (!session_released && owns_session && client.finished()) {
      session_released = true;
      session->close();  // C4: an owned session is closed, an attached one left open
    }
    arm_timer();
  }

  /// How the client's events reach the handlers (ds::detail::Waiters routes them).
  struct Sink {
    Impl& self;
    Instant now;
    void records(ds::RecordsCompleted done, std::vector<std::pair<Ticket, RecordCompletion>> handlers,
                 std::uint64_t count) {
      if (handlers.empty()) {  // fire-and-forget records are delivered now (R3)
        self.client.on_delivered(now, count);
        return;
      }
      auto shared = std::make_shared<decltype(handlers)>(std::move(handlers));
      auto batch = std::make_shared<ds::RecordsCompleted>(std::move(done));
      net::post(self.callback_strand, [impl = self.shared_from_this(), shared, batch, count] {
        for (auto& entry : *shared) {  // A1: ticket order
          impl->run_callback([&] { entry.second->complete(batch->record(entry.first)); });
        }
        std::lock_guard lock(impl->mu);
        impl->client.on_delivered(steady_now(), count);
        impl->drive(steady_now());
      });
    }
    template <class Completion, class Result>
    void complete(Completion c, Result result) {
      self.post_result<Result>(std::move(c), std::move(result));
    }
    void closed(const VoidResult& result) {
      self.capacity_cv.notify_all();
      const Error e =
          result ? local_error(ErrorCode::closed, "the producer closed while waiting for capacity") : result.error();
      for (auto& w : std::exchange(self.capacity_waiters, {})) {
        self.post_result<RecordResult>(std::move(w.completion), tl::unexpected(e));
      }
    }
    void capacity() {
      self.capacity_cv.notify_all();
      self.retry_waiters(now);
    }
  };

  /// R1: capacity freed — retry waiting async_submits in FIFO order.
  void retry_waiters(Instant now) {
    while (!capacity_waiters.empty()) {
      Waiter& w = capacity_waiters.front();
      auto r = client.submit(now, w.record);
      if (!r && r.error().reason == RejectReason::would_block) return;
      if (r) {
        waiters.add_record(*r, std::move(w.completion));
      } else {
        post_result<RecordResult>(std::move(w.completion), tl::unexpected(to_error(r.error())));
      }
      capacity_waiters.pop_front();
    }
  }

  void arm_timer() {
    std::optional<Instant> when = client.next_deadline();
    if (!capacity_waiters.empty()) {
      const Instant w = capacity_waiters.front().deadline;  // FIFO: earliest submit, earliest deadline
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
    while (!capacity_waiters.empty() && capacity_waiters.front().deadline <= now) {
      post_result<RecordResult>(std::move(capacity_waiters.front().completion),
                                tl::unexpected(local_error(ErrorCode::would_block,
                                                           "no capacity within submit_timeout_ns (max_unacked_bytes "
                                                           "or max_pending_records reached)")));
      capacity_waiters.pop_front();
    }
    client.handle_timeout(now);
    drive(now);
  }

  void cancel_waiter(std::uint64_t id) {
    std::lock_guard lock(mu);
    auto it =
        std::find_if(capacity_waiters.begin(), capacity_waiters.end(), [&](const Waiter& w) { return w.id == id; });
    if (it == capacity_waiters.end()) return;  // already submitted: a durable record cannot be unsent
    post_result<RecordResult>(
        std::move(it->completion),
        tl::unexpected(local_error(ErrorCode::cancelled, "async_submit cancelled while waiting for capacity")));
    capacity_waiters.erase(it);
  }
};

// ---- Producer ---------------------------------------------------------------------------

tl::expected<Producer, std::string> Producer::create(net::any_io_executor executor, ProducerOptions options) {
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) return tl::unexpected(client.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(std::move(executor), client->url(), std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  return Producer(std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(*client)));
}

tl::expected<Producer, std::string> Producer::attach(std::shared_ptr<Session> session, ProducerOptions options) {
  if (!session) return tl::unexpected(std::string{"session: null"});
  if (options.header_provider) {
    return tl::unexpected(std::string{"header_provider: an attached producer uses its session's (SessionOptions)"});
  }
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) return tl::unexpected(client.error());
  const ds::StreamUrl& url = client->url();
  if (url.host != session->host() || url.port != session->port()) {
    return tl::unexpected("url: " + url.authority() + " is not the session's server " + session->host() + ":" +
                          std::to_string(session->port()));
  }
  return Producer(std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client)));
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
  const Instant now = steady_now();
  auto r = impl_->client.submit(now, record);
  impl_->drive(now);
  return r;
}

tl::expected<Ticket, Rejection> Producer::submit_with(std::string_view record,
                                                      std::unique_ptr<detail::Completion<RecordResult>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto r = impl_->client.submit(now, record);
  if (r) impl_->waiters.add_record(*r, std::move(c));  // A4: only an accepted submit registers
  impl_->drive(now);
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
    const Instant now = steady_now();
    auto r = impl_->client.submit(now, record);
    if (r && c) impl_->waiters.add_record(*r, std::move(c));
    impl_->drive(now);
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
  auto r = impl_->capacity_waiters.empty() ? impl_->client.submit(now, record)
                                           : tl::expected<Ticket, Rejection>(tl::unexpected(Rejection{
                                                 RejectReason::would_block, "waiting behind earlier submits", {}}));
  if (r) {
    impl_->waiters.add_record(*r, std::move(c));
  } else if (r.error().reason == RejectReason::would_block && impl_->options.submit_timeout_ns.count() > 0) {
    const std::uint64_t id = impl_->next_waiter_id++;
    ++impl_->capacity_waits;
    impl_->capacity_waiters.push_back(
        Impl::Waiter{id, std::move(record), std::move(c), now + impl_->options.submit_timeout_ns});
    if (install_cancel) {
      install_cancel([weak = std::weak_ptr<Impl>(impl_), id] {
        if (auto self = weak.lock()) self->cancel_waiter(id);
      });
    }
  } else {
    impl_->post_result<RecordResult>(std::move(c), tl::unexpected(to_error(r.error())));
  }
  impl_->drive(now);
}

void Producer::initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto r = impl_->client.flush(now);
  if (r) {
    impl_->waiters.add_flush(*r, std::move(c));
  } else {
    impl_->post_result<VoidResult>(std::move(c), tl::unexpected(to_error(r.error())));
  }
  impl_->drive(now);
}

void Producer::initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  if (const auto& done = impl_->waiters.close_result()) {  // C1: a second close returns the same result
    impl_->post_result<VoidResult>(std::move(c), *done);
    return;
  }
  const Instant now = steady_now();
  impl_->waiters.add_close(std::move(c));
  impl_->client.close(now);
  impl_->drive(now);
}

void Producer::initiate_close_stream(std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto op = impl_->client.close_stream(now);
  if (op) {
    impl_->waiters.add_stream_close(*op, std::move(c));
  } else {
    impl_->post_result<ds::CloseStreamResult>(std::move(c), tl::unexpected(op.error()));
  }
  impl_->drive(now);
}

void Producer::initiate_close_with_stream(std::optional<std::string> final_record,
                                          std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto op = impl_->client.close_with_stream(now, std::move(final_record));
  if (op) {
    impl_->waiters.add_stream_close(*op, std::move(c));
  } else {
    impl_->post_result<ds::CloseStreamResult>(std::move(c), tl::unexpected(op.error()));
  }
  impl_->drive(now);
}

void Producer::abort() {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  impl_->client.abort(now);
  impl_->drive(now);
}

ProducerAdapterStats Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->client.core().stats(), impl_->session->stats(), impl_->callback_exceptions,
                              impl_->capacity_waits};
}

const std::shared_ptr<Session>& Producer::session() const noexcept {
  return impl_->session;
}
const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->client.url();
}

}  // namespace prodsm::asio
