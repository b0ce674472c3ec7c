// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file connection.hpp
/// One HTTP/1.1 client connection as a sans-IO state machine (h11's shape): requests in,
/// bytes to write out, bytes read in, time in, outcomes out. It owns the one rule the
/// producer's error certainty depends on (E2, E4):
///
///  - a request none of whose bytes were handed to a write fails **definite** (it cannot
///    have reached the server): connect failure or timeout -> `unavailable`; the
///    connection lost before its turn -> `connection_lost`, definite;
///  - a request some of whose bytes were handed to a write and whose response did not
///    arrive complete (reset, EOF, request timeout, stall) fails **indefinite**:
///    `connection_lost`, indefinite, retryable;
///  - requests behind a response that closes the connection (`Connection: close`): the
///    ones not yet handed to a write definite; the ones already written indefinite, as
///    above — RFC 9112 §9.6 forbids the server to process them, but a server that had
///    read a pipelined request may anyway (Node's HTTP server does), and a plain append
///    resent as unprocessed would then be doubled;
///  - a malformed response: the parser's `protocol_error`, indefinite, not retryable.
///
/// With ConnectionOptions::hand_back_unprocessed (what the Pool sets), the definite
/// `connection_lost` ones — never handed to a write, with none before them that was —
/// are handed back (take_unprocessed) instead of failing, for the pool to send again.
///
/// A response that arrives before the adapter reported its request's write as complete
/// is valid (a socket can deliver the answer before the write completion runs); the
/// request's bytes stay owned by the connection until both have happened.
///
/// Time is always a parameter; nothing here reads a clock, touches a socket or calls
/// user code (D1). One Connection is one socket's life: after `state() == closed` the
/// adapter closes the socket and the connection delivers nothing more.
/// Source: RFC 9112 §9 (connection management, pipelining, persistence).

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/error.hpp"
#include "prodsm/http/message.hpp"
#include "prodsm/http/request_fields.hpp"
#include "prodsm/http/response_parser.hpp"
#include "prodsm/time.hpp"

