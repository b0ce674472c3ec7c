// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file pool.hpp
/// The HTTP/1.1 connections to one server as a sans-IO state machine, shared by every
/// adapter: requests in, socket commands and outcomes out, time as a parameter.
///
/// Two connection modes:
///  - pipelined (default): one connection carries every request back to back; responses
///    come in request order (RFC 9112 §9.3.2). Requests reach the server in the order
///    they were enqueued.
///  - pool: up to max_connections connections, one request outstanding on each. A request
///    waits in the pool's queue until a connection is open *and* idle, and the queue is
///    served in order, so requests are written in enqueue order (a request never goes out
///    on a fresh connection ahead of an older one still waiting for its connect).
///
/// Faults (see connection.hpp for how each request is classified):
///  - a connection that dies (or is closed by a response: `Connection: close`, a proxy's
///    keep-alive limit) fails the requests it had written (indefinite: the server may
///    have processed them) and, with them, the ones behind (definite), so the caller
///    resends everything in its own order. When it had written none of them — the server
///    closed an idle connection, or a closing response left only unwritten requests
///    behind — those are queued again instead (pipelined mode), first and in order, and
///    go out on the next connection before anything enqueued after them
///    (PoolStats::requeued; at most kMaxRequeues times each, then they fail definite).
///    Failed back to the caller one by one, a request the caller made meanwhile (the next
///    batch, once the response before them freed room) could go out ahead of them;
///  - a stalled response — the server swallowed the request, a hung backend, a proxy —
///    is noticed for retry_safe requests by *stall detection*: the oldest request may go
///    without a first response byte, once it is due, for twice the longest head-of-line
///    wait measured over the last 128 to 256 responses (at least stall.min_ns); then the
///    connection is replaced. Each stall doubles the timeout (as TCP backs off its
///    retransmission timeout, RFC 6298 5.5). Once a response comes, up to
///    kStallHeldDoublings of the doublings stay, as many as keep the timeout within
///    kStallHeldTimeoutNs (1 s; none when it is longer undoubled), and each
///    kStallHoldResponses responses in a row without a stall take one off: a server that answers many requests slower
///    than measured is soon waited for long enough, and those slow waits then enter the window. (Ended by the first
///    fast response, the doublings let a server answering a third of requests 50 ms late have every slow one cut, never
///    measured; kept without a bound, frequent swallowed requests would grow the timeout to the request timeout;
///    bounded only in number, they made it 64x an already long wait: with some answers 250 ms late and a request
///    swallowed every few responses, a red-team run waited 10 s per swallowed request and spent its 60 s delivery
///    timeout on 12 stalls.) A stall is declared at a second look, one pass of the caller's loop later
///    (Connection::kStallSecondLookNs). Other requests wait for request_timeout_ns.
///  - a connect that fails fails the requests waiting for it (`unavailable`, definite)
///    when no other connection is open or connecting (else they wait for it); the pool
///    does not reconnect on its own: the next request (the caller's paced retry) opens
///    the next connection.
///
/// Drive rule (the same as the producer core's): after every input, drain poll_command()
/// (Connect / Write / Close) and poll_outcome(), then arm one timer at next_deadline().
/// Nothing here reads a clock, touches a socket or calls user code (D1).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/http/connection.hpp"
#include "prodsm/http/tls.hpp"

