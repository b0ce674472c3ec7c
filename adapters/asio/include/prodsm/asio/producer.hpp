// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer.hpp
/// prodsm::asio::Producer: the Durable Streams Producer on standalone Asio 1.22. It owns
/// a ds::ProducerClient (the sans-IO core, codec and stream-close logic shared with the
/// blocking adapter) and drives it with one steady_timer and a Session (HTTP/1.1
/// connections), following the drive rule: after every input, drain the client's
/// requests and events; arm one timer at next_deadline().
///
/// Callbacks (A1–A4):
///  - A1: completion handlers run in ticket order from one FIFO dispatcher: a strand
///    (over the producer's executor, or over `callback_executor` when injected). Handlers
///    of completion tokens (use_future, use_awaitable, deferred) are then dispatched to
///    their own associated executor, still in ticket order; a handler with none (a plain
///    lambda) runs on that strand, as a plain callback does.
///  - A2: a flush or close completes only after the handlers of the records it covers
///    have run (they are queued on the same FIFO dispatcher before it).
///  - A3: an exception thrown by a plain callback, or by a token's handler that runs on
///    the strand, is caught and reported through `on_callback_exception` (and counted);
///    it never unwinds into the core. One thrown by a handler on its own executor leaves
///    that executor's run(), as Asio does.
///  - A4: submit() reports accepted/rejected synchronously; a rejected submit never calls
///    its callback.
///
/// Thread safety: every member function may be called from any thread, and the
/// io_context may be run by any number of threads. The producer client
/// (ds::ProducerClient: the core, the codec, the stream closes) sits behind a mutex;
/// socket work runs on the session's strand.
///
/// Lifetime: the io_context (the executor's execution context) must outlive the
/// Producer and its Session, as for every Asio I/O object: destroying the io_context
/// first destroys the sockets and timers under them, which Asio does not survive.

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/post.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/asio/completion.hpp"
#include "prodsm/asio/session.hpp"
#include "prodsm/ds/client.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/producer_event.hpp"

namespace prodsm::asio {

/// `asio::deferred` of Asio 1.22 (still in the experimental namespace there).
inline constexpr auto& deferred = ::asio::experimental::deferred;

/// What a successful record completion carries (P4): its ticket, its index in the
/// batch, and the batch acknowledgement (ds/results.hpp; the blocking producer reports
/// the same types).
using RecordAck = ds::RecordAck;
/// A record's outcome: durable, or the error that failed it (E1, E2).
using RecordResult = ds::RecordResult;
/// A flush's, close's or stream operation's outcome.
using VoidResult = ds::VoidResult;

/// Configuration of an Asio Producer: the options both adapters share
/// (ds::ProducerOptions: url, content_type, producer, session, extra_headers,
/// submit_timeout_ns, max_pending_records) plus the Asio callback executor.
struct ProducerOptions : ds::ProducerOptions {
  /// A1: run plain callbacks on a FIFO strand over this executor instead of over the
  /// producer's executor. Its execution context must outlive the producer's executor's
  /// pending work (handlers bound to the strand), not only the producer object: stop or
  /// join the producer's context first.
  std::optional<::asio::any_io_executor> callback_executor{};
  /// Per-request headers of the session the producer creates: called for every request
  /// attempt, retries included, e.g. for a bearer token that is refreshed while the
  /// producer runs (prodsm/header_provider.hpp). Producer headers and the body stay as
  /// sealed (S2). An attached producer uses its session's provider instead (set here it is
  /// refused: "header_provider: ...").
  HeaderProvider header_provider{};
  /// A3: called (on the callback strand) with every exception a callback threw.
  std::function<void(std::exception_ptr)> on_callback_exception{};
  /// Retries, reconnects, epoch claims and the terminal error, each with its cause and a
  /// level (prodsm/producer_event.hpp): events.on_event runs on the callback strand, in order
  /// with the completions, never under the producer's lock; its exceptions count as A3's.
  EventOptions events{};
};

/// stats() of every adapter producer: counters and gauges (prodsm/adapter_stats.hpp).
using ProducerAdapterStats = prodsm::ProducerAdapterStats;

/// A record accepted by asio::Producer::async_submit_ticket.
using RecordTicket = BasicRecordTicket<RecordResult>;

/// The Durable Streams Producer on Asio.
class Producer {
 public:
  /// Creates a producer that owns a new Session to the URL's server (C4: close() closes
  /// it). Errors name the invalid option ("url: ...", "content_type: ...", a core
  /// ConfigError's field prefixed "producer." as in "producer.max_batch_bytes: ...",
  /// "session.max_connections: ...").
  [[nodiscard]] static tl::expected<Producer, std::string> create(::asio::any_io_executor executor,
                                                                  ProducerOptions options);
  /// Creates a producer attached to `session` (C4: close() leaves it open). The
  /// session must talk to the URL's host and port.
  /// Errors: "session: null"; "session: it is closed ..." (attach to an open one);
  /// "header_provider: ..." (set: an attached producer uses its session's); an invalid
  /// option as create() names it, checked against the session's transport (its mode and
  /// stall detection, e.g. plain appends with more than one in flight over pooled
  /// connections, E4); "url: HOST:PORT is not the session's server ...".
  [[nodiscard]] static tl::expected<Producer, std::string> attach(std::shared_ptr<Session> session,
                                                                  ProducerOptions options);

