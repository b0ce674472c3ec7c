// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file client.hpp
/// The Durable Streams producer client, sans-IO: it joins the Producer core, the
/// Durable Streams codec and the HTTP transport's requests and outcomes. Both adapters
/// (Asio, blocking) run this one object; they only move requests to a connection pool,
/// outcomes back, arm one timer and dispatch completions (A1–A4).
///
///  - inputs: submit, submit_many, flush, close, close_stream, close_with_stream, abort,
///    on_delivered (the adapter delivered outcomes: R3), handle_outcome (a request's
///    response or transport failure), handle_timeout;
///  - outputs: poll_request() (HTTP requests to send), poll_event() (record, flush,
///    stream-close and close completions, capacity), next_deadline().
///
/// Drive rule: after every input, drain poll_request() and poll_event(), then arm one
/// timer at next_deadline(). Time is always a parameter; nothing here reads a clock,
/// does I/O, takes a lock or calls user code (D1). Not thread-safe: one driver owns it.
///
/// What lives here once for every adapter: the option checks, encoding each batch
/// (producer headers from the stamp: S2), classifying each response by status and
/// headers into the core's handle_ack / handle_failure (S3–S7), the flush barrier in
/// front of a stream close, the sequenced final close with its one epoch claim (S5),
/// the bounded, jittered retries of stream-close requests (E4), and the bound on
/// records accepted but not yet delivered (max_pending_records, R3).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include <tl/expected.hpp>

#include "prodsm/detail/ack_latency.hpp"
#include "prodsm/detail/backoff.hpp"
#include "prodsm/detail/pending_records.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/ds/results.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/http/connection.hpp"
#include "prodsm/http/pool.hpp"
#include "prodsm/latency.hpp"

