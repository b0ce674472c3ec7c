// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file client.hpp
/// The S2 producer client, sans-IO: it joins the Producer core (Producer<S2Policy>), the
/// S2 codec (http_codec.hpp: unary appends with protobuf AppendInput bodies) and the HTTP
/// transport's requests and outcomes. It has the shape of ds::ProducerClient, so an
/// adapter drives either one the same way:
///
///  - inputs: submit, submit_many, flush, close, abort, on_delivered (the adapter
///    delivered outcomes: R3), handle_outcome (a request's response or transport
///    failure), handle_timeout;
///  - outputs: poll_request() (HTTP requests to send), poll_event() (record, flush and
///    close completions, capacity), next_deadline().
///
/// Drive rule: after every input, drain poll_request() and poll_event(), then arm one
/// timer at next_deadline(). Time is always a parameter; nothing here reads a clock,
/// does I/O, takes a lock or calls user code (D1). Not thread-safe: one driver owns it.
///
/// What lives here: the option checks (endpoint, stream name, token, extra headers, the
/// in-flight rule below), encoding each batch once at seal (`s2::encode_batch`: the same
/// bytes on every attempt), classifying each response by status, body and headers
/// (`classify_append`, S7) into the core's handle_ack / handle_failure — 412
/// seq_num_mismatch / fencing_token_mismatch a condition failure (E3), S2's retryable
/// codes with no side effect definite, the maybe-applied ones indefinite (E2, E4),
/// `retry-after-ms` honoured by the core's backoff — and the bound on records accepted
/// but not yet delivered (max_pending_records, R3).
///
/// In flight (E4): one batch at a time by default (unary appends). More than one is
/// accepted only with match_seq_num over the pipelined connection mode: requests then
/// reach the server in seal order on one connection, and a resend after an ambiguous
/// failure cannot append twice (its condition fails instead). Without match_seq_num a
/// second batch in flight could land before a retried first one (out of order) and a
/// maybe-applied failure could not be retried at all. See docs/design.md ("S2 client").
/// The streaming session (s2s over HTTP/2) is a later client of the same core; this one
/// speaks only unary appends.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include <tl/expected.hpp>

#include "prodsm/action.hpp"
#include "prodsm/detail/ack_latency.hpp"
#include "prodsm/detail/pending_records.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/connection.hpp"
#include "prodsm/http/pool.hpp"
#include "prodsm/latency.hpp"
#include "prodsm/s2.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace prodsm::s2 {

/// The core configuration an S2 producer starts from: the core's defaults with one
/// batch in flight (unary appends; see the file comment).
[[nodiscard]] S2Config default_producer_config();

/// The transport options an S2 producer's session starts from: the defaults without
/// stall detection. A stalled append replaced on a new connection is resent; with S2 that
/// resend is safe only with match_seq_num and, when the first attempt was in fact
/// appended, it fails its condition (E3, indefinite) instead of succeeding — so a slow
/// answer is waited for (up to the request timeout) rather than raced.
[[nodiscard]] http::TransportOptions default_transport_options();

/// Configuration of an S2 producer, shared by both adapters (each adds its executor).
struct ProducerOptions {
  /// Where the basin is: Endpoint::cloud(basin) or Endpoint::custom(url, basin).
  Endpoint endpoint;
  /// The stream's name (1..512 bytes of UTF-8, not "." or "..").
  std::string stream;
  /// Sent as `Authorization: Bearer <token>` on every append; empty: none (visible
  /// ASCII only).
  std::string access_token;
  /// The core's configuration: linger, limits, retry, and `protocol` — match_seq_num,
  /// fencing token, record format (S1). Default: one batch in flight.
  S2Config producer = default_producer_config();
  /// Connection settings of the session the producer creates (ignored when attached).
  /// Default: default_transport_options() (no stall detection).
  http::TransportOptions session = default_transport_options();
  /// Extra headers on every request (check_extra_header: e.g. `s2-encryption-key`; at
  /// most http::kMaxProvidedFields headers and http::kMaxProvidedBytes bytes as written,
  /// http::check_extra_header_bounds).
  http::Headers extra_headers{};
  /// How long a submit waits for capacity before it is refused with would_block (ns),
  /// 0..10 min (0: never wait). Default 30 s.
  Duration submit_timeout_ns = std::chrono::seconds{30};
  /// Most records accepted whose outcome the adapter has not yet delivered (R3),
  /// 1..16 777 216. Default 1 048 576.
  std::uint32_t max_pending_records = 1U << 20;
};

