// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file adapter_producer.hpp
/// Internal: the part of an adapter producer that is the same on both adapters and both
/// protocols — the producer client under one lock, the drive rule (requests to the
/// session, events to the handlers, the owned session released once the client finished,
/// C4), callbacks that never unwind (A3), the event hook fed from EventTracker, abort and
/// stats. Each adapter's ProducerImpl derives from it (CRTP) and adds only how it waits
/// and how a completion is delivered (an Asio strand, a dispatcher thread: A1, A2).
/// Not part of the public API; included by the adapters only.
///
/// Derived provides (called with `mu` held unless noted):
///  - `struct Sink` built as `Sink{derived, now}`, for Waiters::route (its `records`,
///    `complete`, `closed`, `capacity`);
///  - `void post_callback(std::function<void()>)`: runs a task where callbacks run,
///    behind every completion posted before it (A1, A2);
///  - `void stop_session()`: closes the owned session (C4);
///  - `void after_drive(Sink&)`: what the adapter does once the client's outputs are
///    drained (arm its timer, wake a waiting submit);
///  - `std::weak_ptr<Derived> weak_from_this()` / `shared_from_this()`
///    (std::enable_shared_from_this).

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/detail/event_tracker.hpp"
#include "prodsm/detail/steady_now.hpp"
#include "prodsm/session_options.hpp"
#include "prodsm/time.hpp"

namespace prodsm::detail {

/// Client: ds::ProducerClient or s2::ProducerClient. Options: the adapter's producer
/// options (events, on_callback_exception). Session: the adapter's Session (exchange(),
/// stats()). WaitersT: the prodsm::detail::Waiters the adapter keeps its handlers in.
template <class Derived, class Client, class Options, class Session, class WaitersT>
struct AdapterProducer {
  using ClientType = Client;

  AdapterProducer(Options o, std::shared_ptr<Session> s, bool owned, Client c)
      : options{std::move(o)},
        session{std::move(s)},
        owns_session{owned},
        client{std::move(c)},
        tracker{session->stats(), options.events.min_level} {}

  // Set at creation, then read-only.
  const Options options;
  const std::shared_ptr<Session> session;
  const bool owns_session;

  // Any thread (atomic): callbacks that threw (A3).
  std::atomic<std::uint64_t> callback_exceptions{0};

  // Guarded by mu.
  mutable std::mutex mu;
  Client client;
  WaitersT waiters;  ///< the handlers the client's events are routed to
  bool session_released = false;
  std::uint64_t capacity_waits = 0;  ///< submits that had to wait for capacity (R1)
  EventTracker tracker;              ///< what the event hook has been told
  std::uint64_t events_made = 0;
  /// The client's next deadline as of the last drive (every input ends with one, and only
  /// inputs move it): what due_now() compares with and the adapter arms its timer at.
  std::optional<Instant> next_deadline_at;
  /// Outcomes a session completed inline, inside exchange() while this producer's drive
  /// held mu (a closed blocking session fails a request at once): the drive hands them to
  /// the client once exchange() returned, rather than the handler locking mu a second
  /// time on the same thread (a deadlock).
  std::vector<std::pair<std::uint64_t, ExchangeResult>> inline_outcomes;

  /// The clock, with every deadline already due applied first (mu held): an input that
  /// arrives after a deadline but before the adapter's timer ran finds the deadline's
  /// effects — a linger's seal (B1), a backoff's resend (E4), a delivery timeout (E6) —
  /// exactly as if the timer had run first. Never early (D3), only never late.
  Instant due_now() {
    const Instant now = steady_now();
    if (next_deadline_at && *next_deadline_at <= now) client.handle_timeout(now);
    return now;
  }

  /// Aborts the client (C5) and drives what that completes.
  void abort() {
    std::lock_guard lock(mu);
    const Instant now = due_now();
    client.abort(now);
    drive(now);
  }

  /// The client's, the session's and the adapter's counters.
  ProducerAdapterStats stats() const {
    std::lock_guard lock(mu);
    return adapter_stats(client, session->stats(), callback_exceptions.load(), capacity_waits, events_made);
  }

  /// Runs a user callback (no lock held): an exception is caught, counted and handed to
  /// on_callback_exception, never unwound into the adapter or the core (A3).
  void run_callback(const std::function<void()>& f) noexcept {
    try {
      f();
    } catch (...) {
      ++callback_exceptions;
      if (options.on_callback_exception) {
        try {
          options.on_callback_exception(std::current_exception());
        } catch (...) {
        }
      }
    }
  }

  /// The drive rule (mu held), after every input: every request the client has goes to
  /// the session (in seal order), every event to its handlers, again until routing the
  /// events made no request (a handler may submit); an owned session is
  /// closed once the client finished (C4); then the adapter's own step.
  void drive(Instant now) {
    typename Derived::Sink sink{self(), now};
    // Until an event round routes nothing: routing an event may submit (a capacity waiter
    // retried, R1), and a batch that submit seals (full, or R2) must go out now — drained
    // before the events it stayed queued in the client with no deadline but the
    // delivery timeout.
    bool routed = true;
    while (routed) {
      while (auto r = client.poll_request()) {
        {
          const DrivingMark driving{this};
          session->exchange(
              std::move(r->request), [weak = self().weak_from_this(), tag = r->tag](ExchangeResult result) {
                auto strong = weak.lock();
                if (!strong) return;
                if (DrivingMark::current == static_cast<AdapterProducer*>(strong.get())) {  // inline: mu is held here
                  strong->inline_outcomes.emplace_back(tag, std::move(result));
                  return;
                }
                std::lock_guard lock(strong->mu);
                const Instant at = strong->due_now();
                strong->client.handle_outcome(at, tag, std::move(result));
                strong->drive(at);
                strong->observe_events();
              });
        }
        // An outcome given inline (a resend it makes is polled next in this loop).
        for (auto& [tag, result] : std::exchange(inline_outcomes, {})) {
          client.handle_outcome(now, tag, std::move(result));
        }
      }
      routed = false;
      while (auto event = client.poll_event()) {
        waiters.route(*event, sink);
        routed = true;
      }
    }
    if (owns_session && !session_released && client.finished()) {
      session_released = true;
      self().stop_session();  // C4: an owned session is closed, an attached one left open
    }
    next_deadline_at = client.next_deadline();
    self().after_drive(sink);
  }

  /// The events the last input made (mu held), to the hook where callbacks run: behind
  /// the completions the same input posted, never under mu.
  void observe_events() {
    if (!options.events.on_event) return;
    std::vector<ProducerEvent> made;
    tracker.observe(client, session->stats(), made);
    for (auto& e : made) {
      ++events_made;
      self().post_callback([strong = self().shared_from_this(), e = std::move(e)] {
        strong->run_callback([&] { strong->options.events.on_event(e); });
      });
    }
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  /// Marks the producer whose drive is calling exchange() on this thread, so a handler
  /// the session runs inline (before exchange() returns) is told apart from one that
  /// runs later on another thread or turn.
  struct DrivingMark {
    static inline thread_local AdapterProducer* current = nullptr;
    explicit DrivingMark(AdapterProducer* p) noexcept : previous{std::exchange(current, p)} {}
    ~DrivingMark() { current = previous; }
    DrivingMark(const DrivingMark&) = delete;
    DrivingMark& operator=(const DrivingMark&) = delete;
    AdapterProducer* previous;
  };
};

}  // namespace prodsm::detail
