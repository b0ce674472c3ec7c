// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer.hpp
/// prodsm::blocking::Producer: the Durable Streams Producer on plain POSIX sockets, for
/// programs without an event loop. It owns a core DurableStreamsProducer, one I/O thread
/// and one callback dispatcher thread:
///
///  - The core sits behind one mutex. Every public member function may be called from
///    any thread; submit() answers accepted/rejected before it returns (A4).
///  - The I/O thread drives the core's deadline and one pipelined keep-alive HTTP/1.1
///    connection with poll(2) on nonblocking sockets; an eventfd wakes it when another
///    thread's input needs the network or moved the core's deadline earlier. Requests
///    leave in seal order.
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
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/durable_streams.hpp"

namespace prodsm::blocking {

/// What a successful record completion carries (P4): its ticket, its index in the batch,
/// and the batch acknowledgement (next offset, duplicate flag) shared by every record of
/// the batch.
struct RecordAck {
  Ticket ticket;            ///< the record's ticket, as RecordTicket::id() (P2)
  std::uint64_t index = 0;  ///< index of the record in its batch (P4)
  /// The batch's acknowledgement (P4, S3), shared by every record of the batch; never null.
  std::shared_ptr<const DurableStreamsPolicy::Ack> batch_ack;
  /// Stream-Next-Offset after the record's batch (opaque; empty on a duplicate, S3).
  [[nodiscard]] const std::string& next_offset() const { return batch_ack->next_offset; }
  /// The batch was a duplicate of one already appended (S3).
  [[nodiscard]] bool duplicate() const { return batch_ack->duplicate; }
};

/// A record's outcome: durable, or the error that failed it (E1, E2, C5).
using RecordResult = tl::expected<RecordAck, Error>;
/// A flush's or close's outcome.
using VoidResult = tl::expected<void, Error>;
/// close_stream()'s outcome: the stream's final offset, or the error.
using CloseStreamResult = tl::expected<ds::CloseResult, Error>;
/// A record completion callback. Runs once, on the dispatcher, in ticket order (A1).
using RecordCallback = std::function<void(const RecordResult&)>;
/// An injected executor (A1): runs the given task later, on a thread of its choosing.
/// It must not run the task inline (inside the call): the producer calls it while
/// holding its lock.
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

/// Configuration of a blocking Producer. Every duration is in ns; every field is bounded
/// and checked by Producer::create, which names the first invalid one.
struct ProducerOptions {
  /// The stream: `http://host[:port]/path`.
  std::string url;
  /// The stream's content type, sent on every append. `application/json` (or a `+json`
  /// type) requires `producer.protocol.body_format == json`, and vice versa.
  std::string content_type = "application/octet-stream";
  /// The core's configuration (linger, limits, retry, idempotent producer, ...).
  DurableStreamsConfig producer{};
  /// Extra headers on every request, e.g. Authorization (checked by
  /// ds::check_extra_header).
  ds::Headers extra_headers{};
  /// Bound on resolving + connecting (ns), 1 ms..10 min. Default 10 s. On expiry the
  /// requests waiting for the connection fail `unavailable` (definite, retryable).
  Duration connect_timeout_ns = std::chrono::seconds{10};
  /// Bound on one request, from its first byte written to the last byte of its response
  /// (ns), 1 ms..10 min. Default 30 s. On expiry the connection is closed and its written
  /// requests fail `connection_lost` (indefinite, retryable).
  Duration request_timeout_ns = std::chrono::seconds{30};
  /// A connection idle for longer than this (ns) is replaced before reuse, so a request
  /// never races the server's keep-alive close (the reference server closes idle
  /// connections after 5 s). 0..10 min. Default 4 s.
  Duration idle_reuse_limit_ns = std::chrono::seconds{4};
  /// Bounds on each response (R3); exceeding one is a protocol_error.
  ds::ResponseLimits response_limits{};
  /// How long submit() waits for capacity (R1) before it is refused with `would_block`
  /// (ns), 0..10 min (0: never wait). Default 30 s.
  Duration submit_timeout_ns = std::chrono::seconds{30};
  /// Most records accepted whose outcome was not yet delivered — in the core, or
  /// completed and waiting for the dispatcher (R3: bounds the adapter's per-record
  /// state when callbacks are slow). A submit past it waits like a would-block.
  /// 1..16 777 216. Default 1 048 576.
  std::uint32_t max_pending_records = 1U << 20;
  /// A1: run completions through this executor (still one at a time, in ticket order)
  /// instead of the producer's own dispatcher thread.
  Executor callback_executor{};
  /// A3: called (on the dispatcher) with every exception a completion callback threw.
  std::function<void(std::exception_ptr)> on_callback_exception{};
};

/// Counters of the producer's connection (since creation).
struct ConnectionStats {
  std::uint64_t connections_opened = 0;  ///< TCP connections established (reconnects included)
  std::uint64_t requests_written = 0;    ///< requests written completely
  std::uint64_t responses = 0;           ///< complete responses parsed
  std::uint64_t transport_failures = 0;  ///< requests failed by the transport (E2)
};

/// Counters: the core's plus the adapter's.
struct ProducerAdapterStats {
  ProducerStats core;                     ///< the core's counters
  ConnectionStats connection;             ///< the connection's counters
  std::uint64_t callback_exceptions = 0;  ///< A3
  std::uint64_t capacity_waits = 0;       ///< submits that had to wait for capacity (R1)
};

/// The Durable Streams Producer on blocking POSIX sockets. Movable, not copyable.
class Producer {
 public:
  /// Validates `options`, starts the I/O and dispatcher threads and returns the producer
  /// (no connection is opened before the first request). Errors name the invalid option:
  /// "url: ...", "content_type: ...", "producer.<core field>: ...",
  /// "request_timeout_ns: ...". C4: the producer owns its connection.
  static tl::expected<Producer, std::string> create(ProducerOptions options);

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
  tl::expected<RecordTicket, Rejection> submit(std::string_view record);
  /// Same, and `on_complete` runs exactly once with the outcome, on the dispatcher, in
  /// ticket order (A1), before the ticket turns ready. A refused submit never registers
  /// it (A4): it is destroyed without being called.
  tl::expected<RecordTicket, Rejection> submit(std::string_view record, RecordCallback on_complete);

