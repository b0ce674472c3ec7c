// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Asio producers' one implementation (Durable Streams and S2): a producer client
// (ds::ProducerClient or s2::ProducerClient: core + policy + codec, sans-IO) driven by a
// Session and one timer. Private to the adapter; Producer::Impl and S2Producer::Impl
// are this template with their client.
//
// Locking: `mu` guards the client and every table of pending handlers. Everything that
// must keep the client's order — requests (seal order), completions (A1 ticket order) —
// is posted to its strand while `mu` is held, so strand FIFO order is client order.

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "prodsm/asio/producer.hpp"
#include "prodsm/detail/adapter_producer.hpp"
#include "prodsm/detail/producer_setup.hpp"
#include "prodsm/detail/steady_now.hpp"
#include "prodsm/detail/waiters.hpp"

namespace prodsm::asio::detail {

using prodsm::detail::steady_now;

inline Error local_error(ErrorCode code, std::string message) {
  return make_error(code, Certainty::definite, false, std::move(message));
}

/// Client: ds::ProducerClient or s2::ProducerClient. Options: the adapter's options
/// (callback_executor, on_callback_exception, submit_timeout_ns). StreamCloseResult:
/// the result of a stream close (Durable Streams, S6), or std::nullptr_t for none.
template <class Client, class Options, class RecordResultT, class StreamCloseResult = std::nullptr_t>
struct ProducerImpl
    : prodsm::detail::AdapterProducer<
          ProducerImpl<Client, Options, RecordResultT, StreamCloseResult>, Client, Options, Session,
          prodsm::detail::Waiters<std::unique_ptr<Completion<RecordResultT>>, std::unique_ptr<Completion<VoidResult>>,
                                  std::unique_ptr<Completion<StreamCloseResult>>>>,
      std::enable_shared_from_this<ProducerImpl<Client, Options, RecordResultT, StreamCloseResult>> {
  using RecordCompletion = std::unique_ptr<Completion<RecordResultT>>;
  using VoidCompletion = std::unique_ptr<Completion<VoidResult>>;
  using StreamCloseCompletion = std::unique_ptr<Completion<StreamCloseResult>>;
  using Base =
      prodsm::detail::AdapterProducer<ProducerImpl, Client, Options, Session,
                                      prodsm::detail::Waiters<RecordCompletion, VoidCompletion, StreamCloseCompletion>>;
  using Base::client, Base::mu, Base::options, Base::session, Base::waiters, Base::capacity_waits, Base::drive,
      Base::observe_events, Base::run_callback;
  /// Told the ticket when a waiting submit is accepted, or why it was refused
  /// (async_submit_ticket); null for async_submit.
  using AcceptCompletion = std::unique_ptr<Completion<tl::expected<Ticket, Error>>>;

  struct Waiter {  // an async_submit waiting for capacity (R1)
    std::uint64_t id;
    std::string record;
    RecordCompletion completion;
    Instant deadline;
    AcceptCompletion accepted;  // async_submit_ticket: told at acceptance or refusal
  };

  ProducerImpl(Options o, std::shared_ptr<Session> s, bool owned, Client c)
      : Base{std::move(o), std::move(s), owned, std::move(c)},
        // A strand of its own over the session's executor, not over the session's strand:
        // a slow callback must not hold up the session's I/O (other producers' on a shared
        // session included) on an io_context with more than one thread.
        callback_strand{::asio::make_strand(options.callback_executor ? *options.callback_executor
                                                                      : session->strand().get_inner_executor())},
        timer{session->strand()} {}

  ::asio::strand<::asio::any_io_executor> callback_strand;
  ::asio::steady_timer timer;  // used on the session strand only

  // Guarded by mu (with the base's client and waiters).
  std::deque<Waiter> capacity_waiters;
  std::uint64_t next_waiter_id = 0;
  std::optional<Instant> armed;         // what the timer is set to
  std::condition_variable capacity_cv;  // submit_blocking waits here (with mu)

  // ---- operations (each takes mu, changes the client, drives) -----------------------------

  /// P1: a submit waits its turn behind async_submits already waiting for capacity
  /// (FIFO, R1): refused with would_block while any waits, so it never overtakes them.
  /// mu held.
  tl::expected<Ticket, Rejection> submit_in_turn(Instant now, std::string_view record) {
    if (!capacity_waiters.empty()) {
      return tl::unexpected(Rejection{RejectReason::would_block, kBehindWaiters, {}});
    }
    return client.submit(now, record);
  }
  static constexpr std::string_view kBehindWaiters = "waiting behind earlier async_submits";

  /// A submit that never waits; `c` (may be null) is registered only when accepted (A4).
  tl::expected<Ticket, Rejection> submit(std::string_view record, RecordCompletion c) {
    std::lock_guard lock(mu);
    const Instant now = this->due_now();
    auto r = submit_in_turn(now, record);
    if (r && c) waiters.add_record(*r, std::move(c));
    drive(now);
    return r;
  }

  /// Fire-and-forget records in one call (the core's submit_many, P1, P2): accepted as a
  /// prefix of the list, with contiguous tickets; stops at the first refusal.
  SubmitManyResult submit_many(std::span<const std::string_view> records) {
    std::lock_guard lock(mu);
    const Instant now = this->due_now();
    if (!capacity_waiters.empty() && !records.empty()) {      // P1, as submit_in_turn
      auto none = client.submit_many(now, records.first(0));  // the next ticket, nothing accepted
      none.refused = Rejection{RejectReason::would_block, kBehindWaiters, {}};
      return none;
    }
    auto r = client.submit_many(now, records);
    drive(now);
    return r;
  }

  /// A submit that blocks the calling thread while the producer is full (R1).
  tl::expected<Ticket, Rejection> submit_blocking(std::string_view record, Duration timeout_ns, RecordCompletion c) {
    std::unique_lock lock(mu);
    const auto give_up = saturating_add(steady_now(), timeout_ns);
    bool waited = false;
    while (true) {
      const Instant now = this->due_now();
      auto r = submit_in_turn(now, record);
      if (r && c) waiters.add_record(*r, std::move(c));  // A4: registered only when accepted
      drive(now);
      if (r || r.error().reason != RejectReason::would_block) return r;
      if (!std::exchange(waited, true)) ++capacity_waits;
      // R1: wait for CapacityAvailable (or close); the core sealed the partial batch (R2).
      if (capacity_cv.wait_until(lock, give_up) == std::cv_status::timeout) return r;
    }
  }

  /// async_submit and async_submit_ticket: accepted now, or queued behind earlier
  /// waiters until capacity comes back (R1, FIFO: never overtakes, P1), up to
  /// submit_timeout_ns, cancellably. `accepted` (may be null) is told the ticket at
  /// acceptance, or the refusal instead of `c`.
  void initiate_submit(std::string record, RecordCompletion c,
                       std::function<void(std::function<void()>)> install_cancel, AcceptCompletion accepted = nullptr) {
    std::lock_guard lock(mu);
    const Instant now = this->due_now();
    auto r = submit_in_turn(now, record);
    Waiter w{next_waiter_id++, std::move(record), std::move(c), saturating_add(now, options.submit_timeout_ns),
             std::move(accepted)};
    if (r) {
      accept(*r, w);
    } else if (r.error().reason == RejectReason::would_block && options.submit_timeout_ns.count() > 0) {
      ++capacity_waits;
      capacity_waiters.push_back(std::move(w));
      if (install_cancel) {
        install_cancel([weak = this->weak_from_this(), id = capacity_waiters.back().id] {
          if (auto self = weak.lock()) self->cancel_waiter(id);
        });
      }
    } else {
      refuse(w, to_error(r.error()));
    }
    drive(now);
  }

  /// A waiting or immediate submit was accepted as `ticket` (A4: only now registered).
  void accept(Ticket ticket, Waiter& w) {
    if (w.completion) waiters.add_record(ticket, std::move(w.completion));
    if (w.accepted) post_result<tl::expected<Ticket, Error>>(std::move(w.accepted), ticket);
  }

  /// A waiting or immediate submit was refused: its operation completes with `e`.
  void refuse(Waiter& w, const Error& e) {
    if (w.accepted) {
      post_result<tl::expected<Ticket, Error>>(std::move(w.accepted), tl::unexpected(e));
    } else {
      post_result<RecordResultT>(std::move(w.completion), tl::unexpected(e));
    }
  }

  void initiate_flush(VoidCompletion c) {
    std::lock_guard lock(mu);
    const Instant now = this->due_now();
    auto r = client.flush(now);
    if (r) {
      waiters.add_flush(*r, std::move(c));
    } else {  // A2: a refusal too is delivered behind the callbacks already queued
      post_result<VoidResult>(std::move(c), tl::unexpected(to_error(r.error())));
    }
    drive(now);
  }

  void initiate_close(VoidCompletion c) {
    std::lock_guard lock(mu);
    if (const auto& done = waiters.close_result()) {  // C1: a second close returns the same result
      post_result<VoidResult>(std::move(c), *done);
      return;
    }
    const Instant now = this->due_now();
    waiters.add_close(std::move(c));
    client.close(now);
    refuse_capacity_waiters();
    drive(now);
  }

  /// C2: once the producer is closing, every submit waiting for capacity (async_submit,
  /// submit_blocking) is refused at once, not when the room comes back or
  /// submit_timeout_ns passes: with `closed`, or with `e` (the close's own error). mu held.
  void refuse_capacity_waiters(const std::optional<Error>& e = std::nullopt) {
    capacity_cv.notify_all();
    const Error error = e ? *e : local_error(ErrorCode::closed, "the producer closed while waiting for capacity");
    for (auto& w : std::exchange(capacity_waiters, {})) refuse(w, error);
  }

  /// A stream close (S6): `start(client, now)` starts it and gives its op or the error;
  /// `closes_producer` when it closes the producer too (close_with_stream).
  template <class Start>
  void initiate_stream_close(Start start, StreamCloseCompletion c, bool closes_producer) {
    std::lock_guard lock(mu);
    const Instant now = this->due_now();
    auto op = start(client, now);
    if (op) {
      waiters.add_stream_close(*op, std::move(c));
      if (closes_producer) refuse_capacity_waiters();
    } else {  // A2, as a flush
      post_result<StreamCloseResult>(std::move(c), tl::unexpected(op.error()));
    }
    drive(now);
  }

  // ---- callbacks (A1, A2: on one strand, in client order) --------------------------------

  template <class Result, class C>
  void post_result(C completion, Result result) {
    if (completion) completion->settle();  // decided: a cancel may no longer replace it
    auto shared = std::make_shared<C>(std::move(completion));
    ::asio::post(callback_strand, [self = this->shared_from_this(), shared, result = std::move(result)] {
      self->run_callback([&] { (*shared)->complete(result); });
    });
  }

  /// Where and how a completion token's handler with no executor of its own runs: on the
  /// callback strand, inside run_callback (A3) while the producer lives (after, caught
  /// and dropped: nobody is left to report to, and nothing unwinds).
  detail::TokenFallback token_fallback() {
    return {callback_strand, [weak = this->weak_from_this()](const std::function<void()>& f) {
              if (auto self = weak.lock()) {
                self->run_callback(f);
                return;
              }
              try {
                f();
              } catch (...) {
              }
            }};
  }

  // ---- the drive rule's adapter steps (mu held; the rule is the base's drive()) ---------

  void post_callback(std::function<void()> task) { ::asio::post(callback_strand, std::move(task)); }
  void stop_session() { session->close(); }
  template <class SinkT>
  void after_drive(SinkT& /*sink*/) {
    arm_timer();
  }

  /// How the client's events reach the handlers (prodsm::detail::Waiters routes them).
  struct Sink {
    ProducerImpl& self;
    Instant now;
    template <class Done, class Batch>
    void records(Done done, Batch handlers, std::uint64_t count) {
      if (handlers.empty()) {  // fire-and-forget records are delivered now (R3)
        self.client.on_delivered(now, count);
        return;
      }
      auto shared = std::make_shared<Batch>(std::move(handlers));
      auto batch = std::make_shared<Done>(std::move(done));
      ::asio::post(self.callback_strand, [impl = self.shared_from_this(), shared, batch, count] {
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
      self.refuse_capacity_waiters(result ? std::nullopt : std::optional<Error>{result.error()});
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
        accept(*r, w);
      } else {
        refuse(w, to_error(r.error()));
      }
      capacity_waiters.pop_front();
    }
  }

  void arm_timer() {
    std::optional<Instant> when = this->next_deadline_at;  // as of the drive that just ran
    if (!capacity_waiters.empty()) {
      const Instant w = capacity_waiters.front().deadline;  // FIFO: earliest submit, earliest deadline
      when = when ? std::min(*when, w) : w;
    }
    if (when == armed) return;
    armed = when;
    ::asio::post(session->strand(), [weak = this->weak_from_this(), when] {
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
      refuse(capacity_waiters.front(), local_error(ErrorCode::would_block,
                                                   "no capacity within submit_timeout_ns (max_unacked_bytes "
                                                   "or max_pending_records reached)"));
      capacity_waiters.pop_front();
    }
    client.handle_timeout(now);  // linger, backoff, delivery deadline (B1, E4, E6)
    drive(now);
    observe_events();
  }

  void cancel_waiter(std::uint64_t id) {
    std::lock_guard lock(mu);
    auto it =
        std::find_if(capacity_waiters.begin(), capacity_waiters.end(), [&](const Waiter& w) { return w.id == id; });
    if (it == capacity_waiters.end()) return;  // already submitted: a durable record cannot be unsent
    refuse(*it, local_error(ErrorCode::cancelled, "async_submit cancelled while waiting for capacity"));
    capacity_waiters.erase(it);
  }
};

/// create() of an Impl (a ProducerImpl): the client, its own session on `executor` (with
/// the producer's header provider), the producer owning that session (C4).
template <class Impl, class Options>
tl::expected<std::shared_ptr<Impl>, std::string> create_owned(::asio::any_io_executor executor, Options options) {
  auto made = prodsm::detail::owned_client<typename Impl::ClientType>(options);
  if (!made) return tl::unexpected(made.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(std::move(executor), made->second, std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  return std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(made->first));
}

/// attach() of an Impl: the producer on `session`, which it does not own (C4).
template <class Impl, class Options>
tl::expected<std::shared_ptr<Impl>, std::string> create_attached(std::shared_ptr<Session> session, Options options) {
  auto client = prodsm::detail::attached_client<typename Impl::ClientType>(session, options);
  if (!client) return tl::unexpected(client.error());
  return std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client));
}

}  // namespace prodsm::asio::detail
