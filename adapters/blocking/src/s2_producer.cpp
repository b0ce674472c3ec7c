// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::S2Producer: an s2::ProducerClient behind one mutex (`mu`), a Session
// whose I/O thread runs the connections and the client's deadline, and the FIFO
// dispatcher for completions. Order and lock order as in producer.cpp: requests and
// completions are queued while `mu` is held (seal order, ticket order: A1, A2);
// mu → Session::Impl::mu and mu → Dispatcher → Signal::mu.
#include "prodsm/blocking/s2_producer.hpp"

#include <atomic>
#include <unordered_map>
#include <vector>

#include "dispatcher.hpp"
#include "prodsm/detail/ticket_table.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking {
namespace detail {

struct S2TicketState : Op<S2RecordResult> {
  S2TicketState(std::shared_ptr<Signal> s, S2RecordCallback cb) : signal{std::move(s)}, callback{std::move(cb)} {}
  std::shared_ptr<Signal> signal;
  S2RecordCallback callback;  // touched by the dispatcher only, after acceptance
};

}  // namespace detail

namespace {

using detail::in_callback;
using VoidOpPtr = std::shared_ptr<detail::Op<VoidResult>>;

Instant steady_now() {
  return std::chrono::steady_clock::now();
}

Error waits_for_itself(std::string_view what) {
  return make_error(ErrorCode::would_block, Certainty::definite, false,
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

/// The session's server as a URL (TLS for https endpoints).
tl::expected<ds::StreamUrl, std::string> server_url(const s2::Endpoint& e) {
  auto url = ds::StreamUrl::parse(std::string(e.tls ? "https://" : "http://") + e.authority() + "/");
  if (!url) return tl::unexpected("endpoint: " + url.error());
  return url;
}

}  // namespace

struct S2Producer::Impl : Participant, std::enable_shared_from_this<S2Producer::Impl> {
  using TicketStatePtr = std::shared_ptr<detail::S2TicketState>;

  Impl(S2ProducerOptions o, std::shared_ptr<Session> s, bool owned, s2::ProducerClient c)
      : options{std::move(o)}, session{std::move(s)}, owns_session{owned}, client{std::move(c)} {}

  S2ProducerOptions options;
  std::shared_ptr<Session> session;
  const bool owns_session;
  std::shared_ptr<detail::Signal> signal = std::make_shared<detail::Signal>();
  std::shared_ptr<detail::Dispatcher> dispatcher;

  // Guarded by mu.
  mutable std::mutex mu;
  s2::ProducerClient client;
  prodsm::detail::TicketTable<TicketStatePtr> records;
  std::unordered_map<std::uint64_t, VoidOpPtr> flushes;
  std::vector<VoidOpPtr> closes;
  std::optional<VoidResult> close_result;
  VoidOpPtr close_op;  // every close() waits for this one
  std::optional<Instant> armed;
  bool session_released = false;
  std::condition_variable capacity_cv;
  std::uint32_t capacity_waiters = 0;
  std::uint64_t capacity_waits = 0;
  std::atomic<std::uint64_t> callback_exceptions{0};

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

  /// Runs one batch's callbacks in ticket order, publishes the outcomes, frees room (R3).
  void deliver(const std::vector<TicketStatePtr>& states, const s2::RecordsCompleted& batch) {
    std::vector<S2RecordResult> results;
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

  void post_publish(VoidOpPtr op, VoidResult value) {
    dispatcher->post([signal = signal, op = std::move(op), value = std::move(value)]() mutable {
      detail::publish(*signal, *op, std::move(value));
    });
  }

  // ---- the drive rule (mu held) ------------------------------------------------------------

  void drive(Instant now) {
    (void)now;
    while (auto r = client.poll_request()) {
      session->exchange(std::move(r->request), [weak = weak_from_this(), tag = r->tag](ExchangeResult result) {
        auto self = weak.lock();
        if (!self) return;
        std::lock_guard lock(self->mu);
        self->client.handle_outcome(steady_now(), tag, std::move(result));
        self->drive(steady_now());
      });
    }
    bool notify_capacity = false;
    while (auto event = client.poll_event()) {
      std::visit([&](auto& e) { notify_capacity = route(e) || notify_capacity; }, *event);
    }
    if (owns_session && !session_released && client.finished()) {
      session_released = true;
      session->impl()->close();  // C4: the owned session stops (joined by close() or the destructor)
    }
    if (notify_capacity && capacity_waiters > 0) capacity_cv.notify_all();
    if (const auto next = client.next_deadline(); next && (!armed || *next < *armed)) {
      armed = next;
      session->impl()->wake();
    }
  }

  /// Routes one event; true when capacity waiters should look again.
  bool route(s2::RecordsCompleted& done) {
    std::vector<TicketStatePtr> states;  // every accepted ticket registered one, in order (P2)
    records.take(done.first, done.last, [&](Ticket, TicketStatePtr h) { states.push_back(std::move(h)); });
    dispatcher->post([impl = shared_from_this(), states = std::move(states), batch = std::move(done)] {
      impl->deliver(states, batch);
    });
    return false;
  }
  bool route(BarrierCompleted& done) {
    auto it = flushes.find(done.barrier.value);
    if (it == flushes.end()) return false;
    post_publish(std::move(it->second), VoidResult(done.result));
    flushes.erase(it);
    return false;
  }
  bool route(Closed& closed) {
    close_result = closed.result;
    for (auto& op : std::exchange(closes, {})) post_publish(std::move(op), VoidResult(closed.result));
    return true;
  }
  bool route(CapacityAvailable&) { return true; }

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

  void release_session() {
    if (!owns_session) return;
    {
      std::lock_guard lock(mu);
      session_released = true;
    }
    session->close();
  }

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

// ---- S2RecordTicket --------------------------------------------------------------------------

bool S2RecordTicket::ready() const {
  std::lock_guard lock(state_->signal->mu);
  return state_->value.has_value();
}

std::optional<S2RecordResult> S2RecordTicket::wait(Duration timeout_ns) const {
  if (in_callback()) timeout_ns = Duration::zero();  // the outcome comes from this dispatcher
  return detail::wait_for_value(*state_->signal, *state_, saturating_add(steady_now(), timeout_ns));
}

S2RecordResult S2RecordTicket::wait() const {
  if (in_callback()) {
    if (auto r = wait(Duration::zero())) return *r;
    return tl::unexpected(waits_for_itself("S2RecordTicket::wait()"));
  }
  return *detail::wait_for_value(*state_->signal, *state_, std::nullopt);
}

// ---- S2Producer ------------------------------------------------------------------------------

tl::expected<S2Producer, std::string> S2Producer::create(S2ProducerOptions options) {
  auto client = s2::ProducerClient::create(options);
  if (!client) return tl::unexpected(client.error());
  auto url = server_url(options.endpoint);
  if (!url) return tl::unexpected(url.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(*url, std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  auto impl = std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(*client));
  impl->dispatcher = detail::Dispatcher::start(impl->options.callback_executor);
  impl->session->impl()->attach(std::weak_ptr<Participant>(impl));
  return S2Producer(std::move(impl));
}

tl::expected<S2Producer, std::string> S2Producer::attach(std::shared_ptr<Session> session, S2ProducerOptions options) {
  if (!session) return tl::unexpected(std::string{"session: null"});
  if (options.header_provider) {
    return tl::unexpected(std::string{"header_provider: an attached producer uses its session's (SessionOptions)"});
  }
  // The session's transport is the one that runs: its mode and stall detection count.
  if (auto why = s2::validate_attached(options, session->options())) return tl::unexpected(*why);
  auto client = s2::ProducerClient::create(options);
  if (!client) return tl::unexpected(client.error());
  if (options.endpoint.host != session->host() || options.endpoint.port != session->port()) {
    return tl::unexpected("endpoint: " + options.endpoint.authority() + " is not the session's server " +
                          session->host() + ":" + std::to_string(session->port()));
  }
  auto impl = std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client));
  impl->dispatcher = detail::Dispatcher::start(impl->options.callback_executor);
  impl->session->impl()->attach(std::weak_ptr<Participant>(impl));
  return S2Producer(std::move(impl));
}

S2Producer::S2Producer(std::shared_ptr<Impl> impl) noexcept : impl_{std::move(impl)} {}
S2Producer::S2Producer(S2Producer&&) noexcept = default;
S2Producer& S2Producer::operator=(S2Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
S2Producer::~S2Producer() {
  if (impl_) impl_->shutdown();
}

tl::expected<S2RecordTicket, Rejection> S2Producer::submit(std::string_view record) {
  return submit(record, nullptr);
}

tl::expected<S2RecordTicket, Rejection> S2Producer::submit(std::string_view record, S2RecordCallback on_complete) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  std::optional<Instant> give_up;
  while (true) {
    const Instant now = steady_now();
    auto r = m.client.submit(now, record);  // would_block also at max_pending_records (R3)
    if (r) {
      auto state = std::make_shared<detail::S2TicketState>(m.signal, std::move(on_complete));
      m.records.put(*r, state);  // A4: registered only when accepted
      m.drive(now);
      return S2RecordTicket(*r, std::move(state));
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
    ++m.capacity_waiters;  // R1: woken by CapacityAvailable or the close
    m.capacity_cv.wait_until(lock, *give_up);
    --m.capacity_waiters;
  }
}

VoidResult S2Producer::flush(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("flush()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::Op<VoidResult>>();
  {
    std::lock_guard lock(impl_->mu);
    const Instant now = steady_now();
    auto r = impl_->client.flush(now);
    if (r) {
      impl_->flushes.emplace(r->value, op);
    } else {  // A2: a refusal too is delivered behind the callbacks already queued
      impl_->post_publish(op, VoidResult(tl::unexpected(to_error(r.error()))));
    }
    impl_->drive(now);
  }
  auto result = detail::wait_for_value(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("flush()"));
  return *result;
}

VoidResult S2Producer::close(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close()"));
  const auto deadline = deadline_after(timeout_ns);
  VoidOpPtr op;
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->close_op) {
      impl_->close_op = std::make_shared<detail::Op<VoidResult>>();
      if (impl_->close_result) {
        impl_->post_publish(impl_->close_op, *impl_->close_result);  // closed by an abort before any close()
      } else {
        impl_->closes.push_back(impl_->close_op);
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

void S2Producer::abort() {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  impl_->client.abort(now);
  impl_->drive(now);
}

ProducerAdapterStats S2Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->client.core().stats(), impl_->session->stats(), impl_->callback_exceptions.load(),
                              impl_->capacity_waits};
}

const std::shared_ptr<Session>& S2Producer::session() const noexcept {
  return impl_->session;
}

}  // namespace prodsm::blocking
