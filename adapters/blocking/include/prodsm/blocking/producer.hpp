// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer.hpp
/// prodsm::blocking::Producer: the Durable Streams Producer on plain POSIX sockets, for
/// programs without an event loop. It owns a ds::ProducerClient (the sans-IO core, codec
/// and stream-close logic shared with the Asio adapter) and one callback dispatcher
/// thread, and uses a Session (owned, or attached: C4) whose I/O thread runs the
/// connections and the producer's deadline:
///
///  - The client sits behind one mutex. Every public member function may be called from
///    any thread; submit() answers accepted/rejected before it returns (A4).
///  - The session's I/O thread runs the connections with ppoll(2) on nonblocking sockets
///    (pipelined or pooled, as the session's options say) and the producer's one
///    deadline; an eventfd wakes it when another thread's input needs the network or
///    moved the deadline earlier. Requests leave in seal order.
///  - Completions (record callbacks, ticket outcomes, flush / close / close_stream
///    results) run in the core's order from one FIFO dispatcher: a thread of its own, or
///    an injected executor behind a serializing queue (A1).
///
/// P1 with several threads — the cut rule: a call takes effect at the moment it takes
/// the core's mutex. A flush covers exactly the records whose submit was *accepted*
/// before the flush took the mutex; a submit still waiting for capacity has not been
/// accepted yet, so a flush from another thread does not cover it (and another thread's
/// submit may be accepted before it: capacity waits are not FIFO across threads).
/// Within one thread, calls take effect in call order.
///
/// Waiting calls made from a completion callback (of any blocking producer) would wait
/// for the dispatcher that is running them, so they do not wait: flush(), close() and
/// close_stream() fail at once with `would_block`, RecordTicket::wait gives only an
/// outcome already delivered, and submit() does not wait for capacity.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/blocking/session.hpp"
#include "prodsm/ds/client.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/producer_event.hpp"

namespace prodsm::blocking {

/// What a successful record completion carries (P4): its ticket, its index in the
/// batch, and the batch acknowledgement (ds/results.hpp; the Asio producer reports the
/// same types).
using RecordAck = ds::RecordAck;
/// A record's outcome: durable, or the error that failed it (E1, E2, C5).
using RecordResult = ds::RecordResult;
/// A flush's or close's outcome.
using VoidResult = ds::VoidResult;
/// close_stream()'s and close_with_stream()'s outcome: the stream's final offset, or the error.
using CloseStreamResult = ds::CloseStreamResult;
/// A record completion callback. Runs once, on the dispatcher, in ticket order (A1).
using RecordCallback = std::function<void(const RecordResult&)>;
/// An injected executor (A1): runs the given task later, on a thread of its choosing.
/// It must not run the task inline (inside the call): the producer calls it while
/// holding its lock. create() and attach() refuse an executor that does
/// ("callback_executor: ..."), found with one probe task that does nothing.
using Executor = std::function<void(std::function<void()>)>;

namespace detail {
struct TicketState;
}  // namespace detail

/// A handle to one accepted record (P2): wait for its outcome. Copyable; the outcome
/// stays readable for as long as a handle exists, also after the producer is gone.
///
/// There is deliberately no `then(callback)`: a callback attached after the outcome was
/// delivered could no longer run in ticket order (A1). Pass the callback to submit()
/// instead, where it is registered atomically with the acceptance.
class RecordTicket {
 public:
  /// The record's ticket (dense from 0 in acceptance order, P3).
  [[nodiscard]] Ticket id() const noexcept { return id_; }
  /// True once the outcome was delivered (after the record's callback, if any, ran).
  [[nodiscard]] bool ready() const;
  /// Waits up to `timeout_ns` for the outcome; nullopt when it did not come in time.
  /// Called from a completion callback: does not wait (the outcome comes from the same
  /// dispatcher), returns the outcome if delivered, else nullopt.
  [[nodiscard]] std::optional<RecordResult> wait(Duration timeout_ns) const;
  /// Waits for the outcome without a bound. Every record completes within the core's
  /// delivery_timeout_ns (E6) or when the producer is closed, aborted or destroyed (C5).
  /// From a completion callback: fails with `would_block` unless already delivered.
  [[nodiscard]] RecordResult wait() const;