namespace prodsm::http {

/// How requests share TCP connections.
enum class ConnectionMode : std::uint8_t {
  pipelined,  ///< one connection, requests pipelined (HTTP/1.1), responses in order
  pool,       ///< up to max_connections connections, one request outstanding on each
};

/// Stall detection for retry_safe requests (see the file comment). Durations in ns; the
/// stall timeout in use never exceeds the request timeout (a stall timeout at least as
/// long as it changes nothing).
struct StallDetection {
  /// False: only the request timeout notices a response that never comes.
  bool enabled = true;
  /// The smallest stall timeout (ns), 100 us..10 min. Default 5 ms: longer than a
  /// young-generation GC pause of a server runtime, so a healthy server is not taken for a
  /// stalled one.
  Duration min_ns = std::chrono::milliseconds{5};
  /// The stall timeout before the first measured wait (ns), min_ns..10 min.
  /// Default 1 s (as RFC 6298's initial retransmission timeout).
  Duration initial_ns = std::chrono::seconds{1};
};

/// How a Pool uses connections: everything but the server's address. Every field is
/// bounded; validate() names the first bad one. The adapters' SessionOptions.
struct TransportOptions {
  /// Connection mode. Default pipelined: measured faster against the reference server,
  /// and it keeps requests in order (docs/performance.md).
  ConnectionMode mode = ConnectionMode::pipelined;
  /// Pool mode: most connections, 1..64. Default 5 (the producer's max_in_flight).
  std::uint32_t max_connections = 5;
  /// Pipelined mode: most requests outstanding on the connection, 1..1024 (R3). Default 64.
  std::uint32_t max_pipelined_requests = 64;
  /// Bound on connecting (ns), 1 ms..10 min. Default 10 s.
  Duration connect_timeout_ns = std::chrono::seconds{10};
  /// Bound on one request, from its first byte handed to a write to the last byte of its
  /// response (ns), 1 ms..10 min. Default 30 s.
  Duration request_timeout_ns = std::chrono::seconds{30};
  /// A connection idle for longer than this (ns) is replaced before reuse, so a request
  /// never races the server's keep-alive close (the reference server closes idle
  /// connections after 5 s). 0..10 min. Default 4 s.
  Duration idle_reuse_limit_ns = std::chrono::seconds{4};
  /// Stall detection for retry_safe requests.
  StallDetection stall{};
  /// Bounds on each response (R3), each within its range (ResponseLimits::kMin*/kMax*).
  ResponseLimits response_limits{};
  /// Most requests waiting in the pool for a connection (R3), 1..65536. Default 4096.
  std::uint32_t max_queued_requests = 4096;
  /// Trust and identity for https:// (used when the URL's scheme is https).
  TlsOptions tls{};

  /// The first invalid field, as "<field>: <reason>" (e.g. "max_connections: must be in
  /// 1..64 (got 0)"), or nullopt.
  [[nodiscard]] std::optional<std::string> validate() const;
};

/// Settings of a Pool: the server and how to use connections to it.
struct PoolOptions {
  std::string host;              ///< server host name or address (for the adapter's connect and messages)
  std::uint16_t port = 80;       ///< server TCP port, 1..65535
  TransportOptions transport{};  ///< connection mode, timeouts, limits
  /// TLS for every connection (https://), or null for plaintext. Made from
  /// transport.tls by the session (TlsContext::create reads the trust store).
  std::shared_ptr<const TlsContext> tls;

  /// The first invalid field ("host: ...", "port: ...", or transport's), or nullopt.
  [[nodiscard]] std::optional<std::string> validate() const;
};

/// Names one socket's life. Never reused within a Pool.
struct ConnectionId {
  std::uint64_t value = 0;  ///< 1, 2, 3, ... in Connect order
  friend constexpr auto operator<=>(ConnectionId, ConnectionId) = default;
};

/// Open a TCP connection to options().host:port and report on_connected or
/// on_connect_failed for `id`.
struct Connect {
  ConnectionId id;  ///< the connection to open
};
/// Connection `id` has bytes to write: call take_write(id) (when no write is in progress
/// on it) and report on_written. After a write that wrote less than take_write handed
/// out — a full send buffer, or EAGAIN reported as 0 bytes — no Write comes for the rest:
/// wait until the socket is writable (POLLOUT), then call take_write again. (Were the
/// Write repeated at once, a loop that drains commands until none is left would spin on
/// EAGAIN and never reach its timer.)
struct Write {
  ConnectionId id;  ///< the connection with bytes to write
};
/// Close the socket of `id`. Events for it are ignored from now on, except the end of a
/// write in progress (on_written, with the bytes written, 0 when it failed), which the
/// pool waits for before it frees the bytes of that write.
struct Close {
  ConnectionId id;  ///< the connection to close
};
/// One socket command.
using IoCommand = std::variant<Connect, Write, Close>;

/// Counters since the pool was created.
struct PoolStats {
  std::uint64_t connections_opened = 0;  ///< on_connected reports (reconnects included)
  std::uint64_t connect_failures = 0;    ///< on_connect_failed reports and connect timeouts
  std::uint64_t requests_written = 0;    ///< requests whose bytes were all written
  std::uint64_t responses = 0;           ///< complete responses delivered
  std::uint64_t transport_failures = 0;  ///< requests failed by the transport (E2)
  std::uint64_t stalls = 0;              ///< connections replaced by stall detection
  /// Requests queued again, first and in order, after their connection ended without
  /// the server processing them (a response that closed it with requests behind, an end
  /// of file before they were written): Pool::kMaxRequeues at most per request.
  std::uint64_t requeued = 0;
};

/// The connections to one server (see the file comment). Not thread-safe: one driver
/// owns it.
class Pool {
 public:
  /// A pool with validated options, or the first invalid field.
  static tl::expected<Pool, std::string> create(PoolOptions options);
  /// A pool to `host:port`, over TLS when `tls` (an https:// URL): the TLS context is made
  /// from transport.tls here (reading the trust store). Errors name the field
  /// ("max_connections: ...", "tls.ca_file: cannot load ...").
  static tl::expected<Pool, std::string> create(std::string host, std::uint16_t port, bool tls,
                                                TransportOptions transport);