/// The first invalid option, named as the field ("endpoint: ...", "stream: ...",
/// "access_token: ...", "extra_headers: ...", "producer.<field>: ...",
/// "session.<field>: ...", "submit_timeout_ns: ...", "max_pending_records: ..."), or
/// nullopt. producer.max_in_flight > 1 needs producer.protocol.match_seq_num and the
/// pipelined connection mode (E4, see the file comment).
[[nodiscard]] std::optional<std::string> validate(const ProducerOptions& options);

/// For a producer attached to an existing session: validate() with the session's
/// transport options in place of options.session (the in-flight rule above: pipelined
/// mode for more than one append in flight), and also refused: stall detection on with
/// match_seq_num (a stall resend of an append that did land fails seq_num_mismatch,
/// indefinite; S2 sessions want `stall.enabled = false`). Errors name "session.<field>".
[[nodiscard]] std::optional<std::string> validate_attached(ProducerOptions options,
                                                           const http::TransportOptions& session);

/// What a successful record completion carries (P4): its ticket, its index in the
/// batch, and the batch acknowledgement shared by every record of the batch.
struct RecordAck {
  Ticket ticket;            ///< the record's ticket (P2), as submit returned it
  std::uint64_t index = 0;  ///< index of the record in its batch (P4)
  /// The batch's acknowledgement: it occupies seq_nums [start, end) (P4); never null.
  std::shared_ptr<const S2Policy::Ack> batch_ack;
  /// The record's position in the stream: batch start + index (P4).
  [[nodiscard]] std::uint64_t seq_num() const { return batch_ack->start_seq_num + index; }
};

/// A record's outcome: durable at a seq_num, or the error that failed it (E1, E2, C5).
using RecordResult = tl::expected<RecordAck, Error>;

/// One HTTP request the client wants sent; report its outcome with handle_outcome(tag).
struct ClientRequest {
  std::uint64_t tag = 0;  ///< echo back in handle_outcome
  http::Request request;  ///< bytes (head + protobuf body), retry_safe with match_seq_num; id = tag
};

/// Records [first, last] (one batch) completed with one result (P2, P3, P4).
struct RecordsCompleted {
  Ticket first;                                                      ///< first ticket (inclusive)
  Ticket last;                                                       ///< last ticket (inclusive), >= first
  tl::expected<std::shared_ptr<const S2Policy::Ack>, Error> result;  ///< ack (never null) or error
  /// The outcome of `ticket` (first <= ticket <= last), as the adapters report it (P4).
  [[nodiscard]] RecordResult record(Ticket ticket) const;
};

/// One output of poll_event().
using ClientEvent = std::variant<RecordsCompleted, BarrierCompleted, Closed, CapacityAvailable>;

/// The S2 producer client (see the file comment). Movable.
class ProducerClient {
 public:
  /// Validates `options` (see validate()) and builds the client.
  [[nodiscard]] static tl::expected<ProducerClient, std::string> create(const ProducerOptions& options);

  ProducerClient(ProducerClient&&) noexcept = default;             ///< movable
  ProducerClient& operator=(ProducerClient&&) noexcept = default;  ///< movable
  ProducerClient(const ProducerClient&) = delete;
  ProducerClient& operator=(const ProducerClient&) = delete;
  ~ProducerClient() = default;

