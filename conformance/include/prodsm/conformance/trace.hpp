// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file trace.hpp
/// The language-neutral record of one producer run, as the conformance suite sees it:
/// the configuration, then one Step per input (a client command, a timer, or a server
/// response chosen by the harness) with the input's synchronous result and every
/// observation the producer made in response (sends, completions, barrier results,
/// close, capacity). Trace checkers (checkers.hpp) read only this, so a trace recorded
/// from prodsm's core and one recorded from another SDK's driver are checked alike.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/error.hpp"
#include "prodsm/producer.hpp"
#include "prodsm/time.hpp"

namespace prodsm::conformance {

/// Wire protocol family of the producer under test.
enum class Protocol : std::uint8_t { durable_streams, s2 };

/// Sequencing the producer was configured with.
enum class Sequencing : std::uint8_t {
  none,              ///< plain appends
  ds_idempotent,     ///< Durable Streams producer id / epoch / seq (S2)
  s2_match_seq_num,  ///< S2 match_seq_num (+ optional fencing token) (S1)
};

/// The configuration facts the checkers need (units: bytes, ns).
struct TraceConfig {
  Protocol protocol = Protocol::durable_streams;       ///< whose wire and clauses the trace follows
  bool json = false;                                   ///< Durable Streams JSON body framing
  std::optional<Duration> linger_ns;                   ///< nullopt = linger disabled
  std::uint32_t max_batch_records = 0;                 ///< B4: records per batch
  std::uint64_t max_batch_bytes = 0;                   ///< B4: metered bytes per batch
  std::uint64_t max_unacked_bytes = 0;                 ///< R1: accepted, unacknowledged bytes
  std::uint32_t max_unacked_batches = 0;               ///< R3: batches accepted and not completed
  std::uint32_t max_in_flight = 0;                     ///< R1: batches with an attempt outstanding
  std::uint32_t max_pending_barriers = 0;              ///< R3: flush barriers pending at once
  Duration delivery_timeout_ns{};                      ///< E6: from a batch's first submit
  std::uint32_t max_attempts = 0;                      ///< retry.max_attempts: sends per batch, the first included
  bool retry_indefinite = true;                        ///< RetryMode::all
  Sequencing sequencing = Sequencing::none;            ///< how batches are sequenced (S1, S2)
  bool auto_claim = false;                             ///< Durable Streams auto-claim (S5)
  std::uint64_t initial_epoch = 0;                     ///< ds_idempotent: the configured Producer-Epoch
  std::uint64_t initial_seq = 0;                       ///< ds_idempotent: the configured first Producer-Seq
  std::optional<std::uint64_t> initial_match_seq_num;  ///< s2_match_seq_num: the first batch's match_seq_num
  std::optional<std::string> fencing_token;            ///< S2: the fencing token every batch carries (S1)
  /// A target on real time (a wire target): every instant is measured, not commanded —
  /// a step's when it began, an observation's when it happened — and the clock runs
  /// during every input, not only during advances (the model applies a deadline wherever
  /// the clock passed it).
  bool measured_time = false;
  /// With measured_time: a deadline's effect may be observed up to this much (ns of trace
  /// time) after it (E6). Zero on virtual time.
  Duration time_tolerance_ns{};