 private:
  friend class Producer;
  RecordTicket(Ticket id, std::shared_ptr<detail::TicketState> state) noexcept : id_{id}, state_{std::move(state)} {}
  Ticket id_;
  std::shared_ptr<detail::TicketState> state_;
};

/// Configuration of a blocking Producer: the options both adapters share
/// (ds::ProducerOptions: url, content_type, producer, session, extra_headers,
/// submit_timeout_ns, max_pending_records) plus the callback executor. Every duration is
/// in ns; every field is bounded and checked by Producer::create, which names the first
/// invalid one.
struct ProducerOptions : ds::ProducerOptions {
  /// A1: run completions through this executor (still one at a time, in ticket order)
  /// instead of the producer's own dispatcher thread.
  Executor callback_executor{};
  /// Per-request headers of the session the producer creates: called for every request
  /// attempt, retries included, e.g. for a bearer token that is refreshed while the
  /// producer runs (prodsm/header_provider.hpp). Producer headers and the body stay as
  /// sealed (S2). An attached producer uses its session's provider instead (set here it is
  /// refused: "header_provider: ...").
  HeaderProvider header_provider{};
  /// A3: called (on the dispatcher) with every exception a completion callback threw.
  std::function<void(std::exception_ptr)> on_callback_exception{};
  /// Retries, reconnects, epoch claims and the terminal error, each with its cause and a
  /// level (prodsm/producer_event.hpp): events.on_event runs on the dispatcher, in order
  /// with the completions, never under the producer's lock; its exceptions count as A3's.
  EventOptions events{};
};

/// stats() of every adapter producer: counters and gauges (prodsm/adapter_stats.hpp).
using ProducerAdapterStats = prodsm::ProducerAdapterStats;

/// The Durable Streams Producer on blocking POSIX sockets. Movable, not copyable.
class Producer {
 public:
  /// Validates `options`, creates and owns a Session to the URL's server (its I/O thread
  /// starts; no connection is opened before the first request) and starts the dispatcher
  /// thread (unless an executor is injected). Errors name the invalid option: "url: ...",
  /// "content_type: ...", "producer.<core field>: ...", "session.<field>: ...". C4: the
  /// producer's close() closes the owned session.
  [[nodiscard]] static tl::expected<Producer, std::string> create(ProducerOptions options);
  /// Creates a producer attached to `session` (C4: close() leaves it open; options.session
  /// is ignored). The session must talk to the URL's host and port.
  /// Errors: "session: null"; "session: it is closed ..." (attach to an open one);
  /// "header_provider: ..." (set: an attached producer uses its session's); an invalid
  /// option as create() names it, checked against the session's transport (its mode and
  /// stall detection, e.g. plain appends with more than one in flight over pooled
  /// connections, E4); "url: HOST:PORT is not the session's server ...".
  [[nodiscard]] static tl::expected<Producer, std::string> attach(std::shared_ptr<Session> session,
                                                                  ProducerOptions options);

  /// Moves the producer; the moved-from one may only be destroyed or assigned.
  Producer(Producer&&) noexcept;
  /// Aborts the producer being replaced unless it was closed (C5).
  Producer& operator=(Producer&&) noexcept;
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  /// Without a completed close, aborts (C5): unresolved records fail with `aborted`,
  /// definite or indefinite; their callbacks run (on the own dispatcher thread before
  /// the destructor returns; on an injected executor whenever it runs them). Joins the
  /// threads.
  ~Producer();