namespace prodsm::ds {

/// How an idempotent producer starts (S2, S3, S5): what a restart with the same
/// producer id does. Kafka's idempotent producer gets a fresh identity at every start;
/// prodsm keeps the producer id (so a new incarnation still fences an old one, S5) and
/// starts a fresh epoch instead. See docs/design.md ("Restarts").
enum class ProducerStart : std::uint8_t {
  /// Default. A new incarnation: the epoch is the larger of the configured one and the
  /// microseconds since the Unix epoch at creation (below 2^53 until the year 2255), so it
  /// is above every earlier start's; a new epoch starts at seq 0, so no batch can be
  /// deduplicated against an earlier incarnation, and the new incarnation fences the old
  /// ones. A duplicate answering a first attempt — only a colliding incarnation or a
  /// dishonest server can send one — fails the producer (FirstAttemptDuplicates::fail).
  fresh_epoch,
  /// Exactly the configured epoch (epochs managed by the caller). A (producer id, epoch)
  /// used before fails at the first batch, before anything is appended
  /// (FirstAttemptDuplicates::fail, one batch in flight until the first ack).
  given_epoch,
  /// Continue an earlier incarnation: exactly the configured epoch, and duplicates
  /// answering first attempts are accepted and reported (RecordAck::earlier_incarnation):
  /// finishing an interrupted run whose batches repeat exactly — the same records in the
  /// same batches — since the server deduplicates per (epoch, seq) batch: a resumed batch
  /// with other records than the earlier one under its seq is answered as a duplicate,
  /// and its records are reported appended when they are not. Batch boundaries depend on
  /// timing unless max_batch_records alone seals every batch: linger disabled, no flush
  /// before the end, and no submit ever refused or kept waiting for capacity (R2 seals
  /// the partial batch then; max_unacked_bytes, max_in_flight and max_pending_records
  /// must hold the whole run). A red-team run with linger disabled and a fixed
  /// max_batch_records lost 1,178 records this way. To finish an interrupted run, prefer
  /// fresh_epoch and skip what the stream already holds (as `prodsm produce --resume`
  /// does).
  resume,
};

/// Configuration shared by both adapters' producers (each adds its callback executor).
struct ProducerOptions {
  /// The stream: `http://host[:port]/path`.
  std::string url;
  /// The stream's content type, sent on every append. `application/json` requires
  /// `producer.protocol.body_format == json`, and a type that is not JSON `bytes`. A
  /// `+json` type takes either: `json` frames each batch as one array, as the other SDKs
  /// and the client conformance suite do, but the reference server stores such a stream
  /// as bytes (PROTOCOL.md section 9.1; ds::stores_json_messages), so its batches land as
  /// arrays one after another; `bytes` sends the records as they are.
  std::string content_type = "application/octet-stream";
  /// The core's configuration (linger, limits, retry, idempotent producer, ...).
  DurableStreamsConfig producer{};
  /// With an idempotent producer: what this start is (default a fresh epoch, so a
  /// restart never has its records deduplicated away).
  ProducerStart start = ProducerStart::fresh_epoch;
  /// Connection settings of the session the producer creates (ignored when attached to
  /// a session): pipelined or pool mode, timeouts, stall detection, limits.
  http::TransportOptions session{};
  /// Extra headers on every request, e.g. Authorization (checked: no CR/LF, no managed
  /// names; at most http::kMaxProvidedFields headers and http::kMaxProvidedBytes bytes as
  /// written, http::check_extra_header_bounds).
  Headers extra_headers{};
  /// How long a submit waits for capacity before it is refused with would_block (ns),
  /// 0..10 min (0: never wait). Default 30 s.
  Duration submit_timeout_ns = std::chrono::seconds{30};
  /// Most records accepted whose outcome the adapter has not yet delivered — in the core,
  /// or completed and waiting for the callback dispatcher (R3: a slow callback slows the
  /// submitters instead of growing a queue). A submit past it is refused with
  /// would_block (and waits like one). 1..16 777 216. Default 1 048 576.
  std::uint32_t max_pending_records = 1U << 20;
};

/// The first invalid option of `options`, named as the field ("url: ...",
/// "content_type: ...", "producer.max_batch_bytes: ...", "session.max_connections: ...",
/// "max_pending_records: ..."), or nullopt. ProducerClient::create also refuses what
/// needs the start too: "start: ..." out of range, and "producer.protocol.idempotent.seq:
/// ..." not 0 with start fresh_epoch (B3).
std::optional<std::string> validate(const ProducerOptions& options);

/// The core configuration `options.start` gives at wall-clock time `wall_now` (a
/// parameter: nothing here reads a clock): for fresh_epoch the epoch
/// max(producer.protocol.idempotent->epoch, microseconds since the Unix epoch), and each
/// mode's FirstAttemptDuplicates. Unchanged without an idempotent producer.
DurableStreamsConfig starting_config(const ProducerOptions& options, std::chrono::system_clock::time_point wall_now);

/// Which batch attempt an append request carries (for tracing, logs and the conformance
/// suite; the adapters need only the bytes).
struct RequestBatch {
  BatchId batch{};                      ///< the core's batch id
  std::uint32_t attempt = 0;            ///< 1 for the first send of the batch, then 2, 3, ...
  Ticket first_ticket{};                ///< the batch's first record
  std::uint32_t record_count = 0;       ///< records in the batch, >= 1
  DurableStreamsPolicy::Stamp stamp{};  ///< its producer headers (S2), when sequenced
};

/// What a request is for.
enum class RequestKind : std::uint8_t {
  append,        ///< a batch attempt (`batch` says which)
  stream_close,  ///< a close_stream / close_with_stream request (S6, C4)
};

/// One HTTP request the client wants sent; report its outcome with handle_outcome(tag).
struct ClientRequest {
  std::uint64_t tag = 0;                   ///< echo back in handle_outcome
  http::Request request;                   ///< bytes (head + body), HEAD flag, retry_safe (sequenced appends); id = tag
  RequestKind kind = RequestKind::append;  ///< a batch attempt or a stream close
  std::optional<RequestBatch> batch;       ///< kind == append: the batch attempt it carries
  std::uint64_t stream_close_op = 0;       ///< kind == stream_close: the op it is for
  std::size_t body_bytes = 0;              ///< the body: the last body_bytes bytes of request.bytes
};

/// Records [first, last] (one batch) completed with one result (P2, P3, P4): the batch's
/// acknowledgement, shared by its records, or the error with this range's certainty.
struct RecordsCompleted {
  Ticket first;                                                                  ///< first ticket (inclusive)
  Ticket last;                                                                   ///< last ticket (inclusive), >= first
  tl::expected<std::shared_ptr<const DurableStreamsPolicy::Ack>, Error> result;  ///< ack (never null) or error
  /// The outcome of `ticket` (first <= ticket <= last), as the adapters report it (P4).
  [[nodiscard]] RecordResult record(Ticket ticket) const;
};

/// A close_stream or close_with_stream operation finished (S6).
struct StreamCloseCompleted {
  std::uint64_t op = 0;      ///< as returned by close_stream / close_with_stream
  CloseStreamResult result;  ///< the final offset, or the error
};

/// One output of poll_event().
using ClientEvent = std::variant<RecordsCompleted, BarrierCompleted, Closed, CapacityAvailable, StreamCloseCompleted>;

/// The Durable Streams producer client (see the file comment). Movable.
class ProducerClient {
 public:
  /// Validates `options` (see validate(); also `start` and a seq given with fresh_epoch)
  /// and builds the client, starting as `options.start` says at wall-clock time
  /// `wall_now` (starting_config). Error: the invalid option, named as the field.
  [[nodiscard]] static tl::expected<ProducerClient, std::string> create(const ProducerOptions& options,
                                                                        std::chrono::system_clock::time_point wall_now);

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
  /// Closes the producer (C1): the Closed event brings the result (a second close brings
  /// nothing new; Closed is emitted once).
  void close(Instant now);
  /// Closes the stream on the server (C4, S6): a flush barrier, then — if every covered
  /// record succeeded — a plain `Stream-Closed: true` request (idempotent: a repeat is
  /// answered 204), retried within the retry policy and for at most delivery_timeout_ns
  /// after its first failure (E6). The StreamCloseCompleted event with
  /// the returned op brings the result. Refused (the error) when the flush is refused.
  [[nodiscard]] tl::expected<std::uint64_t, Error> close_stream(Instant now);
  /// Closes the producer, then the stream in one sequenced request (the next unused seq
  /// of the current epoch, `final_record` as its body when present: JSON mode frames it
  /// as `[record]`). On 403 stale epoch with auto_claim it is resent once as server
  /// epoch + 1, seq 0 (S5); retryable failures are retried within the retry policy (the
  /// server deduplicates the sequenced close), for at most delivery_timeout_ns after the
  /// first failure (E6). Returns the op of the StreamCloseCompleted
  /// event. A later call is a retry of the same close, as a resend of the sequenced close
  /// is to the server: it returns the same op while the first runs, and a new op completed
  /// at once with the same result afterwards; its own final record is NOT appended (only
  /// the first call's is; the cross-SDK client suite's close-with-body-retry-different-body).
  /// Refused: `invalid_record` (the final record is not a valid record, or exceeds
  /// max_batch_bytes as a batch of one, B4), `closed` (the producer was already closed
  /// without it).
  [[nodiscard]] tl::expected<std::uint64_t, Error> close_with_stream(Instant now,
                                                                     std::optional<std::string> final_record);
  /// Aborts (C5): every unresolved record, flush, close and stream close fails with
  /// `aborted`.
  void abort(Instant now);
  /// The adapter delivered `records` record outcomes (their callbacks ran): frees room
  /// under max_pending_records (R3); CapacityAvailable follows a refusal for it.
  void on_delivered(Instant now, std::uint64_t records);