  Pool(Pool&&) noexcept = default;             ///< movable
  Pool& operator=(Pool&&) noexcept = default;  ///< movable
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() = default;

  // Every input takes `now` on a monotonic clock. A `now` earlier than one an input
  // already brought is read as that latest instant: a clock stepped back never makes a
  // request look older than it is (no spurious stall or request timeout, D3).

  // ---- requests -----------------------------------------------------------------------
  /// Queues a request (ids are the caller's). After close(), or with max_queued_requests
  /// waiting, it fails at once through poll_outcome (`closed`, or `unavailable`: definite).
  void enqueue(Instant now, Request request);
  /// Fails every request (written: connection_lost, indefinite; not written: closed,
  /// definite) and closes every connection (Close commands). Later requests fail with
  /// `closed`. Idempotent.
  void close(Instant now);

  // ---- socket events (ignored for unknown or closed ids) -------------------------------
  /// The connect of `id` succeeded.
  void on_connected(ConnectionId id, Instant now);
  /// The connect of `id` failed (`why`: e.g. "Connection refused").
  void on_connect_failed(ConnectionId id, Instant now, std::string_view why);
  /// The bytes to write on `id` now (see Connection::take_write); empty when none.
  WriteView take_write(ConnectionId id, Instant now);
  /// The write on `id` ended with `bytes` written (0 when nothing was: EAGAIN, or a
  /// failure, which on_error then reports). The end of every write handed out by
  /// take_write is reported here, before any on_error it caused. Fewer bytes than handed
  /// out: the rest waits for the caller's next take_write, with no Write command (see Write).
  void on_written(ConnectionId id, Instant now, std::size_t bytes);
  /// Bytes read on `id`.
  void on_bytes(ConnectionId id, Instant now, std::span<const char> bytes);
  /// The peer closed `id` (read returned 0).
  void on_eof(ConnectionId id, Instant now);
  /// The socket of `id` failed.
  void on_error(ConnectionId id, Instant now, std::string_view why);

  // ---- time ---------------------------------------------------------------------------
  /// The earliest instant handle_timeout has work (connect, request or stall deadline).
  [[nodiscard]] std::optional<Instant> next_deadline() const;
  /// Processes the deadlines due at `now` (never early, D3).
  void handle_timeout(Instant now);

  // ---- outputs ------------------------------------------------------------------------
  /// The next socket command, or nullopt.
  std::optional<IoCommand> poll_command();
  /// The next request outcome, or nullopt. Outcomes of one connection come in request
  /// order.
  std::optional<Outcome> poll_outcome();

  // ---- queries ------------------------------------------------------------------------
  /// The validated options.
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }
  /// Counters.
  [[nodiscard]] PoolStats stats() const noexcept;
  /// The stall timeout that applies now (ns; 0 when stall detection is off).
  [[nodiscard]] Duration stall_timeout() const noexcept;
  /// Requests queued or outstanding.
  [[nodiscard]] std::size_t outstanding() const noexcept;
  /// True once close() was called.
  [[nodiscard]] bool closed() const noexcept { return closed_; }
  /// True when `id` names a connection that may still report events (open, connecting,
  /// or closed with a write in progress).
  [[nodiscard]] bool knows(ConnectionId id) const noexcept;
  /// True while a request handed to a write on `id` has no response yet (see
  /// Connection::awaiting_response); false for unknown ids. Before carrying out a Write
  /// on a connection that awaits nothing, an adapter looks whether the peer already
  /// closed the socket (recv with MSG_PEEK returns 0): a server may close an idle
  /// keep-alive connection at any time (RFC 9112 section 9.3.1), and a request written
  /// after its FIN is lost yet would count as possibly applied. Then it reports on_eof
  /// instead of writing, and the requests, never written, are queued again for a new
  /// connection.
  [[nodiscard]] bool awaiting_response(ConnectionId id) const noexcept;

