// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file s2_producer.hpp
/// prodsm::asio::S2Producer: the Producer to an S2 stream on Asio. It drives an
/// s2::ProducerClient (core + S2 policy + protobuf codec, sans-IO) over the same Session
/// the Durable Streams producer uses (one connection pool, TLS, per-request headers) and
/// one timer, with the same producer operations: submit (fire-and-forget or with a
/// callback), submit_blocking, async_submit, async_flush, async_close, abort, stats.
/// Completions run in ticket order on one callback strand (A1), flush and close complete
/// after the callbacks of the records they cover (A2), a throwing callback is caught and
/// reported (A3), a refused submit registers nothing (A4).
///
/// The one difference from asio::Producer: no stream close (S2 producers have none).
/// Both run on the adapter's one producer implementation.

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/session.hpp"
#include "prodsm/producer_event.hpp"
#include "prodsm/s2/client.hpp"

namespace prodsm::asio {

/// An S2 record's outcome: durable at a seq_num (s2::RecordAck::seq_num(), P4), or the
/// error that failed it (E1, E2, C5).
using S2RecordResult = s2::RecordResult;
/// A record accepted by S2Producer::async_submit_ticket.
using S2RecordTicket = BasicRecordTicket<S2RecordResult>;

/// Configuration of an S2Producer: the options both adapters share
/// (s2::ProducerOptions: endpoint, stream, access token, core config, session transport
/// options, extra headers, submit_timeout_ns, max_pending_records) plus the callback
/// executor, the per-request header provider and the callback-exception hook.
struct S2ProducerOptions : s2::ProducerOptions {
  /// A1: run completions on a strand of this executor. Default: a strand of their own
  /// over the session's executor (not the session's strand: a slow callback never holds
  /// up the session's I/O).
  std::optional<::asio::any_io_executor> callback_executor;
  /// Per-request headers of the session the producer creates (prodsm/header_provider.hpp),
  /// e.g. a refreshed bearer token; an attached producer uses its session's.
  HeaderProvider header_provider{};
  /// A3: called with every exception a completion callback threw.
  std::function<void(std::exception_ptr)> on_callback_exception{};
  /// Retries, reconnects, epoch claims and the terminal error, each with its cause and a
  /// level (prodsm/producer_event.hpp): events.on_event runs on the callback strand, in order
  /// with the completions, never under the producer's lock; its exceptions count as A3's.
  EventOptions events{};
};

/// The S2 Producer on Asio (see the file comment). Movable, not copyable.
class S2Producer {
 public:
  /// Validates `options` (s2::validate: the error names the field), creates and owns a
  /// Session to the endpoint's host and port (TLS for https endpoints). C4: close()
  /// closes the owned session.
  [[nodiscard]] static tl::expected<S2Producer, std::string> create(::asio::any_io_executor executor,
                                                                    S2ProducerOptions options);
  /// Creates a producer attached to `session` (C4: close() leaves it open). The session
  /// must talk to the endpoint's host and port; options.header_provider must be empty.
  /// Errors: "session: null"; "session: it is closed ..." (attach to an open one);
  /// "header_provider: ..." (set: an attached producer uses its session's); an invalid
  /// option as create() names it, checked against the session's transport
  /// (s2::validate_attached: "session.<field>: ...", e.g. more than one append in flight
  /// outside pipelined mode, or stall detection with match_seq_num);
  /// "endpoint: HOST:PORT is not the session's server ...".
  [[nodiscard]] static tl::expected<S2Producer, std::string> attach(std::shared_ptr<Session> session,
                                                                    S2ProducerOptions options);

  S2Producer(S2Producer&&) noexcept;             ///< movable
  S2Producer& operator=(S2Producer&&) noexcept;  ///< aborts the replaced producer unless closed (C5)
  S2Producer(const S2Producer&) = delete;
  S2Producer& operator=(const S2Producer&) = delete;
  /// Without a completed close, aborts (C5): unresolved records fail with `aborted`.
  ~S2Producer();