  // ---- transport ------------------------------------------------------------------------
  /// The next request to send, or nullopt. Requests come in the order they must reach
  /// the server (batches in seal order).
  [[nodiscard]] std::optional<ClientRequest> poll_request();
  /// The outcome of the request `tag`: classified (S7) and given to the core, or to the
  /// stream close it was for. Unknown tags are ignored.
  void handle_outcome(Instant now, std::uint64_t tag, tl::expected<http::Response, Error> result);
  /// The earliest instant handle_timeout has work (the core's deadline, a stream-close
  /// retry), or nullopt (D3).
  [[nodiscard]] std::optional<Instant> next_deadline() const;
  /// Processes every deadline due at `now` (never early, D3).
  void handle_timeout(Instant now);

  // ---- outputs and queries --------------------------------------------------------------
  /// The next event, or nullopt. Record completions come in ticket order (P3); Closed
  /// comes after every record's completion (C1).
  [[nodiscard]] std::optional<ClientEvent> poll_event();
  /// True once the producer is closed and no stream close is pending: an owned session
  /// may be released (C4).
  [[nodiscard]] bool finished() const noexcept;
  /// The core (state, stats, policy: epoch and next seq).
  [[nodiscard]] const DurableStreamsProducer& core() const noexcept { return core_; }
  /// The parsed stream URL.
  [[nodiscard]] const StreamUrl& url() const noexcept { return url_; }
  /// The options the client was created with (`producer` as starting_config made it:
  /// the epoch in use).
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
  /// What an outstanding request is for.
  struct Outstanding {
    bool batch = true;  ///< a batch attempt (else a stream close)
    BatchId batch_id{};
    std::uint32_t attempt = 0;
    bool sequenced = false;
    std::uint64_t op = 0;   ///< the stream close
    ProducerStamp stamp{};  ///< a sequenced batch's epoch and seq (its ack's echo is checked)
  };
  /// A close_stream / close_with_stream in progress.
  struct StreamClose {
    std::uint64_t op = 0;
    bool final = false;                    ///< close_with_stream (sequenced, after Closed)
    std::optional<std::uint64_t> barrier;  ///< close_stream: waits for this flush
    bool started = false;                  ///< its request was built at least once
    std::uint32_t attempts = 0;
    std::optional<Instant> retry_at;
    /// Its first failed attempt: retries end once delivery_timeout_ns passed since (E6).
    std::optional<Instant> first_failure_at;
    bool claimed = false;  ///< S5: the one epoch claim was made
    std::uint64_t epoch = 0;
    std::uint64_t seq = 0;
    /// An attempt failed indefinite (E2): it may have appended the final record and closed
    /// the stream, so a later failure (a resend's 409 stream_closed) is indefinite too (E3).
    bool maybe_applied = false;
  };