namespace prodsm::http {

/// Identifies one request for its outcome; chosen by the caller, unique among the
/// requests it has outstanding.
struct RequestId {
  std::uint64_t value = 0;  ///< opaque to the connection
  friend constexpr auto operator<=>(RequestId, RequestId) = default;
};

/// One request: its complete bytes (head + body) and how it may be treated.
struct Request {
  RequestId id;       ///< echoed in the Outcome
  std::string bytes;  ///< head + body, exactly as sent; owned by the connection until the outcome
  bool head = false;  ///< a HEAD request: its response has no body (RFC 9110 §9.3.2)
  /// A resend cannot change what the server holds (an idempotent method, RFC 9110
  /// §9.2.2, or a sequenced producer append): the connection may then give up on a
  /// response that stalls (stall detection) instead of waiting for the request timeout.
  /// Only for requests answered about as fast as the session's others (stall detection
  /// learns its timeout from them): a catch-up read, whose first byte waits for its whole
  /// body to be built, leaves it false.
  bool retry_safe = false;
  /// Streamed-body mode (message.hpp, BodySink): the response's body goes to this sink as
  /// it is decoded instead of into Response::body, without the max_body_bytes bound, and
  /// the request timeout of a streamed body counts from the last byte received rather
  /// than from the request's first byte (a long body that keeps arriving is not cut off;
  /// one that stops is). Null (the default): the body is collected whole.
  std::shared_ptr<BodySink> body_sink;
  /// The rule of the protocol that encoded this request on headers added to it per attempt
  /// (a session's header provider, request_fields.hpp), e.g. s2::check_provided_header,
  /// which refuses the names the S2 codec manages. Null: the session's default (the
  /// adapters' sessions use ds::check_extra_header). The connection itself ignores it.
  HeaderRule header_rule = nullptr;
  /// Times a Pool queued this request again because its connection ended without the
  /// server processing it (ConnectionOptions::hand_back_unprocessed); at most
  /// Pool::kMaxRequeues. Starts at 0; the pool counts.
  std::uint32_t requeues = 0;
};

/// The outcome of one request: its response, or a classified transport failure.
struct Outcome {
  RequestId id;                          ///< the request's id
  tl::expected<Response, Error> result;  ///< the response, or why there is none (see the file comment)
};

/// Bytes to write next: up to kMaxParts spans (one per request), for one vectored write.
/// The spans stay valid until on_written reports them written (a request answered and
/// written is freed then) or the connection is destroyed; the adapter reports how many
/// bytes it wrote with on_written (in order, from the first span).
struct WriteView {
  static constexpr std::size_t kMaxParts = 16;           ///< requests per vectored write
  std::array<std::span<const char>, kMaxParts> parts{};  ///< the first `count` are the bytes, in order
  std::size_t count = 0;                                 ///< spans in use
  std::size_t bytes = 0;                                 ///< total bytes in those spans
  /// True when there is nothing to write.
  [[nodiscard]] bool empty() const noexcept { return count == 0; }
  /// The spans in use.
  [[nodiscard]] std::span<const std::span<const char>> spans() const noexcept { return {parts.data(), count}; }
};

/// Settings of one connection (validated by the Pool that creates it).
struct ConnectionOptions {
  std::string peer;  ///< "host:port", for messages only
  /// From creation to on_connected (ns); then the queued requests fail `unavailable`.
  Duration connect_timeout_ns = std::chrono::seconds{10};
  /// From a request's first byte handed to a write to the last byte of its response (ns);
  /// also the longest a write may stay in progress. A streamed body (Request::body_sink)
  /// may take longer as long as no gap between its bytes reaches this.
  Duration request_timeout_ns = std::chrono::seconds{30};
  /// Bounds on each response (R3).
  ResponseLimits response_limits{};
  /// Most requests outstanding on the connection (pipelining depth, R3), >= 1.
  std::uint32_t max_requests = 32;
  /// When the connection ends (lost, or closed by a response), the requests the server
  /// certainly did not process — none of whose bytes were handed to a write — are handed
  /// back through take_unprocessed() with the definite error they would have failed
  /// with, instead of failing: a Pool sends them again, first and in order, on another
  /// connection. Only when no request before them was handed out (that one fails
  /// indefinite, and the caller's resend of it must come first: then they fail too,
  /// definite). Not for a failed connect or close(). Default false: they fail (definite)
  /// as outcomes.
  bool hand_back_unprocessed = false;
};

/// A request handed back unprocessed (ConnectionOptions::hand_back_unprocessed), with
/// the definite error it would have failed with.
struct Unprocessed {
  Request request;  ///< as enqueued (a copy: a write in progress may still use the original)
  Error error;      ///< connection_lost, definite, retryable
};

/// One HTTP/1.1 client connection (see the file comment). Not thread-safe.
class Connection {
 public:
  /// Where the connection is.
  enum class State : std::uint8_t {
    connecting,  ///< created; waiting for on_connected / on_connect_failed
    open,        ///< connected: requests are written and answered in order
    closed,      ///< finished: close the socket; nothing more is delivered
  };

  /// A connection being connected from `now` (the connect deadline starts now).
  Connection(ConnectionOptions options, Instant now);
  Connection(Connection&&) noexcept = default;             ///< movable (the pool keeps them by value)
  Connection& operator=(Connection&&) noexcept = default;  ///< likewise
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() = default;

  // ---- inputs -------------------------------------------------------------------------
  // Every input takes `now` on a monotonic clock. A `now` earlier than one an input
  // already brought is read as that latest instant: time never goes backwards here (D3).

