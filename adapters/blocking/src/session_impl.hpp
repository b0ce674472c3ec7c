// SPDX-License-Identifier: Apache-2.0
#pragma once
// The blocking session's I/O thread: what a producer attached to it needs (a deadline
// the thread keeps, a wake-up) and the thread's own state. Private to the adapter.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "prodsm/blocking/session.hpp"
#include "prodsm/detail/pool_exchanges.hpp"
#include "prodsm/detail/resolution.hpp"

struct addrinfo;

namespace prodsm::blocking {

/// Something whose deadline the session's I/O thread keeps: an attached producer.
/// deadline() and on_deadline() are called on the I/O thread, with no session lock held.
class Participant {
 public:
  virtual ~Participant() = default;
  /// The earliest instant on_deadline has work, or nullopt.
  virtual std::optional<Instant> deadline() = 0;
  /// The deadline is due at `now` (never called early, D3).
  virtual void on_deadline(Instant now) = 0;
};

/// One nonblocking socket of the pool's connection `id`.
struct Socket {
  int fd = -1;
  bool resolving = false;  ///< waits for the session's Resolution (no descriptor yet)
  bool connecting = false;
  bool write_wanted = false;   ///< the pool has bytes for it
  bool write_blocked = false;  ///< the last write filled the send buffer: wait for POLLOUT
  std::size_t address_index = 0;
};

/// The pool with its request bookkeeping (prodsm::detail::PoolExchanges: the pool and the
/// validated options; the I/O thread's own but for stats()), and the thread's sockets.
struct Session::Impl : prodsm::detail::PoolExchanges, std::enable_shared_from_this<Session::Impl> {
  Impl(http::Pool pool, int wake_fd, SessionOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // ---- any thread ---------------------------------------------------------------------
  void exchange(http::Request request, ExchangeHandler done);
  void close();
  void join();
  void attach(std::weak_ptr<Participant> participant);
  /// Makes the I/O thread run another turn now (participants' deadlines included).
  void wake();
  [[nodiscard]] bool on_io_thread() const noexcept;

  // ---- the I/O thread -------------------------------------------------------------------
  void run();
  void take_inbox(Instant now);
  void drive(Instant now);
  void connect(http::ConnectionId id, Instant now);
  void take_resolution(Instant now);
  void connect_to_addresses(std::uint64_t id, Socket& s, Instant now);
  bool try_connect_from(Socket& s, std::size_t index);
  void on_socket_events(std::uint64_t id, short revents, Instant now);
  void write_some(std::uint64_t id, Socket& s, Instant now);
  void read_some(std::uint64_t id, Socket& s, Instant now);
  void close_socket(std::uint64_t id);
  std::optional<Instant> run_participants(Instant now);

  const int wake_fd;

  std::mutex mu;  // guards the fields below it up to the I/O thread's own
  std::vector<std::pair<http::Request, ExchangeHandler>> inbox;
  std::vector<std::weak_ptr<Participant>> participants;
  bool closing = false;
  std::thread thread;
  std::thread::id thread_id;
  std::atomic<bool> wake_pending{false};

  // The I/O thread's own (no lock), beside the pool.
  std::map<std::uint64_t, Socket> sockets;
  std::shared_ptr<addrinfo> addresses;                     ///< resolved once, dropped after a failed connect
  std::shared_ptr<prodsm::detail::Resolution> resolution;  ///< running while `addresses` is wanted
};

}  // namespace prodsm::blocking