  /// Submits a record without a callback (A4: accepted or rejected now).
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(std::string_view record);
  /// Submits a record; `on_complete(S2RecordResult)` runs exactly once (A1–A3) unless the
  /// submit is rejected now (A4).
  template <class F>
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(std::string_view record, F&& on_complete) {
    return submit_with(record, std::make_unique<detail::CallbackCompletion<S2RecordResult, std::decay_t<F>>>(
                                   std::forward<F>(on_complete)));
  }
  /// Submits many records in one call without callbacks (P1, P2: the core's
  /// submit_many; A4: accepted or refused now, never waits): records [0, accepted) of the
  /// list were accepted, with tickets first .. first + accepted - 1, and their outcomes
  /// reach flush/close results and stats(). `refused` says why record `accepted` was
  /// refused; the rest were not submitted (submit them again, e.g. after a would_block).
  [[nodiscard]] SubmitManyResult submit_many(std::span<const std::string_view> records);
  /// Submits a record, blocking the calling thread while the producer is full (R1), up
  /// to `timeout_ns` (then would_block). Never call it on the producer's executor.
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking(std::string_view record, Duration timeout_ns);
  /// Same, and `on_complete(S2RecordResult)` runs exactly once unless the submit is
  /// refused (A4).
  template <class F>
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking(std::string_view record, Duration timeout_ns,
                                                                F&& on_complete) {
    return submit_blocking_with(
        record, timeout_ns,
        std::make_unique<detail::CallbackCompletion<S2RecordResult, std::decay_t<F>>>(std::forward<F>(on_complete)));
  }

  /// Submits a record as an Asio operation; signature void(S2RecordResult). Waits for
  /// capacity when the producer is full (R1), up to submit_timeout_ns (then
  /// would_block) and cancellably (per-operation cancellation: cancelled); completes
  /// when the record is durable or failed. A refusal completes at once with the error.
  template <class CompletionToken>
  auto async_submit(std::string record, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(S2RecordResult)>(
        [this](auto handler, std::string r) {
          auto op = detail::make_submit_operation<S2RecordResult>(std::move(handler), token_fallback());
          initiate_submit(std::move(r), std::move(op.completion), std::move(op.install_cancel));
        },
        token, std::move(record));
  }
  /// Submit, then acknowledgement, as asio::Producer::async_submit_ticket: completes
  /// when the record is accepted (R1: after a capacity wait, cancellably) with its
  /// S2RecordTicket; signature void(tl::expected<S2RecordTicket, Error>).
  template <class CompletionToken>
  auto async_submit_ticket(std::string record, CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(tl::expected<S2RecordTicket, Error>)>(
        [this](auto handler, std::string r) {
          auto op = detail::make_ticket_operation<S2RecordResult>(std::move(handler), token_fallback());
          initiate_submit_ticket(std::move(r), std::move(op));
        },
        token, std::move(record));
  }
  /// Flush barrier (F1–F5) as an Asio operation; signature void(VoidResult).
  /// Cancellable as asio::Producer::async_flush (the barrier stays).
  template <class CompletionToken>
  auto async_flush(CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(VoidResult)>(
        [this](auto handler) {
          initiate_flush(
              detail::make_waiting_completion<VoidResult>(std::move(handler), "async_flush", token_fallback()));
        },
        token);
  }
  /// Closes the producer (C1): flush, drain, release the owned session (C4); signature
  /// void(VoidResult); a second close completes with the same result. Cancellable as
  /// asio::Producer::async_close (the producer keeps closing).
  template <class CompletionToken>
  auto async_close(CompletionToken&& token) {
    return ::asio::async_initiate<CompletionToken, void(VoidResult)>(
        [this](auto handler) {
          initiate_close(
              detail::make_waiting_completion<VoidResult>(std::move(handler), "async_close", token_fallback()));
        },
        token);
  }
  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort();
  /// Counters: the core's, the session's, callback exceptions, capacity waits.
  [[nodiscard]] ProducerAdapterStats stats() const;
  /// The session the producer uses (owned or attached).
  [[nodiscard]] const std::shared_ptr<Session>& session() const noexcept;
  /// The options the producer was created with.
  [[nodiscard]] const s2::ProducerOptions& options() const noexcept;

  /// The private implementation (defined in s2_producer.cpp); not for users.
  struct Impl;

 private:
  explicit S2Producer(std::shared_ptr<Impl> impl);
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_with(std::string_view record,
                                                            std::unique_ptr<detail::Completion<S2RecordResult>> c);
  [[nodiscard]] tl::expected<Ticket, Rejection> submit_blocking_with(
      std::string_view record, Duration timeout_ns, std::unique_ptr<detail::Completion<S2RecordResult>> c);
  void initiate_submit(std::string record, std::unique_ptr<detail::Completion<S2RecordResult>> c,
                       std::function<void(std::function<void()>)> install_cancel);
  void initiate_submit_ticket(std::string record, detail::TicketOperation<S2RecordResult> op);
  void initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c);
  /// Where and how a completion token's handler with no executor of its own runs: on the
  /// callback strand (A1), inside the A3 guard (detail::TokenFallback).
  [[nodiscard]] detail::TokenFallback token_fallback() const;
  void initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c);
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::asio
