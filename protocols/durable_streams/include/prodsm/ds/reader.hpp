// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file reader.hpp
/// A catch-up read of a Durable Streams stream as a sans-IO state machine that both
/// adapters (and the CLI through them) run: the reader gives the next GET, the adapter
/// sends it with the reader's body sink attached (streamed-body mode, http/message.hpp),
/// forwards the body as it arrives and hands back the outcome, until the server says up
/// to date or closed. Data is handed on as it arrives, so memory stays bounded whatever
/// the stream's size: bytes streams pass through as they are; JSON streams are cut into
/// their elements, each validated (simdjson) before it is handed on (detail/json_elements.hpp).
///
/// Faults: a GET is idempotent, so 408, 429, 5xx, lost connections and a failed header
/// provider (nothing sent) are retried with the
/// jittered backoff of a RetryPolicy (Retry-After honoured, E4); 4xx, a malformed
/// response and a JSON body that does not parse are not. A retry whose wait (a long
/// Retry-After) would end past the read's timeout_ns is not waited for: the read fails at
/// once with the server's answer and says so. A response that broke off after
/// some of its data was handed on is read again from the same offset and the part
/// already handed on is skipped — after checking that it is the same data (an
/// append-only stream never changes what it holds; a server that does is refused).
/// A page whose Stream-Next-Offset is before the offset it was read from is refused
/// before its data is handed on: offsets are lexicographically sortable and only increase
/// (PROTOCOL.md, Offsets), so its data would be handed on twice. Only an empty one, before
/// anything was handed on, is taken: a server clamping an offset past its tail.
/// Everything is bounded (R3): output bytes, JSON element size, requests, responses that
/// carry no data, attempts per offset, and the whole read's duration.
/// Source: PROTOCOL.md of durable-streams/durable-streams, "Reading" (catch-up reads,
/// Stream-Next-Offset, Stream-Up-To-Date, Stream-Closed; JSON mode returns arrays).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/config.hpp"
#include "prodsm/detail/backoff.hpp"
#include "prodsm/ds/detail/json_elements.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/connection.hpp"
#include "prodsm/time.hpp"

namespace prodsm::ds {

/// A failed GET the read sends again (E4), as decided (StreamReader::last_retry): what
/// a driver tells its caller so that a read that retries for minutes is not silent.
struct ReadRetry {
  Error failure;              ///< why the attempt failed (code, certainty, a message naming the stream)
  std::string offset;         ///< the offset the retry reads from (opaque)
  std::uint32_t attempt = 0;  ///< failed attempts at this offset so far, 1..retry.max_attempts - 1
  Duration delay_ns{0};       ///< the wait before the retry goes out (0: at once, a lost connection)
};

/// What a read may do (every field bounded; validate() names the first bad one).
struct ReadOptions {
  /// Where the read starts: "-1" = the beginning, or an offset a read returned (opaque).
  std::string offset = "-1";
  /// A JSON stream: data is handed on element by element (each one JSON value). Only for
  /// a stream the server keeps as JSON messages: a response whose Content-Type is anything
  /// but application/json (a `+json` type included: the reference server stores it as
  /// sent) fails the read with ReadFailure::not_json before any data is handed on.
  bool json = false;
  /// With `json` false: read in JSON mode all the same when the first 200 response's
  /// Content-Type is `application/json` (parameters aside; not a `+json` type, which the
  /// reference server stores as bytes). Each page of a JSON stream is a JSON array, so
  /// their bytes concatenated (`[1,2][3,4]`) are not one JSON text; in JSON mode they are
  /// handed on element by element (PROTOCOL.md, JSON mode).
  /// ReadChunk::json and ReadSummary::json tell which mode the read used. Default true.
  bool json_from_content_type = true;
  /// Most data bytes handed on (JSON: element bytes), 0..2^62; past it the read fails
  /// with protocol_error naming the limit (R3, ReadFailure::max_bytes): a bytes stream
  /// after exactly max_bytes were handed on, a JSON stream before the element that would
  /// pass it (elements are whole). Default 4 GiB.
  std::uint64_t max_bytes = 4ULL << 30;
  /// JSON streams: the largest element held while it is validated (bytes), 1..1 GiB.
  /// Default 64 MiB.
  std::size_t max_element_bytes = 64U << 20;
  /// Most GET requests, retries included, 1..2^32. Default 1,000,000.
  std::uint64_t max_requests = 1'000'000;
  /// Responses in a row that carry no data yet advance the offset without saying up to
  /// date, 0..1,000,000; one more fails the read (a server that never ends it). An empty
  /// response that does not advance the offset ends the read. Default 16.
  std::uint32_t max_empty_responses = 16;
  /// The whole read (ns), 1 ms..24 h; then it fails with `cancelled`. Default 10 min.
  Duration timeout_ns = std::chrono::minutes{10};
  /// Retries of a failed GET at one offset: max_attempts, backoff (E4), in the ranges of a
  /// producer's RetryPolicy and validated the same way (mode is not used: a GET changes
  /// nothing, so every retryable failure is retried). Default 10
  /// attempts (about 2.5 s of outage with the default backoff), not the producer's 1000:
  /// a read loses nothing by failing early (what it handed on stays handed on; a new read
  /// starts at the last next_offset it handed on).
  RetryPolicy retry{.max_attempts = 10};
  /// The longest the read goes on retrying at one offset (ns), from the first failure
  /// there: a retry that would be sent later fails the read instead, naming this bound,
  /// as a producer's delivery_timeout_ns ends its retries (E6). 0 = no bound but
  /// retry.max_attempts and timeout_ns. 0..24 h; default 0.
  Duration retry_timeout_ns{0};
  /// Headers every request carries.
  RequestOptions request{};

