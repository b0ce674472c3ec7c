// SPDX-License-Identifier: Apache-2.0
// epoll_producer: produce lines to a Durable Streams stream from a hand-written epoll loop.
//
//   epoll_producer URL [FILE]    one record per line (newline kept); stdin without FILE
//
// No threads and no Asio. The sans-IO core (prodsm::DurableStreamsProducer) decides
// everything — batching, sequencing, retries, ordering; the codec (prodsm/ds/http_codec.hpp)
// encodes requests and parses and classifies responses; this file only moves bytes and
// time. The whole integration contract is the drive rule:
//
//   after every input to the core, drain poll_action(); arm one timer at next_deadline().
//
// The inputs here: a line read (submit), end of input (close), a response or a broken
// connection (handle_ack / handle_failure), the timerfd (handle_timeout).
//
// Kept short on purpose. A production adapter (adapters/blocking/src/connection.cpp) adds
// connect and request timeouts, replaces idle connections before reuse, and resends
// requests that were never written on a new connection instead of failing them.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/durable_streams.hpp"

namespace {

using prodsm::DurableStreamsPolicy;

prodsm::Instant now() {
  return std::chrono::steady_clock::now();
}  // CLOCK_MONOTONIC

/// One request on the connection: the core's (batch, attempt), echoed back with its outcome.
struct Request {
  std::string bytes;
  std::size_t written = 0;
  prodsm::BatchId batch;
  std::uint32_t attempt = 0;
  bool sequenced = false;
};

struct Loop {
  Loop(prodsm::ds::StreamUrl u, prodsm::DurableStreamsProducer p, std::string id, int in)
      : url{std::move(u)}, producer{std::move(p)}, producer_id{std::move(id)}, input{in} {}

  prodsm::ds::StreamUrl url;
  prodsm::DurableStreamsProducer producer;
  std::string producer_id;

  int epoll = -1;
  int timer = -1;  // timerfd: the one timer, armed at producer.next_deadline()
  int input = -1;
  bool input_pollable = false;  // pipes and terminals go through epoll; regular files are always ready
  bool input_eof = false;
  bool wants_input = true;   // false after a would-block, until CapacityAvailable
  bool resume = false;       // CapacityAvailable came: submit the buffered lines again
  std::string input_buffer;  // bytes read, not yet submitted (at most one partial line)

  int sock = -1;  // one pipelined keep-alive connection
  bool connected = false;
  std::deque<Request> requests;  // in send order; responses come back in this order
  prodsm::ds::ResponseParser parser;

  bool closed = false;
  bool ok = false;
  std::uint64_t records = 0, failed = 0;

  // ---- the drive rule ------------------------------------------------------------------
  void drain() {
    while (auto action = producer.poll_action()) {
      if (auto* send = std::get_if<prodsm::SendBatch<DurableStreamsPolicy>>(&*action)) {
        // Copy the body: the core recycles its buffer once the batch completes.
        std::string bytes =
            prodsm::ds::encode_batch(url, "application/octet-stream", send->body.size(), send->stamp, producer_id, {});
        bytes.append(reinterpret_cast<const char*>(send->body.data()), send->body.size());
        requests.push_back({std::move(bytes), 0, send->batch, send->attempt, send->stamp.sequenced});
      } else if (auto* done = std::get_if<prodsm::TicketsCompleted<DurableStreamsPolicy>>(&*action)) {
        const std::uint64_t n = done->last.value - done->first.value + 1;
        (done->result ? records : failed) += n;
        if (!done->result) std::fprintf(stderr, "records failed: %s\n", done->result.error().describe().c_str());
      } else if (auto* end = std::get_if<prodsm::Closed>(&*action)) {
        closed = true;
        ok = end->result.has_value();
      } else if (std::holds_alternative<prodsm::CapacityAvailable>(*action)) {
        wants_input = resume = true;  // R1: the main loop retries the line that would have blocked
      }
    }
    arm_timer();
    update_socket();
    update_input();
  }

  /// Level-triggered epoll: stop watching the input while the producer is full (or done).
  void update_input() {
    if (!input_pollable) return;
    epoll_event ev{};
    ev.events = wants_input && !input_eof ? static_cast<std::uint32_t>(EPOLLIN) : 0U;
    ev.data.fd = input;
    epoll_ctl(epoll, EPOLL_CTL_MOD, input, &ev);
  }

