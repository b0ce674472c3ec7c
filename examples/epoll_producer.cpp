// SPDX-License-Identifier: Apache-2.0
// epoll_producer: produce lines to a Durable Streams stream from a hand-written epoll loop.
//
//   epoll_producer URL [FILE]    one record per line (newline kept); stdin without FILE
//
// No threads and no Asio. Two sans-IO objects decide everything: the producer client
// (prodsm::ds::ProducerClient: batching, sequencing, retries, ordering, classification)
// and the connection pool (prodsm::http::Pool: which request goes on which connection,
// timeouts, stall detection, how a transport failure is classified). This file only
// moves bytes and time between them and the kernel, exactly as prodsm's own adapters do.
// The whole integration contract is the drive rule, for both objects:
//
//   after every input, drain the outputs; arm one timer at the earliest next_deadline().
//
// Inputs here: a line read (submit), end of input (close), socket events (connected,
// bytes, EOF, errors), the timerfd (handle_timeout). Outputs: the client's requests (into
// the pool), the pool's socket commands (Connect, Write, Close) and outcomes (back into
// the client), the client's events (records completed, capacity, closed).
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "prodsm/ds/client.hpp"
#include "prodsm/http/pool.hpp"

namespace {

prodsm::Instant now() {
  return std::chrono::steady_clock::now();
}  // CLOCK_MONOTONIC

struct Loop {
  Loop(prodsm::ds::ProducerClient c, prodsm::http::Pool p, int in)
      : client{std::move(c)}, pool{std::move(p)}, input{in} {}

  prodsm::ds::ProducerClient client;
  prodsm::http::Pool pool;
  std::map<int, prodsm::http::ConnectionId> by_fd;  // epoll data is the fd
  std::map<std::uint64_t, int> fd_of;               // pool connection id -> socket
  std::map<std::uint64_t, bool> connecting;
  std::map<std::uint64_t, bool> write_blocked;  // the kernel's send buffer was full: wait for EPOLLOUT

  int epoll = -1;
  int timer = -1;  // timerfd: the one timer
  int input = -1;
  bool input_pollable = false;  // pipes and terminals go through epoll; regular files are always ready
  bool input_eof = false;
  bool wants_input = true;   // false after a would-block, until CapacityAvailable
  std::string input_buffer;  // bytes read, not yet submitted (at most one partial line)

  bool closed = false;
  bool ok = false;
  std::uint64_t records = 0, failed = 0;

  // ---- the drive rule ------------------------------------------------------------------
  void drive() {
    bool progress = true;
    while (progress) {
      progress = false;
      while (auto r = client.poll_request()) {  // the client's requests go to the pool (id = tag)
        pool.enqueue(now(), std::move(r->request));
      }
      while (auto command = pool.poll_command()) {  // the pool's socket commands
        progress = true;
        if (auto* c = std::get_if<prodsm::http::Connect>(&*command)) open_socket(c->id);
        if (auto* w = std::get_if<prodsm::http::Write>(&*command)) write_requests(w->id);
        if (auto* x = std::get_if<prodsm::http::Close>(&*command)) close_socket(x->id);
      }
      while (auto outcome = pool.poll_outcome()) {  // responses back to the client (S7 there)
        progress = true;
        client.handle_outcome(now(), outcome->id.value, std::move(outcome->result));
      }
      while (auto event = client.poll_event()) {
        progress = true;
        if (auto* done = std::get_if<prodsm::ds::RecordsCompleted>(&*event)) {
          const std::uint64_t n = done->last.value - done->first.value + 1;
          (done->result ? records : failed) += n;
          if (!done->result) std::fprintf(stderr, "records failed: %s\n", done->result.error().describe().c_str());
          client.on_delivered(now(), n);  // nothing waits for a callback here
        } else if (auto* end = std::get_if<prodsm::Closed>(&*event)) {
          closed = true;
          ok = end->result.has_value();
        } else if (std::holds_alternative<prodsm::CapacityAvailable>(*event)) {
          wants_input = true;  // R1: submit_lines() retries the line that would have blocked
        }
      }
    }
    arm_timer();
    update_input();
  }