  /// The first invalid field as "<field>: <reason>", or nullopt.
  [[nodiscard]] std::optional<std::string> validate() const;
};

/// Where a read ended.
struct ReadSummary {
  std::string next_offset;      ///< where a later read would start (opaque)
  bool up_to_date = false;      ///< the server said Stream-Up-To-Date
  bool closed = false;          ///< the stream is closed and this is all of it
  std::uint64_t bytes = 0;      ///< data bytes handed on (JSON: element bytes)
  std::uint64_t elements = 0;   ///< JSON streams: elements handed on
  std::uint64_t requests = 0;   ///< GET requests made
  std::uint64_t retries = 0;    ///< of them, retries of a failed one
  std::uint64_t responses = 0;  ///< complete 200 responses
  bool json = false;            ///< read in JSON mode (ReadOptions::json or the stream's Content-Type)
};
/// Which of the read's own conditions ended it, beside the Error's code: a caller maps
/// these to outcomes of its own (the CLI's exit statuses) without reading messages.
enum class ReadFailure : std::uint8_t {
  /// The server's answer, the transport, a malformed response, the consumer's stop(), or
  /// one of the other bounds (max_requests, max_empty_responses, max_element_bytes,
  /// max_attempts): the code says which kind, the message names it.
  other,
  /// timeout_ns elapsed before the read finished (ErrorCode::cancelled; timed_out()).
  timeout,
  /// The stream holds more than max_bytes of data from the read's offset: a bytes stream's
  /// first max_bytes were handed on, a JSON stream's whole elements up to it
  /// (ErrorCode::protocol_error).
  max_bytes,
  /// ReadOptions::json was set, and before any data was handed on the first page's
  /// Content-Type was not one the server keeps as JSON messages (ds::stores_json_messages:
  /// exactly application/json; a `+json` type is stored as sent) or its body no JSON array:
  /// the stream does not keep JSON messages (ErrorCode::protocol_error); the caller asked
  /// for the wrong mode. A page that is not an array after data was
  /// handed on, or under a JSON Content-Type (JSON mode by json_from_content_type), is the
  /// server's fault: `other`.
  not_json,
};

/// A read's error: the Error (code, certainty, message naming the stream's path) and
/// which of the read's own conditions, if any, ended it. Converts from an Error (`other`)
/// and, sliced, to one.
struct ReadError : Error {
  ReadFailure failure = ReadFailure::other;  ///< which condition ended the read