  void arm_timer() {
    itimerspec spec{};  // all zero: disarmed
    if (auto deadline = producer.next_deadline()) {
      const auto ns = std::max<std::int64_t>(deadline->time_since_epoch().count(), 1);
      spec.it_value.tv_sec = ns / 1'000'000'000;
      spec.it_value.tv_nsec = ns % 1'000'000'000;
    }
    timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr);
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
      auto r = producer.submit(now(), std::string_view(input_buffer).substr(start, end - start));
      if (!r && r.error().reason == prodsm::RejectReason::would_block) {
        wants_input = false;  // the core sealed the partial batch (R2); retry on CapacityAvailable
        break;
      }
      if (!r) std::fprintf(stderr, "record refused: %s\n", std::string(r.error().detail).c_str());
      start = end;
    }
    input_buffer.erase(0, start);
    if (input_eof && input_buffer.empty()) {
      (void)producer.close(now());  // flush + drain; Closed ends the loop (C1)
    }
    drain();
  }

  // ---- the connection ------------------------------------------------------------------------
  void update_socket() {
    if (sock < 0 && !requests.empty()) connect_socket();
    if (sock < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (!connected || (!requests.empty() && requests.back().written < requests.back().bytes.size())) {
      ev.events |= EPOLLOUT;
    }
    ev.data.fd = sock;
    epoll_ctl(epoll, EPOLL_CTL_MOD, sock, &ev);
  }

  void connect_socket() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* addr = nullptr;
    if (getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &addr) != 0) {
      fail_connection("cannot resolve " + url.host);
      return;
    }
    sock = ::socket(addr->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int rc = ::connect(sock, addr->ai_addr, addr->ai_addrlen);
    freeaddrinfo(addr);
    if (rc != 0 && errno != EINPROGRESS) {
      fail_connection(std::string("connect: ") + std::strerror(errno));
      return;
    }
    connected = false;
    parser.reset();
    epoll_event ev{};
    ev.events = EPOLLOUT;  // writable = connected (or failed: SO_ERROR says)
    ev.data.fd = sock;
    epoll_ctl(epoll, EPOLL_CTL_ADD, sock, &ev);
  }

  void on_socket(std::uint32_t events) {
    if (!connected) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(sock, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return fail_connection(std::string("connect: ") + std::strerror(err));
      connected = true;
      const int one = 1;
      setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) read_responses();
    if (sock >= 0 && (events & EPOLLOUT) != 0) write_requests();
    drain();
  }

  void write_requests() {
    for (Request& r : requests) {  // pipelined: back to back, in seal order
      while (r.written < r.bytes.size()) {
        const ssize_t n = ::send(sock, r.bytes.data() + r.written, r.bytes.size() - r.written, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) return;
        if (n < 0) return fail_connection(std::string("send: ") + std::strerror(errno));
        r.written += static_cast<std::size_t>(n);
      }
    }
  }

  void read_responses() {
    char buf[64 * 1024];
    const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) return fail_connection(n == 0 ? "the server closed the connection" : std::strerror(errno));
    std::span<const char> bytes(buf, static_cast<std::size_t>(n));
    while (!bytes.empty() && !requests.empty()) {
      bytes = bytes.subspan(parser.feed(bytes));
      if (parser.state() == prodsm::ds::ResponseParser::State::incomplete) return;
      Request r = std::move(requests.front());
      requests.pop_front();
      if (parser.state() == prodsm::ds::ResponseParser::State::failed) {
        producer.handle_failure(now(), r.batch, r.attempt, parser.error());  // protocol_error
        return fail_connection("malformed response");
      }
      // S7: classified by status and headers, then handed to the core.
      auto outcome = prodsm::ds::classify_append(parser.take_response(), r.sequenced);
      if (outcome) {
        producer.handle_ack(now(), r.batch, r.attempt, std::move(*outcome));
      } else {
        producer.handle_failure(now(), r.batch, r.attempt, std::move(outcome.error()));
      }
      parser.reset();
      drain();  // the drive rule: after every input
    }
  }

  /// Classified like every prodsm adapter (E2): a request with bytes on the wire may have
  /// been appended (connection_lost, indefinite); one never written was not (unavailable,
  /// definite). Both are retryable; whether to retry is the core's decision (E4).
  void fail_connection(const std::string& why) {
    if (sock >= 0) ::close(sock);  // also leaves the epoll set
    sock = -1;
    connected = false;
    for (Request& r : std::exchange(requests, {})) {
      const bool on_wire = r.written > 0;
      producer.handle_failure(
          now(), r.batch, r.attempt,
          prodsm::make_error(on_wire ? prodsm::ErrorCode::connection_lost : prodsm::ErrorCode::unavailable,
                             on_wire ? prodsm::Certainty::indefinite : prodsm::Certainty::definite, true, why));
    }
  }

  // ---- the loop ------------------------------------------------------------------------------
  int run() {
    epoll = epoll_create1(EPOLL_CLOEXEC);
    timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = timer;
    epoll_ctl(epoll, EPOLL_CTL_ADD, timer, &ev);
    ev.data.fd = input;
    fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK);
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
          producer.handle_timeout(now());  // linger, backoff, delivery deadline
          drain();
        } else if (fd == sock) {
          on_socket(events[i].events);
        } else if (fd == input) {
          read_input();
        }
      }
      if (resume) {
        resume = false;
        submit_lines();
      }
      if (file_ready) read_input();
    }
    if (sock >= 0) ::close(sock);
    std::fprintf(stderr, "%s: %llu records appended, %llu failed, %llu batches, %llu retries\n", ok ? "done" : "failed",
                 static_cast<unsigned long long>(records), static_cast<unsigned long long>(failed),
                 static_cast<unsigned long long>(producer.stats().batches_sealed),
                 static_cast<unsigned long long>(producer.stats().retries));
    return ok ? 0 : 1;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s URL [FILE]\n", argv[0]);
    return 2;
  }
  auto url = prodsm::ds::StreamUrl::parse(argv[1]);
  if (!url) {
    std::fprintf(stderr, "bad URL: %s\n", url.error().c_str());
    return 2;
  }
  const int input = argc == 3 ? ::open(argv[2], O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
  if (input < 0) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[2], std::strerror(errno));
    return 2;
  }
  // The idempotent producer: retries never duplicate, and records stay in order (S2, E4).
  const std::string producer_id = "epoll-example-" + std::to_string(::getpid());
  prodsm::DurableStreamsConfig config;
  config.protocol.idempotent = prodsm::DurableStreamsIdempotentOptions{producer_id, 0, false};
  auto producer = prodsm::DurableStreamsProducer::create(config);
  if (!producer) {
    std::fprintf(stderr, "bad config: %s\n", producer.error().message().c_str());
    return 2;
  }
  Loop loop(*url, std::move(*producer), producer_id, input);
  return loop.run();
}