  void arm_timer() {
    std::optional<prodsm::Instant> deadline = client.next_deadline();
    if (auto d = pool.next_deadline()) deadline = deadline ? std::min(*deadline, *d) : *d;
    itimerspec spec{};  // all zero: disarmed
    if (deadline) {
      const auto ns = std::max<std::int64_t>(deadline->time_since_epoch().count(), 1);
      spec.it_value.tv_sec = ns / 1'000'000'000;
      spec.it_value.tv_nsec = ns % 1'000'000'000;
    }
    timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  /// Level-triggered epoll: stop watching the input while the producer is full (or done).
  void update_input() {
    if (!input_pollable) return;
    epoll_event ev{};
    ev.events = wants_input && !input_eof ? static_cast<std::uint32_t>(EPOLLIN) : 0U;
    ev.data.fd = input;
    epoll_ctl(epoll, EPOLL_CTL_MOD, input, &ev);
  }

  // ---- input: one record per line --------------------------------------------------------
  void read_input() {
    if (wants_input && !input_eof) {
      char chunk[64 * 1024];
      const ssize_t n = ::read(input, chunk, sizeof chunk);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // epoll says when there is more
      if (n > 0) input_buffer.append(chunk, static_cast<std::size_t>(n));
      if (n <= 0) input_eof = true;  // (a read error ends the input too)
    }
    submit_lines();
  }

  /// Submits every complete line buffered (and at the end a last line without newline);
  /// stops at a would-block and keeps the rest for CapacityAvailable (R1).
  void submit_lines() {
    std::size_t start = 0;
    while (wants_input && start < input_buffer.size()) {
      std::size_t end = input_buffer.find('\n', start);
      if (end == std::string::npos && !input_eof) break;  // wait for the rest of the line
      end = end == std::string::npos ? input_buffer.size() : end + 1;
      auto r = client.submit(now(), std::string_view(input_buffer).substr(start, end - start));
      if (!r && r.error().reason == prodsm::RejectReason::would_block) {
        wants_input = false;  // the core sealed the partial batch (R2); retry on CapacityAvailable
        break;
      }
      if (!r) std::fprintf(stderr, "record refused: %s\n", std::string(r.error().detail).c_str());
      start = end;
    }
    input_buffer.erase(0, start);
    if (input_eof && input_buffer.empty()) client.close(now());  // flush + drain; Closed ends the loop (C1)
    drive();
  }

  // ---- sockets: the pool's commands, carried out ----------------------------------------------
  void watch(int fd, std::uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll, op, fd, &ev);
  }

  void open_socket(prodsm::http::ConnectionId id) {
    const auto& o = pool.options();
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* addr = nullptr;
    if (getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &addr) != 0) {
      pool.on_connect_failed(id, now(), "cannot resolve " + o.host);
      return;
    }
    const int fd = ::socket(addr->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int rc = fd < 0 ? -1 : ::connect(fd, addr->ai_addr, addr->ai_addrlen);
    freeaddrinfo(addr);
    if (rc != 0 && errno != EINPROGRESS) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      pool.on_connect_failed(id, now(), why);
      return;
    }
    by_fd[fd] = id;
    fd_of[id.value] = fd;
    connecting[id.value] = true;
    watch(fd, EPOLLOUT, EPOLL_CTL_ADD);  // writable = connected (or failed: SO_ERROR says)
  }

  void close_socket(prodsm::http::ConnectionId id) {
    auto it = fd_of.find(id.value);
    if (it == fd_of.end()) return;
    ::close(it->second);  // also leaves the epoll set
    by_fd.erase(it->second);
    connecting.erase(id.value);
    write_blocked.erase(id.value);
    fd_of.erase(it);
  }