  ReadError() = default;  ///< an `internal` error, `other`
  /// `error` with `why` (implicit from an Error: every error the read does not own is `other`).
  ReadError(Error error, ReadFailure why = ReadFailure::other) : Error(std::move(error)), failure(why) {}  // NOLINT
};

/// A read's outcome: where it ended, or the error that stopped it.
using ReadOutcome = tl::expected<ReadSummary, ReadError>;

/// What a streamed read hands to its consumer (the adapters' read_stream), in order.
struct ReadChunk {
  /// Data in stream order: bytes streams, a run of bytes; JSON streams, exactly one
  /// element (its JSON text). Valid only during the call. Empty when next_offset is set.
  std::string_view data;
  /// Set (and data empty) when a response completed: the offset after everything handed
  /// on so far — where a later read would continue. Not told for a response that ends
  /// before data already handed on (a re-read answered in smaller pages).
  std::optional<std::string_view> next_offset;
  /// `data` is one JSON element: the read is in JSON mode (ReadOptions::json, or a JSON
  /// stream's Content-Type with json_from_content_type).
  bool json = false;
};

/// Everything read from a stream by a collecting read (the adapters' read_stream_all).
struct StreamContents {
  /// Bytes streams: the bytes, concatenated. JSON streams: the elements, as one JSON
  /// array text `[e0,e1,...]`.
  std::string body;
  std::string next_offset;  ///< where a later read would start
  bool closed = false;      ///< the stream is closed and this is all of it
  std::size_t reads = 0;    ///< GET requests made
};
/// Outcome of a collecting read: everything read, or the error that stopped it.
using ReadStreamResult = tl::expected<StreamContents, Error>;

/// Collects a streamed read's chunks into StreamContents (a collecting read): bytes
/// concatenated, or JSON elements (ReadChunk::json) joined into one array text.
class ReadCollector {
 public:
  /// `json`: join elements as `[e0,e1,...]` even before (or without) a JSON chunk; a read
  /// that turned JSON mode on by Content-Type is joined so too (ReadSummary::json).
  explicit ReadCollector(bool json) : json_{json} {}
  /// Takes one chunk; always true (the read's max_bytes bounds what arrives).
  bool add(const ReadChunk& chunk);
  /// The contents, with where the read ended.
  StreamContents finish(const ReadSummary& summary);

 private:
  bool json_;
  bool first_ = true;
  std::string body_;
};

/// The catch-up read (see the file comment). Not thread-safe; one driver owns it.
///
/// Drive rule: after every input (on_head/on_body from the adapter's body sink,
/// on_outcome, handle_timeout) hand on output() — also when the input reported a failure:
/// it is the data before it — (a driver that reports retries: last_retry() when
/// retries_decided() grew), then send poll_request() if any (with an http::BodySink
/// that forwards to on_head/on_body), arm one timer at next_deadline(); stop once
/// finished().
class StreamReader {
 public:
  /// A read of `url` from options.offset, starting at `now` (the timeout runs from it).
  /// Error: the invalid option ("max_requests: ...").
  static tl::expected<StreamReader, std::string> create(StreamUrl url, ReadOptions options, Instant now);

  StreamReader(StreamReader&&) noexcept;             ///< movable
  StreamReader& operator=(StreamReader&&) noexcept;  ///< movable
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;
  /// Frees the reader's state (it does no I/O: nothing to stop).
  ~StreamReader();

  // ---- requests -----------------------------------------------------------------------
  /// The next GET, once (retry_safe; the adapter sets its body_sink); nullopt while one
  /// is outstanding, while a retry waits for next_deadline(), or once finished.
  std::optional<http::Request> poll_request(Instant now);
  /// The outcome of the request poll_request gave (a response whose body went to the sink,
  /// or a transport failure): the read goes on, retries, or finishes.
  void on_outcome(Instant now, tl::expected<http::Response, Error> outcome);
  /// The earliest instant handle_timeout has work: a retry's backoff or the read's timeout.
  [[nodiscard]] std::optional<Instant> next_deadline() const;
  /// Processes what is due at `now` (never early, D3): a retry, or the timeout.
  void handle_timeout(Instant now);
  /// Ends the read with `error` (the consumer's reason: its output failed, an
  /// interrupt; ReadFailure::other). Idempotent; the first end wins.
  void stop(Error error);

  // ---- the streamed body (the adapter's http::BodySink forwards to these) --------------
  /// The response head arrived: true to stream its body (a 200 that classifies as a read
  /// result), false to let it be collected (an error response: its text goes into the
  /// error message).
  bool on_head(const http::Response& head);
  /// Body bytes; then hand on output(). False: the read finished with an error (the
  /// response is abandoned).
  bool on_body(std::span<const char> bytes);