  /// The socket connected.
  void on_connected(Instant now);
  /// Connecting failed: every queued request fails `unavailable`, definite, retryable,
  /// with `why` in the message. The connection closes.
  void on_connect_failed(Instant now, std::string_view why);
  /// Connecting failed with `error` (e.g. a refused TLS handshake: tls_failed): every
  /// outstanding request fails with it, definite — also when the connection counted as
  /// open already, as long as the server could not have processed a request (a TLS 1.3
  /// server refuses a client certificate after the client finished its handshake). The
  /// connection closes.
  void on_connect_failed(Instant now, const Error& error);
  /// Queues a request behind the ones queued before it (pipelined in order). Only when
  /// can_accept(); otherwise the request fails at once (`unavailable`, definite).
  void enqueue(Instant now, Request request);
  /// The bytes to write next, handed to the adapter's write: empty when a write is in
  /// progress (until on_written), when not connected, or when nothing is queued.
  WriteView take_write(Instant now);
  /// The write handed out by take_write ended, `bytes` of it written (fewer than handed
  /// out: the rest is handed out again by the next take_write; 0 when it failed). The end
  /// of every write is reported here, before any on_error the write caused.
  void on_written(Instant now, std::size_t bytes);
  /// Bytes read from the socket.
  void on_bytes(Instant now, std::span<const char> bytes);
  /// The peer closed its side (read returned 0).
  void on_eof(Instant now);
  /// The socket failed (reset, write or read error); `why` goes into the messages.
  void on_error(Instant now, std::string_view why);
  /// Local close: outstanding requests fail (handed out: `connection_lost`, indefinite;
  /// never handed out: `closed`, definite, not retryable). Idempotent.
  void close(std::string_view why);
  /// Processes the connect, request and stall deadlines due at `now` (never early, D3).
  /// `stall_timeout_ns`: how long the oldest request, when retry_safe, may go without a
  /// first response byte after it is due (fully written and every earlier response
  /// complete); 0 disables stall detection. A stall is declared at a second look, at least
  /// kStallSecondLookNs after the first found the request past its stall deadline, so
  /// that the caller's loop reads its sockets in between: a loop that was busy elsewhere
  /// and handles its timer before its readable socket does not take the response waiting
  /// there for a stall.
  void handle_timeout(Instant now, Duration stall_timeout_ns);
  /// The least time between the look that finds a request past its stall deadline and
  /// the look that declares the stall (ns): one pass of the caller's event loop.
  static constexpr Duration kStallSecondLookNs = std::chrono::milliseconds{1};

  // ---- outputs ------------------------------------------------------------------------
  /// The next outcome, in request order, or nullopt.
  std::optional<Outcome> poll_outcome();
  /// A measured head-of-line wait (from a request being due to its first response byte),
  /// for the pool's stall estimate; nullopt when none is new.
  std::optional<Duration> poll_wait_sample();
  /// The earliest deadline handle_timeout has work for, given the same stall timeout.
  [[nodiscard]] std::optional<Instant> next_deadline(Duration stall_timeout_ns) const;

  // ---- queries ------------------------------------------------------------------------
  /// Lifecycle state.
  [[nodiscard]] State state() const noexcept { return state_; }
  /// True while a take_write result was not yet reported through on_written: the bytes
  /// must stay alive (the adapter's write uses them).
  [[nodiscard]] bool write_in_progress() const noexcept { return handed_end_ > written_pos_; }
  /// True when take_write would return bytes.
  [[nodiscard]] bool wants_write() const noexcept;
  /// Requests queued and not yet answered.
  [[nodiscard]] std::size_t outstanding() const noexcept { return entries_.size() - resp_; }
  /// True when another request may be queued (not closed, below max_requests).
  [[nodiscard]] bool can_accept() const noexcept;
  /// Since when the connection has been open with nothing outstanding (valid when
  /// open and outstanding() == 0).
  [[nodiscard]] Instant idle_since() const noexcept { return idle_since_; }
  /// Why the connection closed (empty while not closed).
  [[nodiscard]] const std::string& close_reason() const noexcept { return close_reason_; }
  /// Requests whose bytes were all handed out and confirmed written.
  [[nodiscard]] std::uint64_t requests_written() const noexcept { return requests_written_; }
  /// Complete responses delivered.
  [[nodiscard]] std::uint64_t responses() const noexcept { return responses_; }
  /// Requests failed by the transport (connect, loss, timeout, stall, malformed).
  [[nodiscard]] std::uint64_t transport_failures() const noexcept { return transport_failures_; }
  /// The requests handed back unprocessed since the last call, in request order (see
  /// ConnectionOptions::hand_back_unprocessed); they get no outcome here.
  std::vector<Unprocessed> take_unprocessed();
  /// True while a request some of whose bytes were handed to a write has no response
  /// yet. While false, any byte or end of file the socket holds is not an answer: an end
  /// of file means the server closed the connection before the next request's bytes.
  [[nodiscard]] bool awaiting_response() const noexcept;
  /// True when the connection closed because a retry_safe request stalled.
  [[nodiscard]] bool closed_by_stall() const noexcept { return closed_by_stall_; }

