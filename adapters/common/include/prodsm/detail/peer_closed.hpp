// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file peer_closed.hpp
/// Internal: the look both adapters take at a socket before writing on a connection that
/// awaits no response (http::Pool::awaiting_response is false): has the server already
/// closed it? A server or proxy may close an idle keep-alive connection at any time (RFC
/// 9112 section 9.3.1); its FIN may have arrived while the next request was being made.
/// Written after the FIN, the request is lost, and since its bytes were handed to the
/// socket it would count as possibly applied (indefinite: a plain append is then never
/// resent). Seen first, the end of file is reported instead (Pool::on_eof): the request,
/// never written, is queued again and goes out on a new connection. What remains is the
/// FIN that arrives between this look and the write (microseconds, not the length of a
/// queue of handlers). Not part of the public API.

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "prodsm/http/pool.hpp"

namespace prodsm::detail {

/// What a socket's receive side says (recv with MSG_PEEK | MSG_DONTWAIT: nothing is
/// consumed, nothing blocks).
enum class PeerState : unsigned char {
  open,    ///< bytes waiting, or nothing yet (EAGAIN): writing may go ahead
  closed,  ///< end of file: the peer closed the connection
  failed,  ///< the socket failed (ECONNRESET, ...): `error` holds errno
};

/// Looks at `fd`'s receive side. `error`: errno when failed.
inline PeerState peek_peer(int fd, int& error) noexcept {
  char byte = 0;
  const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeerState::open;
  if (n == 0) return PeerState::closed;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return PeerState::open;
  error = errno;
  return PeerState::failed;
}

/// Before carrying out a Write on `id` (socket `fd`): when the connection awaits no
/// response and the peer already closed the socket, or it failed, reports that to the
/// pool (on_eof, or on_error naming errno) and returns true — the caller writes nothing.
/// False: write as usual.
inline bool report_peer_closed_before_write(http::Pool& pool, http::ConnectionId id, int fd, Instant now) {
  if (pool.awaiting_response(id)) return false;
  int error = 0;
  switch (peek_peer(fd, error)) {
    case PeerState::open: return false;
    case PeerState::closed: pool.on_eof(id, now); return true;
    case PeerState::failed:
      pool.on_error(id, now,
                    "the connection failed before the request was written: " + std::string(std::strerror(error)));
      return true;
  }
  return false;
}

}  // namespace prodsm::detail
