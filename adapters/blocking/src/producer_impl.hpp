// SPDX-License-Identifier: Apache-2.0
#pragma once
// The blocking producers' one implementation (Durable Streams and S2): a producer client
// (ds::ProducerClient or s2::ProducerClient: core + policy + codec, sans-IO) behind one
// mutex (`mu`), a Session whose I/O thread runs the connections and the client's
// deadline, and a FIFO dispatcher for completions. Private to the adapter;
// Producer::Impl and S2Producer::Impl are this template with their client.
//
// Order: every request and event is drained from the client under `mu` (the drive rule),
// and everything whose order matters is queued while `mu` is held — requests to the
// session (which writes them in that order: seal order), completions to the dispatcher
// (so dispatcher order is client order: A1, A2).
// Lock order: mu → Session::Impl::mu, and mu → Dispatcher::mu_ → Signal::mu. Dispatcher
// tasks and session handlers run with no lock held and may take mu.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher.hpp"
#include "prodsm/detail/adapter_producer.hpp"
#include "prodsm/detail/producer_setup.hpp"
#include "prodsm/detail/steady_now.hpp"
#include "prodsm/detail/waiters.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking::detail {

using prodsm::detail::steady_now;

inline Error waits_for_itself(std::string_view what) {
  return make_error(ErrorCode::would_block, Certainty::definite, false,
                    std::string(what) + " called from a completion callback would wait for itself");
}

inline Error timed_out(std::string_view what) {
  return make_error(ErrorCode::cancelled, Certainty::indefinite, false,
                    std::string(what) + " did not complete within timeout_ns; it goes on");
}

inline std::optional<Instant> deadline_after(std::optional<Duration> timeout_ns) {
  if (!timeout_ns) return std::nullopt;
  return saturating_add(steady_now(), *timeout_ns);
}

/// One accepted record's outcome and callback, shared by the producer and the record's
/// ticket handle (so a ticket outlives the producer).
template <class Result>
struct RecordState : Op<Result> {
  RecordState(std::shared_ptr<Signal> s, std::function<void(const Result&)> cb)
      : signal{std::move(s)}, callback{std::move(cb)} {}
  std::shared_ptr<Signal> signal;
  std::function<void(const Result&)> callback;  // touched by the dispatcher only, after acceptance
};

/// A ticket handle's ready().
template <class Result>
bool ticket_ready(const RecordState<Result>& state) {
  std::lock_guard lock(state.signal->mu);
  return state.value.has_value();
}

/// A ticket handle's wait(timeout_ns): the outcome, or nothing when `timeout_ns` passed.
template <class Result>
std::optional<Result> ticket_wait(const RecordState<Result>& state, Duration timeout_ns) {
  if (in_callback()) timeout_ns = Duration::zero();  // the outcome comes from this dispatcher
  return wait_for_value(*state.signal, state, saturating_add(steady_now(), timeout_ns));
}

/// A ticket handle's wait(): the outcome (inside a callback: would_block unless ready).
template <class Result>
Result ticket_wait(const RecordState<Result>& state, std::string_view what) {
  if (in_callback()) {
    if (auto r = ticket_wait(state, Duration::zero())) return *r;
    return tl::unexpected(waits_for_itself(what));
  }
  return *wait_for_value(*state.signal, state, std::nullopt);
}