  ProducerClient(ProducerOptions options, StreamUrl url, DurableStreamsProducer core);
  void drive(Instant now);
  void on_batch_outcome(Instant now, const Outstanding& o, tl::expected<http::Response, Error> result);
  void on_stream_close_outcome(Instant now, std::uint64_t op, tl::expected<http::Response, Error> result);
  void send_stream_close(StreamClose& c);
  void finish_stream_close(std::uint64_t op, CloseStreamResult result);
  StreamClose* find_stream_close(std::uint64_t op);
  std::uint64_t push_request(http::Request request, Outstanding what, std::size_t body_bytes,
                             std::optional<RequestBatch> batch = {});

  ProducerOptions options_;
  StreamUrl url_;
  RequestOptions request_options_;
  std::string producer_id_;
  bool json_ = false;
  DurableStreamsProducer core_;
  prodsm::detail::PendingRecords pending_;  ///< max_pending_records (R3)
  std::deque<ClientRequest> requests_;
  std::unordered_map<std::uint64_t, Outstanding> outstanding_;
  std::uint64_t next_tag_ = 1;
  std::deque<ClientEvent> events_;
  std::deque<StreamClose> stream_closes_;
  std::uint64_t next_op_ = 1;
  std::optional<std::string> final_body_;  ///< close_with_stream's framed final record
  bool final_requested_ = false;
  std::uint64_t final_op_ = 0;
  std::optional<CloseStreamResult> final_result_;
  prodsm::detail::SplitMix64 rng_;
  /// The last failure of a batch attempt: a delivery timeout's message names it (the
  /// timeout alone does not say why nothing was acknowledged).
  std::optional<Error> last_failure_;
  prodsm::detail::AckLatency latency_;  ///< submit-to-ack latency (submit_to_ack)
  void annotate(Error& error) const;
};

}  // namespace prodsm::ds