  /// Moves the producer; the moved-from one may only be destroyed or assigned.
  Producer(Producer&&) noexcept;
  /// Aborts the producer being replaced unless it was closed (C5), then moves.
  Producer& operator=(Producer&&) noexcept;
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  /// Without a completed close, aborts (C5): unresolved records fail with `aborted`,
  /// marked definite or indefinite.
  ~Producer();

  /// Submits a record without a callback (A4: accepted or rejected now). Its outcome is
  /// visible through flush/close results and stats. While async_submits wait for
  /// capacity, submit, submit_many and submit_blocking wait behind them (P1): refused with
  /// would_block, or (submit_blocking) accepted only after them.
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(std::string_view record);

  /// Submits a record; `on_complete(RecordResult)` runs exactly once when the record is
  /// durable or failed (A1–A3), unless the submit is rejected now (A4: never runs).
  template <class F>
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(std::string_view record, F&& on_complete) {
    return submit_with(record, std::make_unique<detail::CallbackCompletion<RecordResult, std::decay_t<F>>>(
                                   std::forward<F>(on_complete)));
  }

  /// Submits many records in one call without callbacks (P1, P2: the core's
  /// submit_many; A4: accepted or refused now, never waits): records [0, accepted) of the
  /// list were accepted, with tickets first .. first + accepted - 1, and their outcomes
  /// reach flush/close results and stats(). `refused` says why record `accepted` was
  /// refused; the rest were not submitted (submit them again, e.g. after a would_block).
  [[nodiscard]] SubmitManyResult submit_many(std::span<const std::string_view> records);
  /// Submits a record, blocking the calling thread while the producer is full (R1), up
  /// to `timeout_ns`; then would_block. Never call it from a thread that runs the
  /// producer's executor (it would wait for itself). Callback as in submit().
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking(std::string_view record, Duration timeout_ns);
  /// submit_blocking with a callback `on_complete(const RecordResult&)`, run on the
  /// callback executor once the record is durable or failed (A1–A3); registered only
  /// when the record is accepted (A4).
  template <class F>
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking(std::string_view record, Duration timeout_ns,
                                                                F&& on_complete) {
    return submit_blocking_with(
        record, timeout_ns,
        std::make_unique<detail::CallbackCompletion<RecordResult, std::decay_t<F>>>(std::forward<F>(on_complete)));
  }

  /// Submits a record as an Asio operation; signature void(RecordResult). Waits for
  /// capacity when the producer is full (R1), up to submit_timeout_ns (then
  /// would_block) and cancellably (per-operation cancellation: cancelled); completes
  /// when the record is durable or failed. A refusal completes at once with the error;
  /// a close (or close_with_stream) while it waits refuses it at once with `closed` (C2).
  /// A record waiting for capacity counts from its acceptance: a flush called meanwhile
  /// does not cover it.
  template <class CompletionToken>
  auto async_submit(std::string record, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(RecordResult)>(
        [this](auto handler, std::string r) {
          auto op = detail::make_submit_operation<RecordResult>(std::move(handler), token_fallback());
          initiate_submit(std::move(r), std::move(op.completion), std::move(op.install_cancel));
        },
        token, std::move(record));
  }

  /// Submit, then acknowledgement: completes as soon as the record is *accepted* — at
  /// once, or after waiting for capacity (R1, up to submit_timeout_ns, cancellably, FIFO
  /// with async_submit) — with its RecordTicket; `co_await ticket.async_wait(...)` then
  /// gives the outcome. Signature void(tl::expected<RecordTicket, Error>): the error is
  /// the refusal (A4). A coroutine that awaits only this per record keeps many records
  /// in a batch (the acknowledgement is awaited later, or through async_flush).
  template <class CompletionToken>
  auto async_submit_ticket(std::string record, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(tl::expected<RecordTicket, Error>)>(
        [this](auto handler, std::string r) {
          auto op = detail::make_ticket_operation<RecordResult>(std::move(handler), token_fallback());
          initiate_submit_ticket(std::move(r), std::move(op));
        },
        token, std::move(record));
  }

  /// Flush barrier (F1–F5) as an Asio operation; signature void(VoidResult). Completes
  /// after every record submitted before it is durable and its callback ran (A2).
  /// Cancellable through the handler's cancellation slot (e.g. a timer and a
  /// cancellation_signal, or a parallel_group): the handler then gets `cancelled` at once;
  /// the barrier and the records stay (a flush bounded in time).
  template <class CompletionToken>
  auto async_flush(CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(VoidResult)>(
        [this](auto handler) {
          initiate_flush(
              detail::make_waiting_completion<VoidResult>(std::move(handler), "async_flush", token_fallback()));
        },
        token);
  }