  /// Flush barrier (F1–F5): seals the partial batch at once and blocks until every
  /// record accepted before it (the cut, see the file comment) is durable or failed and
  /// its callback ran (A2; also when the core refuses the flush at once). Error: the
  /// sticky terminal error when a covered record failed (F5) or the producer already
  /// failed (E1); `closed` after close (C2); `would_block` with max_pending_barriers pending;
  /// `cancelled` when `timeout_ns` (ns) passed first — the barrier stays in place and
  /// completes unobserved.
  VoidResult flush(std::optional<Duration> timeout_ns = std::nullopt);

  /// Closes the producer (C1): flush, drain, release. Blocks until every record's
  /// callback ran (A2), then closes the owned connection and stops the I/O thread (C4);
  /// the stream on the server stays open (see close_stream). Success or the terminal
  /// error; a second close returns the same result. `cancelled` when `timeout_ns` (ns)
  /// passed first (the close goes on; call close() again to wait for it).
  VoidResult close(std::optional<Duration> timeout_ns = std::nullopt);

  /// Closes the *stream* on the server, a separate operation from close() (C4): a flush
  /// barrier, then — if every covered record succeeded — `POST` with
  /// `Stream-Closed: true` (no producer headers, so a repeat is answered 204). Returns
  /// the final offset, or the barrier's error, or the request's classified error.
  /// `cancelled` when `timeout_ns` (ns) passed first. The producer stays open, but
  /// later appends fail with stream_closed (S6).
  CloseStreamResult close_stream(std::optional<Duration> timeout_ns = std::nullopt);

  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort();

  /// Counters.
  [[nodiscard]] ProducerAdapterStats stats() const;
  /// The parsed stream URL.
  [[nodiscard]] const ds::StreamUrl& url() const noexcept;

  /// The private implementation (defined in producer.cpp); not for users.
  struct Impl;

 private:
  explicit Producer(std::shared_ptr<Impl> impl) noexcept;
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::blocking
