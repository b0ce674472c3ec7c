// SPDX-License-Identifier: Apache-2.0
// The blocking producer's connection: nonblocking connect/send/recv on one socket,
// pipelined requests, responses matched in order, transport failures classified (E2, E4).
#include "connection.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace prodsm::blocking::detail {
namespace {

Error transport_error(ErrorCode code, Certainty certainty, std::string message) {
  return make_error(code, certainty, code != ErrorCode::closed && code != ErrorCode::protocol_error,
                    std::move(message));
}

std::string errno_text(int err) {
  return std::strerror(err);
}

}  // namespace

Connection::Connection(ConnectionOptions options) : options_{std::move(options)}, parser_{options_.response_limits} {}

Connection::~Connection() {
  reset_socket();
}

void Connection::enqueue(Request request, Instant now) {
  if (state_ == State::connected && pending_.empty() && now - last_activity_ > options_.idle_reuse_limit_ns) {
    reset_socket();  // idle too long: the server may be closing it right now
  }
  if (pending_.empty()) parser_.reset();  // the parser expects this response next
  pending_.push_back(std::move(request));
}

void Connection::kick(Instant now) {
  if (pending_.empty()) return;
  if (state_ == State::disconnected) start_connect(now);
  if (state_ == State::connected) write_some(now);
}

pollfd Connection::poll_entry() const {
  pollfd p{fd_, 0, 0};
  if (state_ == State::connecting) {
    p.events = POLLOUT;
  } else if (state_ == State::connected) {
    // Always read: responses, and an idle close by the server (EOF).
    p.events = POLLIN;
    if (written_ < pending_.size()) p.events |= POLLOUT;
  }
  return p;
}

std::optional<Instant> Connection::deadline() const {
  if (state_ == State::connecting) return connect_deadline_;
  if (!pending_.empty() && pending_.front().write_started) return pending_.front().deadline;
  return std::nullopt;
}

void Connection::on_time(Instant now) {
  if (state_ == State::connecting && now >= connect_deadline_) {
    connect_failed("connect to " + options_.host + ":" + std::to_string(options_.port) + " timed out");
    return;
  }
  if (!pending_.empty() && pending_.front().write_started && now >= pending_.front().deadline) {
    fail_connection(
        "request timed out after " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(options_.request_timeout_ns).count()) +
        " ms");
  }
}

void Connection::on_events(short revents, Instant now) {
  if (revents == 0 || fd_ < 0) return;
  if (state_ == State::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      ::close(fd_);
      fd_ = -1;
      if (try_connect_from(address_index_ + 1, now)) return;  // the host's next address
      addresses_.reset();
      connect_failed("connect to " + options_.host + ":" + std::to_string(options_.port) +
                     " failed: " + errno_text(err));
      return;
    }
    on_connected(now);
    return;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_some(now);
  if (state_ == State::connected && (revents & POLLOUT) != 0) write_some(now);
}

void Connection::start_connect(Instant now) {
  if (!addresses_) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const std::string port = std::to_string(options_.port);
    // Blocking resolution on the I/O thread; done once and kept until a connect fails.
    const int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &list);
    if (rc != 0 || list == nullptr) {
      connect_failed("resolving " + options_.host + " failed: " + ::gai_strerror(rc));
      return;
    }
    addresses_ = std::shared_ptr<addrinfo>(list, ::freeaddrinfo);
  }
  if (!try_connect_from(0, now)) {
    addresses_.reset();
    connect_failed("connect to " + options_.host + ":" + std::to_string(options_.port) +
                   " failed: " + errno_text(errno));
  }
}

bool Connection::try_connect_from(std::size_t index, Instant now) {
  std::size_t i = 0;
  for (addrinfo* a = addresses_.get(); a != nullptr; a = a->ai_next, ++i) {
    if (i < index) continue;
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
      fd_ = fd;
      address_index_ = i;
      state_ = State::connecting;
      connect_deadline_ = saturating_add(now, options_.connect_timeout_ns);
      return true;
    }
    const int err = errno;
    ::close(fd);
    errno = err;
  }
  return false;
}