  /// How often one request is queued again after its connection ended without the
  /// server processing it (PoolStats::requeued); once more and it fails with that
  /// connection's error (connection_lost, definite, retryable: the caller's retry policy
  /// takes over), so a server that closes every connection before answering is no loop.
  static constexpr std::uint32_t kMaxRequeues = 3;
  /// Stall detection: responses in a row without a stall that take one doubling of the
  /// stall timeout off (see the file comment).
  static constexpr std::uint32_t kStallHoldResponses = 16;
  /// Stall detection: the most doublings held once a response came (64x: a base of 5 ms
  /// waits up to 320 ms), so frequent swallowed requests cannot grow the stall timeout to
  /// the request timeout, while answers up to 64x slower than measured get measured.
  static constexpr std::uint32_t kStallHeldDoublings = 6;
  /// Stall detection: the longest stall timeout that held doublings make (1 s): answers
  /// slower than that and than twice the measured waits are cut and resent rather than
  /// waited for, so that a swallowed request costs at most about this (twice it right
  /// after a stall) instead of 64x a wait that is already long.
  static constexpr Duration kStallHeldTimeoutNs = std::chrono::seconds{1};

 private:
  explicit Pool(PoolOptions options) noexcept;
  /// The stall timeout without its doublings: twice the longest measured wait (at least
  /// stall.min_ns), or stall.initial_ns before any.
  [[nodiscard]] Duration undoubled_stall_timeout() const noexcept;
  struct Slot {
    ConnectionId id;
    Connection connection;
    bool close_sent = false;         ///< the Close command was emitted
    bool write_pending = false;      ///< a Write command was emitted and not yet taken
    std::unique_ptr<TlsEngine> tls;  ///< https://: the TLS session under the connection
    std::string cipher;              ///< ciphertext not yet written to the socket
    std::size_t cipher_handed = 0;   ///< bytes of it handed to the write in progress
    bool tls_data_seen = false;      ///< the server sent application data (it accepted the session)
    std::size_t handed_bytes = 0;    ///< what the write in progress was handed (take_write)
    /// The last write wrote less than it was handed (a full send buffer): the caller
    /// writes the rest when the socket is writable; no Write command until then.
    bool write_short = false;
    [[nodiscard]] bool write_in_progress() const noexcept {
      return tls ? cipher_handed > 0 : connection.write_in_progress();
    }
  };
  Slot* find(ConnectionId id) noexcept;
  [[nodiscard]] const Slot* find(ConnectionId id) const noexcept;
  Slot& open_connection(Instant now);
  void dispatch(Instant now);
  void after_event(Slot& slot, Connection::State before);
  void sweep();
  void tls_pump(Slot& slot, Instant now);
  /// The frame of a socket event on connection `id` (pool_socket_events.cpp): `now`
  /// observed, nothing for an unknown id, else `event(slot, now)`, then after_event with
  /// the state before it, dispatch and sweep.
  template <class Event>
  void on_slot_event(ConnectionId id, Instant now, Event&& event);
  void note_sample(Duration wait);
  [[nodiscard]] std::size_t live_connections() const noexcept;

  PoolOptions options_;
  std::deque<Slot> slots_;  ///< at most max_connections live, plus closed ones a write still uses
  std::deque<Request> queue_;
  std::deque<IoCommand> commands_;
  std::deque<Outcome> outcomes_;
  std::uint64_t next_connection_id_ = 1;
  bool closed_ = false;
  bool connects_paused_ = false;  ///< a connect failed: none until a new request or a success
  // Stall estimate: the longest head-of-line wait over a sliding window of two buckets.
  static constexpr std::uint32_t kWaitBucket = 128;  ///< samples per bucket
  bool have_sample_ = false;
  Duration wait_max_current_{0};   ///< longest wait in the bucket being filled
  Duration wait_max_previous_{0};  ///< longest wait in the bucket before it
  std::uint32_t bucket_samples_ = 0;
  std::uint32_t stall_backoff_ = 0;          ///< doublings of the stall timeout in use
  std::uint32_t responses_since_stall_ = 0;  ///< responses since the last stall or doubling taken off
  PoolStats dropped_stats_{};                ///< request counters of connections already dropped
  std::uint64_t connections_opened_ = 0;
  std::uint64_t connect_failures_ = 0;
  std::uint64_t stalls_ = 0;
  std::uint64_t requeued_ = 0;
  LatestInstant latest_now_;  ///< the latest `now` of any input (time never goes backwards here)
};

}  // namespace prodsm::http
