// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Producer: a ds::ProducerClient behind one mutex (`mu`), a Session
// whose I/O thread runs the connections and the client's deadline, and a FIFO
// dispatcher for completions.
//
// Order: every request and event is drained from the client under `mu` (the drive rule),
// and everything whose order matters is queued while `mu` is held — requests to the
// session (which writes them in that order: seal order), completions to the dispatcher
// (so dispatcher order is client order: A1, A2).
// Lock order: mu → Session::Impl::mu, and mu → Dispatcher::mu_ → Signal::mu. Dispatcher
// tasks and session handlers run with no lock held and may take mu.
#include "prodsm/blocking/producer.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "dispatcher.hpp"
#include "prodsm/ds/detail/waiters.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking {
namespace detail {

using VoidOp = Op<VoidResult>;
struct CloseStreamOp : Op<CloseStreamResult> {};

struct TicketState : Op<RecordResult> {
  TicketState(std::shared_ptr<Signal> s, RecordCallback cb) : signal{std::move(s)}, callback{std::move(cb)} {}
  std::shared_ptr<Signal> signal;
  RecordCallback callback;  // touched by the dispatcher only, after acceptance
};

}  // namespace detail

namespace {

using detail::in_callback;

Instant steady_now() {
  return std::chrono::steady_clock::now();
}

Error local_error(ErrorCode code, std::string message) {
  return make_error(code, Certainty::definite, false, std::move(message));
}

Error waits_for_itself(std::string_view what) {
  return local_error(ErrorCode::would_block,
                     std::string(what) + " called from a completion callback would wait for itself");
}

Error timed_out(std::string_view what) {
  return make_error(ErrorCode::cancelled, Certainty::indefinite, false,
                    std::string(what) + " did not complete within timeout_ns; it goes on");
}

std::optional<Instant> deadline_after(std::optional<Duration> timeout_ns) {
  if (!timeout_ns) return std::nullopt;
  return saturating_add(steady_now(), *timeout_ns);
}

}  // namespace

struct Producer::Impl : Participant, std::enable_shared_from_this<Producer::Impl> {
  using TicketStatePtr = std::shared_ptr<detail::TicketState>;

  Impl(ProducerOptions o, std::shared_ptr<Session> s, bool owned, ds::ProducerClient c)
      : options{std::move(o)}, session{std::move(s)}, owns_session{owned}, client{std::move(c)} {}

  // Set at creation, then read-only.
  ProducerOptions options;
  std::shared_ptr<Session> session;
  const bool owns_session;
  std::shared_ptr<detail::Signal> signal = std::make_shared<detail::Signal>();
  std::shared_ptr<detail::Dispatcher> dispatcher;

  // Guarded by mu.
  mutable std::mutex mu;
  ds::ProducerClient client;
  ds::detail::Waiters<TicketStatePtr, std::shared_ptr<detail::VoidOp>, std::shared_ptr<detail::CloseStreamOp>>
      waiters;                               // routed client events
  std::shared_ptr<detail::VoidOp> close_op;  // every close() waits for this one
  std::optional<Instant> armed;              // the client deadline the session's I/O thread last saw
  bool session_released = false;
  std::condition_variable capacity_cv;
  std::uint32_t capacity_waiters = 0;
  std::uint64_t capacity_waits = 0;
  std::atomic<std::uint64_t> callback_exceptions{0};

  // ---- completions (dispatcher) ----------------------------------------------------------

  void run_callback(const std::function<void()>& f) {
    try {
      f();
    } catch (...) {  // A3: caught, counted, reported; never unwinds into the dispatcher
      ++callback_exceptions;
      if (options.on_callback_exception) {
        try {
          options.on_callback_exception(std::current_exception());
        } catch (...) {
        }
      }
    }
  }

  /// Runs the callbacks of one completed batch in ticket order, then publishes the
  /// outcomes (a ticket turns ready after its callback ran) and frees their room (R3).
  void deliver(const std::vector<TicketStatePtr>& states, const ds::RecordsCompleted& batch) {
    std::vector<RecordResult> results;
    results.reserve(states.size());
    for (std::size_t i = 0; i < states.size(); ++i) {
      results.push_back(batch.record(Ticket{batch.first.value + i}));
      if (auto& cb = states[i]->callback) {
        run_callback([&] { cb(results.back()); });
        cb = nullptr;
      }
    }
    {
      std::lock_guard lock(signal->mu);
      for (std::size_t i = 0; i < states.size(); ++i) states[i]->value = std::move(results[i]);
    }
    signal->cv.notify_all();
    std::lock_guard lock(mu);
    client.on_delivered(steady_now(), states.size());
    drive(steady_now());
  }