 private:
  struct Entry {
    Request request;
    std::uint64_t start = 0;  ///< position of its first byte in the connection's write stream
    bool responded = false;   ///< its outcome was delivered
    bool handed = false;      ///< some byte was handed to a write (it may have reached the server)
    Instant handed_at{};      ///< when its first byte was handed out (request timeout)
    bool written = false;     ///< every byte confirmed written
    Instant written_at{};     ///< when the last byte was confirmed written
    /// Set by the look that found it past its stall deadline (handle_timeout): that
    /// deadline, and when a second look may declare the stall. A look that finds another
    /// deadline (the pool's stall timeout changed) starts over.
    struct StallLook {
      Instant deadline;
      Instant second_look_at;
    };
    std::optional<StallLook> stall_look;
    [[nodiscard]] std::uint64_t end() const noexcept { return start + request.bytes.size(); }
  };

  /// How the unanswered requests that were never handed out are classified.
  enum class Cause : std::uint8_t {
    connect_failed,  ///< unavailable, definite
    lost,            ///< connection_lost, definite (handed out: indefinite)
    closed_after,    ///< not processed after a closing response: connection_lost, definite
    local_close,     ///< closed, definite, not retryable
  };
  void fail_all(const std::string& why, Cause cause);
  void finish(Entry& e, tl::expected<Response, Error> result);
  void deliver_response(Instant now, Response response);
  void retire();
  void start_response(Instant now);
  [[nodiscard]] Entry* head_entry() noexcept;
  [[nodiscard]] const Entry* head_entry() const noexcept;
  [[nodiscard]] std::optional<Instant> head_due() const noexcept;
  [[nodiscard]] Instant request_deadline(const Entry& head) const noexcept;
  [[nodiscard]] std::optional<Instant> stall_deadline(Duration stall_timeout_ns) const noexcept;

  ConnectionOptions options_;
  State state_ = State::connecting;
  Instant connect_deadline_;
  std::deque<Entry> entries_;      ///< [0, resp_) answered (kept while their bytes are being written)
  std::size_t resp_ = 0;           ///< index of the oldest unanswered request
  std::uint64_t written_pos_ = 0;  ///< bytes confirmed written
  std::uint64_t handed_end_ = 0;   ///< end of the bytes handed to the write in progress
  std::uint64_t queued_end_ = 0;   ///< end of every queued byte
  Instant write_started_at_{};     ///< when the write in progress was handed out
  ResponseParser parser_;
  bool response_started_ = false;   ///< a byte of the head request's response arrived
  Instant previous_response_at_{};  ///< when the previous response completed
  Instant last_byte_at_{};          ///< last byte received
  Instant idle_since_{};
  LatestInstant latest_now_;              ///< the latest `now` of any input (time never goes backwards here)
  std::vector<Unprocessed> unprocessed_;  ///< handed back, not yet taken
  std::deque<Outcome> outcomes_;
  std::optional<Duration> wait_sample_;
  std::string close_reason_;
  bool closed_by_stall_ = false;
  std::uint64_t requests_written_ = 0;
  std::uint64_t responses_ = 0;
  std::uint64_t transport_failures_ = 0;
};

}  // namespace prodsm::http
