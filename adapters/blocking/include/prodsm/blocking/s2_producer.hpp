// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file s2_producer.hpp
/// prodsm::blocking::S2Producer: the Producer to an S2 stream on plain POSIX sockets. It
/// drives an s2::ProducerClient (core + S2 policy + protobuf codec, sans-IO) over the
/// same Session the Durable Streams producer uses (its I/O thread runs the connections
/// and the producer's deadline) with the same producer operations and threading rules as
/// blocking::Producer (producer.hpp): submit answers accepted/rejected before it returns
/// (A4) and waits only for capacity; flush and close block until the covered records'
/// callbacks ran (A2); completions run in ticket order from one FIFO dispatcher, a thread
/// of its own or an injected executor (A1); a throwing callback is caught and reported
/// (A3). Waiting calls made from a completion callback do not wait (`would_block`).
/// S2 has no stream close for a producer, so there is no close_stream.

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

#include "prodsm/blocking/producer.hpp"
#include "prodsm/blocking/session.hpp"
#include "prodsm/producer_event.hpp"
#include "prodsm/s2/client.hpp"

namespace prodsm::blocking {

/// An S2 record's outcome: durable at a seq_num (s2::RecordAck::seq_num(), P4), or the
/// error that failed it (E1, E2, C5).
using S2RecordResult = s2::RecordResult;
/// An S2 record completion callback. Runs once, on the dispatcher, in ticket order (A1).
using S2RecordCallback = std::function<void(const S2RecordResult&)>;

namespace detail {
struct S2TicketState;
}  // namespace detail

/// A handle to one accepted S2 record (P2): wait for its outcome. Copyable; the outcome
/// stays readable after the producer is gone. As RecordTicket (producer.hpp).
class S2RecordTicket {
 public:
  /// The record's ticket (dense from 0 in acceptance order, P3).
  [[nodiscard]] Ticket id() const noexcept { return id_; }
  /// True once the outcome was delivered (after the record's callback, if any, ran).
  [[nodiscard]] bool ready() const;
  /// Waits up to `timeout_ns` for the outcome; nullopt when it did not come in time (from
  /// a completion callback: does not wait).
  [[nodiscard]] std::optional<S2RecordResult> wait(Duration timeout_ns) const;
  /// Waits for the outcome (every record completes within delivery_timeout_ns, E6, or at
  /// close/abort, C5). From a completion callback: `would_block` unless delivered.
  [[nodiscard]] S2RecordResult wait() const;

 private:
  friend class S2Producer;
  S2RecordTicket(Ticket id, std::shared_ptr<detail::S2TicketState> state) noexcept
      : id_{id}, state_{std::move(state)} {}
  Ticket id_;
  std::shared_ptr<detail::S2TicketState> state_;
};

/// Configuration of a blocking S2Producer: s2::ProducerOptions (endpoint, stream, access
/// token, core config, session transport options, extra headers, submit_timeout_ns,
/// max_pending_records) plus the callback executor, header provider and exception hook.
struct S2ProducerOptions : s2::ProducerOptions {
  /// A1: run completions through this executor instead of the own dispatcher thread.
  Executor callback_executor{};
  /// Per-request headers of the session the producer creates (e.g. a refreshed bearer
  /// token); an attached producer uses its session's (set here it is refused).
  HeaderProvider header_provider{};
  /// A3: called (on the dispatcher) with every exception a completion callback threw.
  std::function<void(std::exception_ptr)> on_callback_exception{};
  /// Retries, reconnects, epoch claims and the terminal error, each with its cause and a
  /// level (prodsm/producer_event.hpp): events.on_event runs on the dispatcher, in order
  /// with the completions, never under the producer's lock; its exceptions count as A3's.
  EventOptions events{};
};

/// The S2 Producer on blocking POSIX sockets (see the file comment). Movable.
class S2Producer {
 public:
  /// Validates `options` (s2::validate: the error names the field), creates and owns a
  /// Session to the endpoint (TLS for https) and starts the dispatcher. C4: close()
  /// closes the owned session.
  [[nodiscard]] static tl::expected<S2Producer, std::string> create(S2ProducerOptions options);
  /// Creates a producer attached to `session` (C4: close() leaves it open). The session
  /// must talk to the endpoint's host and port.
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
  /// Without a completed close, aborts (C5); joins the threads.
  ~S2Producer();

  /// Submits one record (bytes copied). Accepted: the ticket (P2). Refused (A4): `closed`
  /// (C2), `failed` with the sticky error (E1), `record_too_large` (B4), `invalid_record`,
  /// or `would_block` when no capacity freed within submit_timeout_ns (R1, R3).
  [[nodiscard]] tl::expected<S2RecordTicket, Rejection> submit(std::string_view record);
  /// Same, and `on_complete` runs exactly once with the outcome, on the dispatcher, in
  /// ticket order (A1). A refused submit never registers it (A4).
  [[nodiscard]] tl::expected<S2RecordTicket, Rejection> submit(std::string_view record, S2RecordCallback on_complete);
  /// Submits many records in one call, without callbacks or ticket handles (P1, P2: the
  /// core's submit_many): records [0, accepted) of the list were accepted, with tickets
  /// first .. first + accepted - 1, and their outcomes reach flush/close results and
  /// stats(). `refused` says why record `accepted` was refused; the rest were not
  /// submitted (submit them again). While nothing is accepted it waits for capacity as
  /// submit() does (R1: up to submit_timeout_ns; never inside a callback); once some
  /// are accepted it returns at the next refusal, so the tickets stay contiguous.
  [[nodiscard]] SubmitManyResult submit_many(std::span<const std::string_view> records);
  /// Flush barrier (F1–F5): blocks until every record accepted before it is durable or
  /// failed and its callback ran (A2). `cancelled` when `timeout_ns` passed first.
  [[nodiscard]] VoidResult flush(std::optional<Duration> timeout_ns = std::nullopt);
  /// Closes the producer (C1): flush, drain, release the owned session (C4). A second
  /// close returns the same result. `cancelled` when `timeout_ns` passed first.
  [[nodiscard]] VoidResult close(std::optional<Duration> timeout_ns = std::nullopt);
  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort();

  /// Counters.
  [[nodiscard]] ProducerAdapterStats stats() const;
  /// The session the producer uses (owned or attached).
  [[nodiscard]] const std::shared_ptr<Session>& session() const noexcept;

  /// The private implementation (defined in s2_producer.cpp); not for users.
  struct Impl;

 private:
  explicit S2Producer(std::shared_ptr<Impl> impl) noexcept;
  std::shared_ptr<Impl> impl_;
};

}  // namespace prodsm::blocking