  template <class T>
  void post_publish(std::shared_ptr<detail::Op<T>> op, T value) {
    dispatcher->post([signal = signal, op = std::move(op), value = std::move(value)]() mutable {
      detail::publish(*signal, *op, std::move(value));
    });
  }

  // ---- the drive rule (mu held) ------------------------------------------------------------

  /// How the client's events reach the waiters (ds::detail::Waiters routes them): through
  /// the dispatcher, in order (A1, A2).
  struct Sink {
    Impl& self;
    bool notify_capacity = false;
    void records(ds::RecordsCompleted done, std::vector<std::pair<Ticket, TicketStatePtr>> handlers, std::uint64_t) {
      std::vector<TicketStatePtr> states;  // every accepted ticket registered one, in order (P2)
      states.reserve(handlers.size());
      for (auto& h : handlers) states.push_back(std::move(h.second));
      self.dispatcher->post([impl = self.shared_from_this(), states = std::move(states), batch = std::move(done)] {
        impl->deliver(states, batch);
      });
    }
    template <class Op, class Result>
    void complete(std::shared_ptr<Op> op, Result result) {
      self.post_publish<Result>(std::move(op), std::move(result));
    }
    void closed(const VoidResult&) { notify_capacity = true; }
    void capacity() { notify_capacity = true; }
  };

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
    Sink sink{*this};
    while (auto event = client.poll_event()) waiters.route(*event, sink);
    (void)now;
    if (owns_session && !session_released && client.finished()) {
      session_released = true;
      session->impl()->close();  // C4: the owned session stops (joined by close() or the destructor)
    }
    if (sink.notify_capacity && capacity_waiters > 0) capacity_cv.notify_all();
    // Wake the session's I/O thread only when the deadline moved earlier than the one it
    // last saw: a submit that joins the partial batch costs no syscall.
    if (const auto next = client.next_deadline(); next && (!armed || *next < *armed)) {
      armed = next;
      session->impl()->wake();
    }
  }

  // ---- Participant: the session's I/O thread runs the client's deadline -------------------

  std::optional<Instant> deadline() override {
    std::lock_guard lock(mu);
    armed = client.next_deadline();
    return armed;
  }

  void on_deadline(Instant now) override {
    std::lock_guard lock(mu);
    client.handle_timeout(now);  // linger, backoff, delivery deadline (B1, E4, E6)
    drive(now);
  }

  /// C4: an owned session is closed and its I/O thread joined (never from it).
  void release_session() {
    if (!owns_session) return;
    {
      std::lock_guard lock(mu);
      session_released = true;
    }
    session->close();
  }

  /// Destruction: abort unless closed (C5), stop the threads; the own dispatcher runs
  /// every queued completion before it stops.
  void shutdown() {
    {
      std::lock_guard lock(mu);
      if (!client.finished()) {
        client.abort(steady_now());
        drive(steady_now());
      }
    }
    release_session();
    dispatcher->stop_and_join();
  }
};

// ---- RecordTicket ----------------------------------------------------------------------------

bool RecordTicket::ready() const {
  std::lock_guard lock(state_->signal->mu);
  return state_->value.has_value();
}

std::optional<RecordResult> RecordTicket::wait(Duration timeout_ns) const {
  if (in_callback()) timeout_ns = Duration::zero();  // the outcome comes from this dispatcher
  return detail::wait_for_value(*state_->signal, *state_, saturating_add(steady_now(), timeout_ns));
}

RecordResult RecordTicket::wait() const {
  if (in_callback()) {
    if (auto r = wait(Duration::zero())) return *r;
    return tl::unexpected(waits_for_itself("RecordTicket::wait()"));
  }
  return *detail::wait_for_value(*state_->signal, *state_, std::nullopt);
}

// ---- Producer --------------------------------------------------------------------------------

tl::expected<Producer, std::string> Producer::create(ProducerOptions options) {
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) return tl::unexpected(client.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(client->url(), std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  auto impl = std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(*client));
  impl->dispatcher = detail::Dispatcher::start(impl->options.callback_executor);
  impl->session->impl()->attach(std::weak_ptr<Participant>(impl));
  return Producer(std::move(impl));
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
  auto impl = std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client));
  impl->dispatcher = detail::Dispatcher::start(impl->options.callback_executor);
  impl->session->impl()->attach(std::weak_ptr<Participant>(impl));
  return Producer(std::move(impl));
}

