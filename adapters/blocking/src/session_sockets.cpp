// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Session's socket work on the I/O thread: connecting once the host is
// resolved (off this thread: prodsm/detail/resolution.hpp), to each of its addresses in
// turn, writing what the pool has to send with sendmsg(2), reading what arrives, and
// reporting each outcome to the http::Pool, which decides what it means. The run loop
// that polls these sockets is in session.cpp.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "prodsm/detail/peer_closed.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

/// Read buffer of the I/O thread (one thread per session, so one buffer per thread).
thread_local std::array<char, 64 * 1024> tls_read_buffer;

}  // namespace

void Session::Impl::connect(http::ConnectionId id, Instant now) {
  Socket& s = sockets[id.value];
  if (addresses) {
    connect_to_addresses(id.value, s, now);
    return;
  }
  // Resolved once (off this thread) and kept until a connect fails; the connection waits,
  // bounded by the pool's connect timeout.
  s.resolving = true;
  if (resolution) return;
  const http::PoolOptions& o = pool.options();
  auto started = prodsm::detail::Resolution::start(o.host, o.port, wake_fd);
  if (!started) {
    sockets.erase(id.value);
    pool.on_connect_failed(id, now, started.error());
    return;
  }
  resolution = std::move(*started);
}

/// The resolution finished: every connection waiting for it connects, or fails with it.
void Session::Impl::take_resolution(Instant now) {
  if (!resolution) return;
  auto result = resolution->result();
  if (!result) return;
  resolution.reset();
  if (*result) addresses = **result;
  std::vector<std::uint64_t> waiting;
  for (const auto& [id, s] : sockets) {
    if (s.resolving) waiting.push_back(id);
  }
  for (const std::uint64_t id : waiting) {
    auto it = sockets.find(id);
    if (it == sockets.end()) continue;
    it->second.resolving = false;
    if (*result) {
      connect_to_addresses(id, it->second, now);
    } else {
      sockets.erase(it);
      pool.on_connect_failed(http::ConnectionId{id}, now, result->error());
    }
  }
}

/// Starts connecting `s` (connection `id`) to the resolved addresses.
void Session::Impl::connect_to_addresses(std::uint64_t id, Socket& s, Instant now) {
  if (!try_connect_from(s, 0)) {
    const int err = errno;
    addresses.reset();
    sockets.erase(id);
    pool.on_connect_failed(http::ConnectionId{id}, now, errno_text(err));
  }
}

/// Starts a nonblocking connect to the host's address `index` or a later one; false
/// when every address failed at once (errno says why).
bool Session::Impl::try_connect_from(Socket& s, std::size_t index) {
  std::size_t i = 0;
  int err = ECONNREFUSED;
  for (addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next, ++i) {
    if (i < index) continue;
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
      s.fd = fd;
      s.connecting = true;
      s.address_index = i;
      return true;
    }
    err = errno;
    ::close(fd);
  }
  errno = err;
  return false;
}

void Session::Impl::close_socket(std::uint64_t id) {
  auto it = sockets.find(id);
  if (it == sockets.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  sockets.erase(it);
}

void Session::Impl::write_some(std::uint64_t id, Socket& s, Instant now) {
  const http::ConnectionId cid{id};
  if (prodsm::detail::report_peer_closed_before_write(pool, cid, s.fd, now)) {
    s.write_wanted = false;  // closed by the server while idle: reported instead of written into
    return;
  }
  const http::WriteView view = pool.take_write(cid, now);
  if (view.empty()) {
    s.write_wanted = false;
    return;
  }
  std::array<iovec, http::WriteView::kMaxParts> iov{};
  for (std::size_t i = 0; i < view.count; ++i) {
    iov[i].iov_base = const_cast<char*>(view.parts[i].data());
    iov[i].iov_len = view.parts[i].size();
  }
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = view.count;
  ssize_t n = -1;
  do {
    n = ::sendmsg(s.fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int err = errno;
    pool.on_written(cid, now, 0);
    if (err == EAGAIN || err == EWOULDBLOCK) {
      s.write_blocked = true;  // poll for POLLOUT
      return;
    }
    pool.on_error(cid, now, "writing the request failed: " + errno_text(err));
    return;
  }
  pool.on_written(cid, now, static_cast<std::size_t>(n));
  if (static_cast<std::size_t>(n) < view.bytes) s.write_blocked = true;  // the send buffer is full
}

void Session::Impl::read_some(std::uint64_t id, Socket& s, Instant now) {
  const http::ConnectionId cid{id};
  // Up to a few buffers per turn, so one busy connection cannot starve the others.
  for (int round = 0; round < 4; ++round) {
    const ssize_t n = ::recv(s.fd, tls_read_buffer.data(), tls_read_buffer.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      pool.on_error(cid, now, "reading the response failed: " + errno_text(errno));
      return;
    }
    if (n == 0) {
      pool.on_eof(cid, now);
      return;
    }
    pool.on_bytes(cid, now, std::span<const char>(tls_read_buffer.data(), static_cast<std::size_t>(n)));
    if (!pool.knows(cid) || sockets.find(id) == sockets.end()) return;
    if (static_cast<std::size_t>(n) < tls_read_buffer.size()) return;
  }
}

void Session::Impl::on_socket_events(std::uint64_t id, short revents, Instant now) {
  auto it = sockets.find(id);
  if (it == sockets.end() || revents == 0) return;
  Socket& s = it->second;
  const http::ConnectionId cid{id};
  if (s.connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      ::close(s.fd);
      s.fd = -1;
      if (try_connect_from(s, s.address_index + 1)) return;  // the host's next address
      addresses.reset();
      sockets.erase(it);
      pool.on_connect_failed(cid, now, errno_text(err));
      return;
    }
    s.connecting = false;
    const int one = 1;
    (void)::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pool.on_connected(cid, now);
    return;
  }
  if ((revents & POLLOUT) != 0) s.write_blocked = false;
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_some(id, s, now);
}

}  // namespace prodsm::blocking