  /// Submits one record (bytes copied). Accepted: the ticket, which completes exactly
  /// once (P2). Refused (A4): the Rejection — `closed` (C2), `failed` with the sticky
  /// error (E1), `record_too_large` (B4), `invalid_record` (B5), or `would_block` when
  /// no capacity freed within submit_timeout_ns (R1, R3). Blocks only while waiting for
  /// capacity.
  [[nodiscard]] tl::expected<RecordTicket, Rejection> submit(std::string_view record);
  /// Same, and `on_complete` runs exactly once with the outcome, on the dispatcher, in
  /// ticket order (A1), before the ticket turns ready. A refused submit never registers
  /// it (A4): it is destroyed without being called.
  [[nodiscard]] tl::expected<RecordTicket, Rejection> submit(std::string_view record, RecordCallback on_complete);
  /// Submits many records in one call, without callbacks or ticket handles (P1, P2: the
  /// core's submit_many): records [0, accepted) of the list were accepted, with tickets
  /// first .. first + accepted - 1, and their outcomes reach flush/close results and
  /// stats(). `refused` says why record `accepted` was refused; the rest were not
  /// submitted (submit them again). While nothing is accepted it waits for capacity as
  /// submit() does (R1: up to submit_timeout_ns; never inside a callback); once some
  /// are accepted it returns at the next refusal, so the tickets stay contiguous.
  [[nodiscard]] SubmitManyResult submit_many(std::span<const std::string_view> records);

  /// Flush barrier (F1–F5): seals the partial batch at once and blocks until every
  /// record accepted before it (the cut, see the file comment) is durable or failed and
  /// its callback ran (A2; also when the core refuses the flush at once). Error: the
  /// sticky terminal error when a covered record failed (F5) or the producer already
  /// failed (E1); `closed` after close (C2); `would_block` with max_pending_barriers pending;
  /// `cancelled` when `timeout_ns` (ns) passed first — the barrier stays in place and
  /// completes unobserved.
  [[nodiscard]] VoidResult flush(std::optional<Duration> timeout_ns = std::nullopt);

  /// Closes the producer (C1): flush, drain, release. Blocks until every record's
  /// callback ran (A2), then closes the owned connection and stops the I/O thread (C4);
  /// the stream on the server stays open (see close_stream). Success or the terminal
  /// error; a second close returns the same result. `cancelled` when `timeout_ns` (ns)
  /// passed first (the close goes on; call close() again to wait for it).
  [[nodiscard]] VoidResult close(std::optional<Duration> timeout_ns = std::nullopt);

  /// Closes the *stream* on the server, a separate operation from close() (C4): a flush
  /// barrier, then — if every covered record succeeded — `POST` with
  /// `Stream-Closed: true` (no producer headers, so a repeat is answered 204; retried
  /// within the retry policy). Returns the final offset, or the barrier's error, or the
  /// request's classified error. `cancelled` when `timeout_ns` (ns) passed first. The
  /// producer stays open, but later appends fail with stream_closed (S6).
  [[nodiscard]] CloseStreamResult close_stream(std::optional<Duration> timeout_ns = std::nullopt);

  /// Closes the producer *and* the stream in one sequenced step, as the TypeScript
  /// IdempotentProducer.close(finalMessage) does (C1 + S2 + S6): close() first (every
  /// record submitted before is acknowledged; later submits fail with `closed`), then one
  /// `Stream-Closed: true` request carrying the producer headers with the next unused seq
  /// (so a resend is deduplicated and another producer's close of the closed stream gets
  /// 409 `stream_closed`) and `final_record` as its body when present (checked like a
  /// submit, within max_batch_bytes too (B4): a refused one is `invalid_record` and
  /// nothing is closed; JSON mode frames it `[record]`), then the owned session is closed
  /// (C4). On 403 stale epoch with auto_claim the close is resent once as server epoch + 1,
  /// seq 0 (S5). Returns the final offset or the error; a second call is a retry of the same
  /// close: the same result, and its own final record is not appended (only the first
  /// call's is, as the server deduplicates a resent close); after a plain close() it fails
  /// with `closed`.
  /// `cancelled` when `timeout_ns` passed.
  [[nodiscard]] CloseStreamResult close_with_stream(std::optional<std::string> final_record = std::nullopt,
                                                    std::optional<Duration> timeout_ns = std::nullopt);

  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort();

  /// Counters.
  [[nodiscard]] ProducerAdapterStats stats() const;
  /// The parsed stream URL.
  [[nodiscard]] const ds::StreamUrl& url() const noexcept;
  /// The session the producer uses (owned or attached).
  [[nodiscard]] const std::shared_ptr<Session>& session() const noexcept;

  /// The private implementation (defined in producer.cpp); not for users.
  struct Impl;

 private:
  explicit Producer(std::shared_ptr<Impl> impl) noexcept;
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::blocking