  // ---- producer operations -------------------------------------------------------------
  /// Core submit (P1, P2, B1, B4, R1, R2, C2, E1), refused with would_block also when
  /// max_pending_records records await delivery (R3).
  [[nodiscard]] tl::expected<Ticket, Rejection> submit(Instant now, std::string_view record);
  /// Core submit_many, stopping at max_pending_records as at any other refusal.
  [[nodiscard]] SubmitManyResult submit_many(Instant now, std::span<const std::string_view> records);
  /// Flush barrier (F1–F5): the BarrierCompleted event brings the result.
  [[nodiscard]] tl::expected<BarrierId, Rejection> flush(Instant now);
  /// Closes the producer (C1): the Closed event brings the result (emitted once).
  void close(Instant now);
  /// Aborts (C5): every unresolved record, flush and close fails with `aborted`.
  void abort(Instant now);
  /// The adapter delivered `records` record outcomes: frees room under
  /// max_pending_records (R3); CapacityAvailable follows a refusal for it.
  void on_delivered(Instant now, std::uint64_t records);

  // ---- transport ------------------------------------------------------------------------
  /// The next request to send, or nullopt; batches in seal order.
  [[nodiscard]] std::optional<ClientRequest> poll_request();
  /// The outcome of the request `tag`: classified (classify_append, S7) and given to the
  /// core. Unknown tags are ignored.
  void handle_outcome(Instant now, std::uint64_t tag, tl::expected<http::Response, Error> result);
  /// The earliest instant handle_timeout has work, or nullopt (D3).
  [[nodiscard]] std::optional<Instant> next_deadline() const;
  /// Processes every deadline due at `now` (never early, D3).
  void handle_timeout(Instant now);

  // ---- outputs and queries --------------------------------------------------------------
  /// The next event, or nullopt. Record completions come in ticket order (P3); Closed
  /// comes after every record's completion (C1).
  [[nodiscard]] std::optional<ClientEvent> poll_event();
  /// True once the producer is closed: an owned session may be released (C4).
  [[nodiscard]] bool finished() const noexcept;
  /// The core (state, stats, policy: the next match_seq_num).
  [[nodiscard]] const S2Producer& core() const noexcept { return core_; }
  /// The options the client was created with.
  [[nodiscard]] const ProducerOptions& options() const noexcept { return options_; }
  /// Records accepted whose outcome the adapter has not yet delivered (R3).
  [[nodiscard]] std::uint64_t pending_records() const noexcept { return pending_.pending(); }
  /// Submit-to-acknowledgement latency of every acknowledged record so far (ns, from the
  /// `now` of the submit that accepted it to the `now` of the input that acknowledged it;
  /// failed records are not counted). Percentiles within 6.25 % (prodsm/latency.hpp).
  [[nodiscard]] LatencySummary submit_to_ack() const noexcept { return latency_.summary(); }
  /// The last failure of a batch attempt (a retried one, or the one that failed the
  /// producer), or nullopt: the cause the adapters' events name.
  [[nodiscard]] const std::optional<Error>& last_failure() const noexcept { return last_failure_; }

 private:
  /// The batch attempt an outstanding request carries.
  struct Outstanding {
    BatchId batch{};
    std::uint32_t attempt = 0;
    std::optional<std::uint64_t> match_seq_num;  ///< the append's (classify_append: S4)
  };

  ProducerClient(ProducerOptions options, S2Producer core);
  void drive(Instant now);
  void annotate(Error& error) const;

  ProducerOptions options_;
  RequestOptions request_options_;
  S2Producer core_;
  prodsm::detail::PendingRecords pending_;  ///< max_pending_records (R3)
  std::deque<ClientRequest> requests_;
  std::unordered_map<std::uint64_t, Outstanding> outstanding_;
  std::uint64_t next_tag_ = 1;
  std::deque<ClientEvent> events_;
  /// The last failure of a batch attempt: a delivery timeout's message names it.
  std::optional<Error> last_failure_;
  prodsm::detail::AckLatency latency_;  ///< submit-to-ack latency (submit_to_ack)
};

}  // namespace prodsm::s2