  // ---- outputs --------------------------------------------------------------------------
  /// Data to hand on, in stream order: bytes streams, runs of bytes; JSON streams, one
  /// element each (its JSON text as the server sent it). Valid until the next input
  /// (which forgets it: it counts as handed on).
  [[nodiscard]] std::span<const std::string_view> output() const noexcept { return output_; }
  /// True once the read ended (result() is set).
  [[nodiscard]] bool finished() const noexcept { return result_.has_value(); }
  /// The outcome once finished.
  [[nodiscard]] const std::optional<ReadOutcome>& result() const noexcept { return result_; }
  /// True when the read ended because timeout_ns elapsed.
  [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }
  /// The offset the next request reads from (after the last complete response).
  [[nodiscard]] const std::string& offset() const noexcept { return offset_; }
  /// True while data handed on before a broken response lies beyond offset(): a re-read
  /// that the server answers in smaller pages is still catching up with it, so offset()
  /// is not yet "after everything handed on" (the adapters tell no ReadChunk::next_offset
  /// then: a consumer checkpointing it would read that data twice).
  [[nodiscard]] bool catching_up() const noexcept { return committed_units_ < delivered_; }
  /// True when data is handed on as JSON elements: ReadOptions::json, or the stream's
  /// Content-Type told so before any data was handed on (json_from_content_type).
  [[nodiscard]] bool json() const noexcept { return summary_.json; }
  /// Progress so far (final once finished).
  [[nodiscard]] const ReadSummary& summary() const noexcept { return summary_; }
  /// Retries decided so far (E4): a failed GET the read will send again. A driver that
  /// tells its caller of retries compares this count after each input and then reads
  /// last_retry(); the failure that ends the read is not one (it is the result).
  [[nodiscard]] std::uint64_t retries_decided() const noexcept { return retries_decided_; }
  /// The retry decided last (see retries_decided), or nullopt before the first.
  [[nodiscard]] const std::optional<ReadRetry>& last_retry() const noexcept { return last_retry_; }

 private:
  StreamReader(StreamUrl url, ReadOptions options, Instant now);
  void finish_ok();
  void fail(Error error, ReadFailure why = ReadFailure::other);
  void fail_max_bytes();
  Error in_context(Error error) const;
  Error protocol_error(std::string what) const;
  bool take_unit(std::string_view unit, bool bytes_mode);
  bool on_data_bytes(std::span<const char> bytes);
  /// A 200 page that cannot follow offset_ (its next offset is before it) or does not fit
  /// the read's mode (JSON asked, the Content-Type is no JSON): fails the read, true.
  /// Sets data_refused_ for a page that may be taken only when empty.
  bool refuse_page(const http::Response& head, const std::string& next_offset);
  /// JSON mode by the stream's Content-Type (ReadOptions::json_from_content_type).
  void choose_mode(const http::Response& head);
  void on_response(Instant now, const http::Response& response);
  void on_failed_attempt(Instant now, Error error);
  void begin_input();

  StreamUrl url_;
  ReadOptions options_;
  std::string offset_;
  Instant deadline_;
  std::optional<Instant> retry_at_;
  bool outstanding_ = false;
  bool streaming_ = false;  ///< the current response's body goes through on_body
  /// Why data in the current page is refused (refuse_page): its Stream-Next-Offset is the
  /// offset it was read from, or, nothing handed on yet, before it (a clamped past-the-tail
  /// offset: an empty page is taken).
  std::optional<std::string> data_refused_;
  std::uint32_t attempts_ = 0;   ///< failed attempts at the current offset
  Instant first_failure_at_{};   ///< when the first of them failed (retry_timeout_ns)
  std::uint32_t empty_run_ = 0;  ///< responses in a row without data
  prodsm::detail::SplitMix64 rng_;
  ds::detail::JsonArraySplitter splitter_;
  // Units are bytes (bytes streams) or elements (JSON streams), counted from the start.
  std::uint64_t committed_units_ = 0;     ///< units before offset_
  std::uint64_t seen_ = 0;                ///< units of the current attempt's response so far
  std::uint64_t delivered_ = 0;           ///< units handed on
  std::uint64_t hash_delivered_ = 0;      ///< FNV-1a of the units handed on since the anchor
  std::uint64_t hash_resent_ = 0;         ///< FNV-1a of the units read again since the anchor
  std::uint64_t hash_resent_commit_ = 0;  ///< hash_resent_ at offset_
  std::vector<std::string_view> output_;
  std::string collected_body_;  ///< a 200's body that was collected, not streamed
  ReadSummary summary_;
  std::optional<ReadOutcome> result_;
  bool timed_out_ = false;
  std::uint64_t retries_decided_ = 0;
  std::optional<ReadRetry> last_retry_;
};

}  // namespace prodsm::ds