/// Client: ds::ProducerClient or s2::ProducerClient. Options: the adapter's options
/// (callback_executor, on_callback_exception, submit_timeout_ns). State: the record
/// state (a RecordState). StreamCloseResult: the result of a stream close (Durable
/// Streams, S6), or std::nullptr_t for none.
template <class Client, class Options, class State, class StreamCloseResult = std::nullptr_t>
struct ProducerImpl
    : prodsm::detail::AdapterProducer<ProducerImpl<Client, Options, State, StreamCloseResult>, Client, Options, Session,
                                      prodsm::detail::Waiters<std::shared_ptr<State>, std::shared_ptr<Op<VoidResult>>,
                                                              std::shared_ptr<Op<StreamCloseResult>>>>,
      Participant,
      std::enable_shared_from_this<ProducerImpl<Client, Options, State, StreamCloseResult>> {
  using StatePtr = std::shared_ptr<State>;
  using Result = typename decltype(State::value)::value_type;
  using VoidOp = Op<VoidResult>;
  using StreamCloseOp = Op<StreamCloseResult>;
  using Base = prodsm::detail::AdapterProducer<
      ProducerImpl, Client, Options, Session,
      prodsm::detail::Waiters<StatePtr, std::shared_ptr<VoidOp>, std::shared_ptr<StreamCloseOp>>>;
  using Base::client, Base::mu, Base::options, Base::session, Base::owns_session, Base::waiters, Base::session_released,
      Base::capacity_waits, Base::drive, Base::observe_events, Base::run_callback;

  ProducerImpl(Options o, std::shared_ptr<Session> s, bool owned, Client c)
      : Base{std::move(o), std::move(s), owned, std::move(c)} {}

  /// Starts the dispatcher and lets the session's I/O thread keep the client's deadline.
  void start() {
    dispatcher = Dispatcher::start(options.callback_executor);
    session->impl()->attach(std::weak_ptr<Participant>(this->shared_from_this()));
  }

  // Set at creation (the dispatcher by start()), then read-only.
  std::shared_ptr<Signal> signal = std::make_shared<Signal>();
  std::shared_ptr<Dispatcher> dispatcher;

  // Guarded by mu (with the base's client and waiters).
  std::shared_ptr<VoidOp> close_op;  // every close() waits for this one
  std::optional<Instant> armed;      // the client deadline the session's I/O thread last saw
  std::condition_variable capacity_cv;
  std::uint32_t capacity_waiters = 0;

  // ---- operations ----------------------------------------------------------------------------

  /// submit(): accepted now, or waits for capacity up to submit_timeout_ns (R1; never in a
  /// callback). The record's state is registered only when accepted (A4).
  tl::expected<std::pair<Ticket, StatePtr>, Rejection> submit(std::string_view record,
                                                              std::function<void(const Result&)> on_complete) {
    std::unique_lock lock(mu);
    std::optional<Instant> give_up;
    while (true) {
      const Instant now = this->due_now();
      auto r = client.submit(now, record);  // would_block also at max_pending_records (R3)
      if (r) {
        auto state = std::make_shared<State>(signal, std::move(on_complete));
        waiters.add_record(*r, state);
        drive(now);
        return std::pair{*r, std::move(state)};
      }
      drive(now);  // a would-block sealed the partial batch (R2)
      if (r.error().reason != RejectReason::would_block) return tl::unexpected(std::move(r.error()));
      switch (wait_for_capacity(lock, now, give_up)) {
        case CapacityWait::waited: break;
        case CapacityWait::refused: return tl::unexpected(std::move(r.error()));
        case CapacityWait::timed_out: return tl::unexpected(Rejection{RejectReason::would_block, kNoCapacity, {}});
      }
    }
  }

  /// Fire-and-forget records in one call (the core's submit_many, P1, P2): accepted as a
  /// prefix of the list, with contiguous tickets. While nothing is accepted yet it waits
  /// for capacity as submit() does (R1: up to submit_timeout_ns, never in a callback);
  /// once a prefix is accepted it returns at the next refusal, so the tickets stay
  /// contiguous (the caller submits the rest again).
  SubmitManyResult submit_many(std::span<const std::string_view> records) {
    std::unique_lock lock(mu);
    std::optional<Instant> give_up;
    while (true) {
      const Instant now = this->due_now();
      auto r = client.submit_many(now, records);
      drive(now);  // a would-block sealed the partial batch (R2)
      if (r.accepted > 0 || !r.refused || r.refused->reason != RejectReason::would_block) return r;
      switch (wait_for_capacity(lock, now, give_up)) {
        case CapacityWait::waited: break;
        case CapacityWait::refused: return r;
        case CapacityWait::timed_out: r.refused->detail = kNoCapacity; return r;
      }
    }
  }

  /// C2: once the producer is closing, a submit waiting for capacity is refused with
  /// `closed` at once (woken, it submits again and the client refuses it), not when the
  /// room comes back or submit_timeout_ns passes. mu held.
  void wake_capacity_waiters() {
    if (capacity_waiters > 0) capacity_cv.notify_all();
  }

  /// What wait_for_capacity did.
  enum class CapacityWait : std::uint8_t {
    waited,     ///< woken or its deadline came: submit again
    refused,    ///< no wait allowed (inside a callback, or submit_timeout_ns 0): the refusal stands
    timed_out,  ///< submit_timeout_ns passed since the first refusal
  };
  static constexpr std::string_view kNoCapacity =
      "no capacity within submit_timeout_ns (max_unacked_bytes, max_unacked_batches or max_pending_records reached)";

  /// R1, after a would_block at `now` (mu held by `lock`): the first call starts the wait
  /// (`give_up` = now + submit_timeout_ns), every call waits until woken by
  /// CapacityAvailable (the core's or the client's) or the close, or until `give_up`.
  CapacityWait wait_for_capacity(std::unique_lock<std::mutex>& lock, Instant now, std::optional<Instant>& give_up) {
    if (!give_up) {
      if (in_callback() || options.submit_timeout_ns.count() == 0) return CapacityWait::refused;
      give_up = saturating_add(now, options.submit_timeout_ns);
      ++capacity_waits;
    } else if (now >= *give_up) {
      return CapacityWait::timed_out;
    }
    ++capacity_waiters;
    capacity_cv.wait_until(lock, *give_up);
    --capacity_waiters;
    return CapacityWait::waited;
  }

  VoidResult flush(std::optional<Duration> timeout_ns) {
    if (in_callback()) return tl::unexpected(waits_for_itself("flush()"));
    const auto deadline = deadline_after(timeout_ns);
    auto op = std::make_shared<VoidOp>();
    {
      std::lock_guard lock(mu);
      const Instant now = this->due_now();
      auto r = client.flush(now);
      if (r) {
        waiters.add_flush(*r, op);
      } else {  // A2: a refusal too is delivered behind the callbacks already queued
        post_publish(op, VoidResult(tl::unexpected(to_error(r.error()))));
      }
      drive(now);
    }
    auto result = wait_for_value(*signal, *op, deadline);
    if (!result) return tl::unexpected(timed_out("flush()"));
    return *result;
  }

  VoidResult close(std::optional<Duration> timeout_ns) {
    if (in_callback()) return tl::unexpected(waits_for_itself("close()"));
    const auto deadline = deadline_after(timeout_ns);
    std::shared_ptr<VoidOp> op;
    {
      std::lock_guard lock(mu);
      if (!close_op) {
        close_op = std::make_shared<VoidOp>();
        if (const auto& done = waiters.close_result()) {
          post_publish(close_op, *done);  // closed by an abort before any close()
        } else {
          waiters.add_close(close_op);
        }
      }
      op = close_op;
      const Instant now = this->due_now();
      client.close(now);  // C1: the result comes with Closed
      drive(now);
      wake_capacity_waiters();
    }
    auto result = wait_for_value(*signal, *op, deadline);
    if (!result) return tl::unexpected(timed_out("close()"));
    release_session();  // C4: the owned session is closed when close() returns
    return *result;
  }

  /// A stream close (S6): `start(client, now)` starts it and gives its op or the error;
  /// `closes_producer` when it closes the producer too (then the owned session is
  /// released once it finished, C4; a close refused at the call closed nothing, and
  /// releases nothing).
  template <class Start>
  StreamCloseResult stream_close(Start start, std::optional<Duration> timeout_ns, std::string_view what,
                                 bool closes_producer) {
    if (in_callback()) return tl::unexpected(waits_for_itself(what));
    const auto deadline = deadline_after(timeout_ns);
    auto op = std::make_shared<StreamCloseOp>();
    bool started = false;
    {
      std::lock_guard lock(mu);
      const Instant now = this->due_now();
      auto r = start(client, now);
      if (r) {
        started = true;
        waiters.add_stream_close(*r, op);
      } else {  // A2, as in flush()
        post_publish<StreamCloseResult>(op, tl::unexpected(r.error()));
      }
      drive(now);
      if (closes_producer && started) wake_capacity_waiters();
    }
    auto result = wait_for_value<StreamCloseResult>(*signal, *op, deadline);
    if (!result) return tl::unexpected(timed_out(what));
    if (closes_producer && started) release_session();  // C4
    return *result;
  }

  // ---- completions (dispatcher) ----------------------------------------------------------

  /// Runs the callbacks of one completed batch in ticket order and publishes the outcomes
  /// in the same order (A1, A2): a ticket turns ready after its own callback ran and
  /// before the next record's callback runs, so inside a callback every earlier ticket,
  /// of this batch too, is ready. Then frees the room of the batch's `count` records (R3).
  template <class Done, class Batch>
  void deliver(const Batch& handlers, const Done& batch, std::uint64_t count) {
    std::vector<Result> results;
    results.reserve(handlers.size());
    std::size_t published = 0;
    auto publish_before = [&](std::size_t end) {  // one lock for each run of records without a callback
      if (published == end) return;
      {
        std::lock_guard lock(signal->mu);
        for (; published < end; ++published) handlers[published].second->value = std::move(results[published]);
      }
      signal->cv.notify_all();
    };
    for (std::size_t i = 0; i < handlers.size(); ++i) {
      const auto& [ticket, state] = handlers[i];
      results.push_back(batch.record(ticket));
      if (auto& cb = state->callback) {
        publish_before(i);
        run_callback([&] { cb(results[i]); });
        cb = nullptr;
      }
    }
    publish_before(handlers.size());
    std::lock_guard lock(mu);
    client.on_delivered(steady_now(), count);
    drive(steady_now());
  }

  template <class T>
  void post_publish(std::shared_ptr<Op<T>> op, T value) {
    dispatcher->post([signal = signal, op = std::move(op), value = std::move(value)]() mutable {
      publish(*signal, *op, std::move(value));
    });
  }

  // ---- the drive rule (mu held) ------------------------------------------------------------

  /// How the client's events reach the waiters (prodsm::detail::Waiters routes them):
  /// through the dispatcher, in order (A1, A2).
  struct Sink {
    ProducerImpl& self;
    Instant now;
    bool notify_capacity = false;
    template <class Done, class Batch>
    void records(Done done, Batch handlers, std::uint64_t count) {
      if (handlers.empty()) {  // only fire-and-forget records (submit_many): delivered now (R3)
        self.client.on_delivered(now, count);
        return;
      }
      // `handlers` are the batch's submit()ed records (each registered a state), in
      // ticket order; its submit_many()ed records have none but count for room.
      self.dispatcher->post([impl = self.shared_from_this(), handlers = std::move(handlers), batch = std::move(done),
                             count] { impl->deliver(handlers, batch, count); });
    }
    template <class OpPtr, class R>
    void complete(OpPtr op, R result) {
      self.post_publish<R>(std::move(op), std::move(result));
    }
    void closed(const VoidResult&) { notify_capacity = true; }
    void capacity() { notify_capacity = true; }
  };

  // ---- the drive rule's adapter steps (mu held; the rule is the base's drive()) -----------

  void post_callback(std::function<void()> task) { dispatcher->post(std::move(task)); }
  void stop_session() { session->impl()->close(); }  // joined by close() or the destructor
  void after_drive(const Sink& sink) {
    if (sink.notify_capacity && capacity_waiters > 0) capacity_cv.notify_all();
    // Wake the session's I/O thread only when the deadline moved earlier than the one it
    // last saw: a submit that joins the partial batch costs no syscall.
    if (const auto next = this->next_deadline_at;
        next && (!armed || *next < *armed)) {  // as of the drive that just ran
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
    observe_events();
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

/// create() of an Impl (a ProducerImpl): the client, its own session (with the
/// producer's header provider), the producer owning that session (C4), started.
template <class Impl, class Options>
tl::expected<std::shared_ptr<Impl>, std::string> create_owned(Options options) {
  if (auto why = check_executor_queues(options.callback_executor)) return tl::unexpected(*why);
  auto made = prodsm::detail::owned_client<typename Impl::ClientType>(options);
  if (!made) return tl::unexpected(made.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(made->second, std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  auto impl = std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(made->first));
  impl->start();
  return impl;
}

/// attach() of an Impl: the producer on `session`, which it does not own (C4), started.
template <class Impl, class Options>
tl::expected<std::shared_ptr<Impl>, std::string> create_attached(std::shared_ptr<Session> session, Options options) {
  if (auto why = check_executor_queues(options.callback_executor)) return tl::unexpected(*why);
  auto client = prodsm::detail::attached_client<typename Impl::ClientType>(session, options);
  if (!client) return tl::unexpected(client.error());
  auto impl = std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client));
  impl->start();
  return impl;
}

}  // namespace prodsm::blocking::detail