  /// Writes what the pool hands out for `id`. When the kernel takes less (its send buffer
  /// is full), the rest waits for EPOLLOUT: the pool sends no Write for it (http::Write),
  /// and writing again before the socket is writable would only spin on EAGAIN.
  void write_requests(prodsm::http::ConnectionId id) {
    auto it = fd_of.find(id.value);
    if (it == fd_of.end() || connecting[id.value] || write_blocked[id.value]) return;
    if (!pool.awaiting_response(id)) {
      // Nothing is expected on this connection: an end of file already in the socket means
      // the server closed it while idle. Say so instead of writing into it (the request
      // would be lost and count as possibly applied); the pool sends it on a new connection.
      char byte = 0;
      if (::recv(it->second, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
        pool.on_eof(id, now());
        return;
      }
    }
    const prodsm::http::WriteView view = pool.take_write(id, now());
    if (view.empty()) return;
    std::array<iovec, prodsm::http::WriteView::kMaxParts> iov{};
    for (std::size_t i = 0; i < view.count; ++i)
      iov[i] = {const_cast<char*>(view.parts[i].data()), view.parts[i].size()};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = view.count;
    ssize_t n = -1;
    do {  // MSG_NOSIGNAL: a peer that closed is an EPIPE to report, not a SIGPIPE that kills
      n = ::sendmsg(it->second, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    const int err = errno;
    pool.on_written(id, now(), n > 0 ? static_cast<std::size_t>(n) : 0);  // 0: nothing written
    if (n < 0 && err != EAGAIN) pool.on_error(id, now(), std::string("sendmsg: ") + std::strerror(err));
    if ((n < 0 && err == EAGAIN) || (n >= 0 && static_cast<std::size_t>(n) < view.bytes)) {
      write_blocked[id.value] = true;
      watch(it->second, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);  // the rest when writable
    }
  }

  void on_socket(int fd, std::uint32_t events) {
    const prodsm::http::ConnectionId id = by_fd.at(fd);
    if (connecting[id.value]) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        close_socket(id);
        pool.on_connect_failed(id, now(), std::strerror(err));
        return drive();
      }
      connecting[id.value] = false;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      watch(fd, EPOLLIN, EPOLL_CTL_MOD);
      pool.on_connected(id, now());
      return drive();
    }
    if ((events & EPOLLOUT) != 0) {
      watch(fd, EPOLLIN, EPOLL_CTL_MOD);
      write_blocked[id.value] = false;
      write_requests(id);  // the rest of the last write, and whatever came since
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
      char buf[64 * 1024];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) pool.on_bytes(id, now(), std::span<const char>(buf, static_cast<std::size_t>(n)));
      if (n == 0) pool.on_eof(id, now());
      if (n < 0 && errno != EAGAIN) pool.on_error(id, now(), std::strerror(errno));
    }
    drive();
  }

  // ---- the loop ------------------------------------------------------------------------------
  int run() {
    epoll = epoll_create1(EPOLL_CLOEXEC);
    timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    watch(timer, EPOLLIN, EPOLL_CTL_ADD);
    fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = input;
    input_pollable = epoll_ctl(epoll, EPOLL_CTL_ADD, input, &ev) == 0;  // EPERM for regular files

    read_input();
    while (!closed) {
      // A regular file is always readable: read it whenever the producer has room.
      const bool file_ready = !input_pollable && wants_input && !input_eof;
      epoll_event events[8];
      const int n = epoll_wait(epoll, events, 8, file_ready ? 0 : -1);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == timer) {
          std::uint64_t expirations;
          (void)!::read(timer, &expirations, sizeof expirations);
          client.handle_timeout(now());  // linger, backoff, delivery deadline
          pool.handle_timeout(now());    // connect, request and stall deadlines
          drive();
        } else if (fd == input) {
          read_input();
        } else if (by_fd.count(fd) != 0) {
          on_socket(fd, events[i].events);
        }
      }
      if (wants_input && !input_buffer.empty()) submit_lines();  // capacity came back
      if (file_ready) read_input();
    }
    pool.close(now());
    drive();
    const auto& stats = client.core().stats();
    std::fprintf(stderr, "%s: %llu records appended, %llu failed, %llu batches, %llu retries\n", ok ? "done" : "failed",
                 static_cast<unsigned long long>(records), static_cast<unsigned long long>(failed),
                 static_cast<unsigned long long>(stats.batches_sealed), static_cast<unsigned long long>(stats.retries));
    return ok ? 0 : 1;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s URL [FILE]\n", argv[0]);
    return 2;
  }
  const int input = argc == 3 ? ::open(argv[2], O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
  if (input < 0) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[2], std::strerror(errno));
    return 2;
  }
  // The idempotent producer: retries never duplicate, and records stay in order (S2, E4).
  prodsm::ds::ProducerOptions options;
  options.url = argv[1];
  options.producer.protocol.idempotent =
      prodsm::DurableStreamsIdempotentOptions{"epoll-example-" + std::to_string(::getpid()), 0, false};
  auto client = prodsm::ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) {
    std::fprintf(stderr, "bad options: %s\n", client.error().c_str());
    return 2;
  }
  auto pool = prodsm::http::Pool::create(client->url().host, client->url().port, client->url().tls, options.session);
  if (!pool) {
    std::fprintf(stderr, "bad options: %s\n", pool.error().c_str());
    return 2;
  }
  Loop loop(std::move(*client), std::move(*pool), input);
  return loop.run();
}