  /// Closes the producer (C1): flush, drain, then release what it owns — an owned
  /// session is closed, an attached one is left open (C4). The stream on the server
  /// stays open (see async_close_stream). Signature void(VoidResult); a second close
  /// completes with the same result. Cancelling it (its cancellation slot) ends the wait
  /// with `cancelled`; the producer keeps closing (abort() stops it).
  template <class CompletionToken>
  auto async_close(CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(VoidResult)>(
        [this](auto handler) {
          initiate_close(
              detail::make_waiting_completion<VoidResult>(std::move(handler), "async_close", token_fallback()));
        },
        token);
  }

  /// Closes the *stream* on the server (distinct from closing the producer, C4): flushes
  /// every record submitted so far, then sends `Stream-Closed: true` (a plain close,
  /// retried within the retry policy: a repeat is answered 204). Signature
  /// void(tl::expected<ds::CloseResult, Error>); the result carries the final offset.
  template <class CompletionToken>
  auto async_close_stream(CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(tl::expected<ds::CloseResult, Error>)>(
        [this](auto handler) {
          initiate_close_stream(detail::make_waiting_completion<tl::expected<ds::CloseResult, Error>>(
              std::move(handler), "async_close_stream", token_fallback()));
        },
        token);
  }

  /// Closes the producer *and* the stream in one sequenced step, as the TypeScript
  /// IdempotentProducer.close(finalMessage) does (C1 + S2 + S6):
  ///  1. closes the producer (C1): everything submitted before is sealed, sent and
  ///     acknowledged; later submits and flushes fail with `closed` (C2);
  ///  2. then sends one `Stream-Closed: true` request. With the idempotent producer it
  ///     carries Producer-Id, the current epoch and the next unused seq, so the server
  ///     deduplicates a resend of the same close (204) and answers a close of an already
  ///     closed stream by another producer tuple with 409 `stream_closed` (S6);
  ///  3. then releases what the producer owns (C4: an owned session is closed).
  /// `final_record`, when present, is appended atomically with the close: checked like a
  /// submit (not empty; JSON mode: exactly one JSON value; within max_batch_bytes, B4) and
  /// framed like a batch of one (JSON: `[record]`); a refused one fails with
  /// `invalid_record`, and nothing is closed. On 403 stale epoch with auto_claim the close is resent once as
  /// epoch server epoch + 1, seq 0 (S5); retryable failures are retried within the retry
  /// policy (the server deduplicates the sequenced close). Signature
  /// void(tl::expected<ds::CloseResult, Error>): the stream's final offset, or why the
  /// producer or the stream close failed (a failed record fails it with that error, E1).
  /// A second call is a retry of the same close: it completes with the same result, and
  /// its own final record is not appended (only the first call's is, as the server
  /// deduplicates a resent close); after a plain async_close it fails with `closed`.
  template <class CompletionToken>
  auto async_close_with_stream(std::optional<std::string> final_record, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(tl::expected<ds::CloseResult, Error>)>(
        [this](auto handler, std::optional<std::string> record) {
          initiate_close_with_stream(std::move(record),
                                     detail::make_waiting_completion<tl::expected<ds::CloseResult, Error>>(
                                         std::move(handler), "async_close_with_stream", token_fallback()));
        },
        token, std::move(final_record));
  }

  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort();

  /// Counters.
  [[nodiscard]] ProducerAdapterStats stats() const;
  /// The session the producer uses.
  [[nodiscard]] const std::shared_ptr<Session>& session() const noexcept;
  /// The parsed stream URL.
  [[nodiscard]] const ds::StreamUrl& url() const noexcept;

  /// The private implementation (defined in producer.cpp over producer_impl.hpp); not
  /// for users.
  struct Impl;

 private:
  explicit Producer(std::shared_ptr<Impl> impl);
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_with(std::string_view record,
                                                            std::unique_ptr<detail::Completion<RecordResult>> c);
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking_with(
      std::string_view record, Duration timeout_ns, std::unique_ptr<detail::Completion<RecordResult>> c);
  void initiate_submit(std::string record, std::unique_ptr<detail::Completion<RecordResult>> c,
                       std::function<void(std::function<void()>)> install_cancel);
  void initiate_submit_ticket(std::string record, detail::TicketOperation<RecordResult> op);
  void initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c);
  /// Where and how a completion token's handler with no executor of its own runs: on the
  /// callback strand (A1), inside the A3 guard (detail::TokenFallback).
  [[nodiscard]] detail::TokenFallback token_fallback() const;
  void initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c);
  void initiate_close_stream(std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c);
  void initiate_close_with_stream(std::optional<std::string> final_record,
                                  std::unique_ptr<detail::Completion<tl::expected<ds::CloseResult, Error>>> c);
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::asio