  /// Bytes a record of `size` bytes adds to a batch (protocol metering).
  [[nodiscard]] std::uint64_t meter(std::size_t size) const {
    if (protocol == Protocol::s2) return 8 + size;
    return size + (json ? 1 : 0);
  }
  /// Bytes a batch has beyond its records' meters (JSON `[`).
  [[nodiscard]] std::uint64_t batch_overhead() const { return protocol == Protocol::durable_streams && json ? 1 : 0; }
  /// True when a resend after an indefinite failure cannot duplicate (E4).
  [[nodiscard]] bool resend_is_safe() const { return sequencing != Sequencing::none; }
};

/// A batch's sequencing stamps as observed on the wire.
struct TraceStamp {
  bool sequenced = false;   ///< stamped: Durable Streams producer headers (S2) or S2 match_seq_num (S1)
  std::uint64_t epoch = 0;  ///< Durable Streams Producer-Epoch
  std::uint64_t seq = 0;    ///< Durable Streams Producer-Seq
  std::optional<std::uint64_t> match_seq_num;  ///< S2
  std::optional<std::string> fencing_token;    ///< S2
  friend bool operator==(const TraceStamp&, const TraceStamp&) = default;
};

/// An acknowledgement as observed (either protocol).
struct TraceAck {
  std::string next_offset;  ///< Durable Streams
  bool duplicate = false;   ///< Durable Streams (S3)
  std::uint64_t start = 0;  ///< S2 [start, end)
  std::uint64_t end = 0;    ///< S2: end of the range (exclusive)
  /// S2, per-record completions: the record's own position, when the SDK reports it
  /// (then [start, end) is its batch's range).
  std::optional<std::uint64_t> seq_num;
  friend bool operator==(const TraceAck&, const TraceAck&) = default;
};

/// What the harness's simulated server answered to one send.
struct Response {
  /// Acknowledged (`ack`) or failed (`error`).
  enum class Kind : std::uint8_t { ack, fail };
  Kind kind = Kind::ack;  ///< which answer
  TraceAck ack;           ///< kind == ack (possibly deliberately invalid, E5)
  bool invalid = false;   ///< the harness made this ack invalid on purpose (E5)
  Error error;            ///< kind == fail
};

/// How a completion callback ran, as an adapter target observes it (A1–A4): recorded for
/// every record, barrier, close and stream-close completion of a target whose
/// capabilities say adapter_callbacks.
struct CallbackFacts {
  /// The thread it ran on: 0 the harness's own thread (the one that calls submit, flush
  /// and close: the callback ran inside a call), 1, 2, ... other threads in the order
  /// they first ran a callback.
  std::uint32_t thread = 0;
  bool overlapped = false;  ///< another callback of the producer was running when it started (A1)
  /// The producer's lock was held while it ran: a probe from another thread could not
  /// read the producer's stats (which takes the lock) within 1 s (A1: callbacks never run
  /// under the producer's lock).
  bool under_lock = false;
  bool threw = false;     ///< the harness made it throw (A3: every third record's callback)
  bool reported = false;  ///< that exception reached the producer's on_callback_exception (A3)
  /// A record callback: the step whose submit registered it (A4: only accepted submits).
  std::optional<std::size_t> submit_step;
};

/// One observation of the producer.
struct Observation {
  /// A batch sent, a ticket range completed, a barrier completed, the producer closed
  /// (C1, C5), or capacity freed after a would-block (R1).
  /// C4: a stream-close request sent (`stream_close`), a stream close finished (`stream_closed`).
  enum class Kind : std::uint8_t { send, done, barrier, closed, capacity, stream_close, stream_closed };
  Kind kind = Kind::send;  ///< which observation; the fields below are per kind
  /// When it happened, if not at the step's instant (an external driver's `advance` can
  /// fire several timers; it reports each observation's time).
  std::optional<Instant> at;
  // send
  std::size_t send_index = 0;      ///< position among all sends of the trace
  std::uint64_t batch = 0;         ///< the producer's batch id (opaque, echoed)
  std::uint32_t attempt = 0;       ///< send: 1 for the first send of the batch, then 2, 3, ...
  std::uint64_t first_ticket = 0;  ///< send: first record; done: first ticket
  std::uint32_t count = 0;         ///< send: records in the batch
  std::string body;                ///< send: framed body bytes
  /// send: each record's end offset in `body` (bytes, exclusive); S2 only, empty for Durable Streams.
  std::vector<std::uint32_t> record_ends;
  TraceStamp stamp;  ///< send: the batch's sequencing stamps
  /// send: the transport session that carried it, when the target reports one (an S2
  /// append session). When one of a session's appends fails, the session is dead and
  /// the simulated server fails its other in-flight appends in the same instant.
  std::optional<std::uint64_t> session;
  // done
  std::uint64_t last_ticket = 0;  ///< done: last ticket of the range (inclusive)
  // done / barrier / closed
  bool ok = false;            ///< done / barrier / closed: success
  TraceAck ack;               ///< done, ok: the batch acknowledgement
  Error error;                ///< done / barrier / closed, not ok: the error
  std::uint64_t barrier = 0;  ///< barrier: its id (as flush's SyncResult value)
  // stream_close / stream_closed (C4)
  std::uint64_t op = 0;                ///< the stream close (as close_stream's SyncResult value)
  std::size_t stream_close_index = 0;  ///< stream_close: position among the trace's stream-close requests
  std::string final_offset;            ///< stream_closed, ok: the stream's final offset, when the answer said
  /// done / barrier / closed / stream_closed on an adapter target: how its callback ran (A1–A4).
  std::optional<CallbackFacts> callback;
};

/// One input the harness gave the producer.
struct Input {
  /// A client call, a timer event at `at` (advance), or a server answer to a send (respond).
  /// close_stream: the client closes the stream (C4); respond_stream_close: a server
  /// answer to a stream-close request.
  enum class Kind : std::uint8_t { submit, flush, close, abort, advance, respond, close_stream, respond_stream_close };
  Kind kind = Kind::submit;            ///< which input
  Instant at{};                        ///< the instant of the input (advance: the instant reached)
  std::string record;                  ///< submit
  std::size_t send_index = 0;          ///< respond: which send (index among all sends)
  std::size_t stream_close_index = 0;  ///< respond_stream_close: which stream-close request
  Response response;                   ///< respond, respond_stream_close
};

/// The input's synchronous result.
struct SyncResult {
  /// None (abort, advance, respond, a close still in progress), an accepted submit's ticket, an
  /// accepted flush's barrier, a refusal (submit, flush), or close's final result once Closed was emitted (C1).
  /// stream_close: close_stream accepted (`value` = its op) or, with `error`, refused.
  enum class Kind : std::uint8_t { none, ticket, barrier, rejected, closed_result, stream_close };
  Kind kind = Kind::none;                      ///< which result
  std::uint64_t value = 0;                     ///< ticket or barrier id
  RejectReason reason = RejectReason::closed;  ///< rejected: why
  std::optional<Error> error;  ///< rejected(failed): the terminal error; closed_result; stream_close refused
  bool ok = false;             ///< closed_result; stream_close: accepted
};

/// One input, its synchronous result, and what the producer did in response.
struct Step {
  Input input;                        ///< what the harness gave the producer
  SyncResult result;                  ///< the call's synchronous result
  std::vector<Observation> observed;  ///< in the order the producer emitted them
};

/// The record of one producer run.
struct Trace {
  TraceConfig config;       ///< the configuration facts the checkers need
  std::vector<Step> steps;  ///< one per input, in input order
};

/// Short human-readable rendering of a step, used in counterexamples.
std::string describe(const Step& step, std::size_t index);

}  // namespace prodsm::conformance