void Connection::on_connected(Instant now) {
  state_ = State::connected;
  ++stats_.connections_opened;
  const int one = 1;
  (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  last_activity_ = now;
  parser_.reset();
  write_some(now);
}

/// Nothing was written: every pending request fails definite (retryable).
void Connection::connect_failed(const std::string& why) {
  reset_socket();
  auto pending = std::exchange(pending_, {});
  written_ = 0;
  stats_.transport_failures += pending.size();
  for (auto& r : pending) {
    finish(std::move(r), tl::unexpected(transport_error(ErrorCode::unavailable, Certainty::definite, why)));
  }
}

void Connection::write_some(Instant now) {
  while (fd_ >= 0 && written_ < pending_.size()) {
    Request& r = pending_[written_];
    if (!r.write_started) {
      r.write_started = true;
      r.deadline = saturating_add(now, options_.request_timeout_ns);
    }
    const std::size_t left = r.bytes.size() - write_offset_;
    const ssize_t n = ::send(fd_, r.bytes.data() + write_offset_, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // poll for POLLOUT
      if (errno == EINTR) continue;
      fail_connection("writing the request failed: " + errno_text(errno));
      return;
    }
    write_offset_ += static_cast<std::size_t>(n);
    if (write_offset_ == r.bytes.size()) {
      write_offset_ = 0;
      ++written_;
      ++stats_.requests_written;
      last_activity_ = now;
    }
  }
}

void Connection::read_some(Instant now) {
  const ssize_t n = ::recv(fd_, read_buffer_.data(), read_buffer_.size(), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    const bool eof = n == 0;
    const std::string why =
        eof ? "the server closed the connection" : "reading the response failed: " + errno_text(errno);
    if (eof && !pending_.empty() && written_ > 0) {
      parser_.finish_eof();  // an EOF-delimited body ends here
      if (parser_.state() == ds::ResponseParser::State::complete) {
        deliver_front(parser_.take_response(), now);
      }
    }
    if (pending_.empty()) {
      reset_socket();  // idle close by the server: nothing lost
      return;
    }
    fail_connection(why);
    return;
  }
  last_activity_ = now;
  std::size_t offset = 0;
  const auto size = static_cast<std::size_t>(n);
  while (offset < size) {
    if (pending_.empty() || written_ == 0) {
      fail_connection("the server sent bytes with no request outstanding");
      return;
    }
    offset += parser_.feed(std::span<const char>(read_buffer_.data() + offset, size - offset));
    if (parser_.state() == ds::ResponseParser::State::failed) {
      Request r = std::move(pending_.front());
      pending_.pop_front();
      --written_;
      const Error why = parser_.error();
      ++stats_.transport_failures;
      finish(std::move(r), tl::unexpected(why));
      fail_connection("the connection is unusable after a malformed response");
      return;
    }
    if (parser_.state() != ds::ResponseParser::State::complete) break;
    ds::Response response = parser_.take_response();
    const bool keep = response.keep_alive;
    deliver_front(std::move(response), now);
    if (!keep) {
      if (pending_.empty()) {
        reset_socket();
      } else {
        fail_connection("the server closed the connection after a response");
      }
      return;
    }
  }
}

void Connection::deliver_front(ds::Response response, Instant now) {
  Request r = std::move(pending_.front());
  pending_.pop_front();
  --written_;
  ++stats_.responses;
  parser_.reset();
  last_activity_ = now;
  finish(std::move(r), std::move(response));
}

/// Requests with bytes on the wire may have been applied: indefinite. The others stay
/// queued and go out on a new connection (kick).
void Connection::fail_connection(const std::string& why) {
  reset_socket();
  while (!pending_.empty() && pending_.front().write_started) {
    ++stats_.transport_failures;
    finish(std::move(pending_.front()),
           tl::unexpected(transport_error(ErrorCode::connection_lost, Certainty::indefinite, why)));
    pending_.pop_front();
  }
}

void Connection::close(const std::string& why) {
  reset_socket();
  for (auto& r : std::exchange(pending_, {})) {
    Error e = r.write_started ? transport_error(ErrorCode::connection_lost, Certainty::indefinite, why)
                              : transport_error(ErrorCode::closed, Certainty::definite, why);
    finish(std::move(r), tl::unexpected(std::move(e)));
  }
}

void Connection::reset_socket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  state_ = State::disconnected;
  written_ = 0;
  write_offset_ = 0;
  parser_.reset();
}

}  // namespace prodsm::blocking::detail