Producer::Producer(std::shared_ptr<Impl> impl) noexcept : impl_{std::move(impl)} {}
Producer::Producer(Producer&&) noexcept = default;
Producer& Producer::operator=(Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Producer::~Producer() {
  if (impl_) impl_->shutdown();
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record) {
  return submit(record, nullptr);
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record, RecordCallback on_complete) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  std::optional<Instant> give_up;
  while (true) {
    const Instant now = steady_now();
    auto r = m.client.submit(now, record);  // would_block also at max_pending_records (R3)
    if (r) {
      auto state = std::make_shared<detail::TicketState>(m.signal, std::move(on_complete));
      m.waiters.add_record(*r, state);  // A4: registered only when accepted
      m.drive(now);
      return RecordTicket(*r, std::move(state));
    }
    m.drive(now);  // a would-block sealed the partial batch (R2)
    if (r.error().reason != RejectReason::would_block) return tl::unexpected(std::move(r.error()));
    if (!give_up) {
      if (in_callback() || m.options.submit_timeout_ns.count() == 0) return tl::unexpected(std::move(r.error()));
      give_up = saturating_add(now, m.options.submit_timeout_ns);
      ++m.capacity_waits;
    } else if (now >= *give_up) {
      return tl::unexpected(Rejection{RejectReason::would_block,
                                      "no capacity within submit_timeout_ns (max_unacked_bytes, "
                                      "max_unacked_batches or max_pending_records reached)",
                                      {}});
    }
    // R1: woken by CapacityAvailable (the core's or the client's) or the close.
    ++m.capacity_waiters;
    m.capacity_cv.wait_until(lock, *give_up);
    --m.capacity_waiters;
  }
}

VoidResult Producer::flush(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("flush()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::VoidOp>();
  {
    std::lock_guard lock(impl_->mu);
    const Instant now = steady_now();
    auto r = impl_->client.flush(now);
    if (r) {
      impl_->waiters.add_flush(*r, op);
    } else {  // A2: a refusal too is delivered behind the callbacks already queued
      impl_->post_publish(op, VoidResult(tl::unexpected(to_error(r.error()))));
    }
    impl_->drive(now);
  }
  auto result = detail::wait_for_value(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("flush()"));
  return *result;
}

VoidResult Producer::close(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close()"));
  const auto deadline = deadline_after(timeout_ns);
  std::shared_ptr<detail::VoidOp> op;
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->close_op) {
      impl_->close_op = std::make_shared<detail::VoidOp>();
      if (const auto& done = impl_->waiters.close_result()) {
        impl_->post_publish(impl_->close_op, *done);  // closed by an abort before any close()
      } else {
        impl_->waiters.add_close(impl_->close_op);
      }
    }
    op = impl_->close_op;
    const Instant now = steady_now();
    impl_->client.close(now);  // C1: the result comes with Closed
    impl_->drive(now);
  }
  auto result = detail::wait_for_value(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("close()"));
  impl_->release_session();  // C4: the owned session is closed when close() returns
  return *result;
}

namespace {
/// Waits for a stream close's outcome (close_stream, close_with_stream).
CloseStreamResult wait_stream_close(detail::Signal& signal, const detail::CloseStreamOp& op,
                                    std::optional<Instant> deadline, std::string_view what) {
  auto result = detail::wait_for_value<CloseStreamResult>(signal, op, deadline);
  if (!result) return tl::unexpected(timed_out(what));
  return *result;
}
}  // namespace

CloseStreamResult Producer::close_stream(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close_stream()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::CloseStreamOp>();
  {
    std::lock_guard lock(impl_->mu);
    const Instant now = steady_now();
    auto r = impl_->client.close_stream(now);
    if (r) {
      impl_->waiters.add_stream_close(*r, op);
    } else {  // A2, as in flush()
      impl_->post_publish<CloseStreamResult>(op, tl::unexpected(r.error()));
    }
    impl_->drive(now);
  }
  return wait_stream_close(*impl_->signal, *op, deadline, "close_stream()");
}

CloseStreamResult Producer::close_with_stream(std::optional<std::string> final_record,
                                              std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close_with_stream()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::CloseStreamOp>();
  {
    std::lock_guard lock(impl_->mu);
    const Instant now = steady_now();
    auto r = impl_->client.close_with_stream(now, std::move(final_record));
    if (r) {
      impl_->waiters.add_stream_close(*r, op);
    } else {
      impl_->post_publish<CloseStreamResult>(op, tl::unexpected(r.error()));
    }
    impl_->drive(now);
  }
  auto result = wait_stream_close(*impl_->signal, *op, deadline, "close_with_stream()");
  if (result || result.error().code != ErrorCode::cancelled) impl_->release_session();  // C4
  return result;
}

void Producer::abort() {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  impl_->client.abort(now);
  impl_->drive(now);
}

ProducerAdapterStats Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->client.core().stats(), impl_->session->stats(), impl_->callback_exceptions.load(),
                              impl_->capacity_waits};
}

const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->client.url();
}

const std::shared_ptr<Session>& Producer::session() const noexcept {
  return impl_->session;
}

}  // namespace prodsm::blocking
