// SPDX-License-Identifier: Apache-2.0
// The held-Produce proxy of kafka_proxy.hpp: a poll loop over the listening socket, a
// wake-up pipe and each connection's client and upstream sockets.
#include "kafka_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace prodsm::kafka_proxy {
namespace {

constexpr std::size_t kMaxFrameBytes = 256U << 20;  ///< a frame above this breaks the connection

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "[librdkafka-driver proxy] %s\n", s.c_str());
}

}  // namespace

KafkaProxy::KafkaProxy(std::function<void(const HeldProduce&)> on_produce, std::function<void()> on_activity)
    : on_produce_{std::move(on_produce)}, on_activity_{std::move(on_activity)} {}

KafkaProxy::~KafkaProxy() {
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  for (auto& [id, c] : connections_) close_connection(c);
  connections_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

bool KafkaProxy::start(std::string* error) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0 || ::pipe(wake_pipe_) != 0) {
    if (error) *error = std::string("proxy: socket/pipe: ") + std::strerror(errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&listen_addr_), &len) != 0) {
    if (error) *error = std::string("proxy: bind/listen: ") + std::strerror(errno);
    return false;
  }
  set_nonblocking(listen_fd_);
  set_nonblocking(wake_pipe_[0]);
  set_nonblocking(wake_pipe_[1]);
  thread_ = std::thread([this] { run(); });
  return true;
}

void KafkaProxy::set_upstream(const sockaddr_in& upstream) {
  std::lock_guard lock(mu_);
  upstream_ = upstream;
}

void KafkaProxy::wake() {
  if (wake_pipe_[1] >= 0) {
    const char b = 1;
    [[maybe_unused]] auto n = ::write(wake_pipe_[1], &b, 1);
  }
}

std::size_t KafkaProxy::held() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, c] : connections_) {
    for (const auto& p : c.pending) n += p.produce && !p.response ? 1 : 0;
  }
  return n;
}

ProxyStats KafkaProxy::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool KafkaProxy::answer(std::uint64_t request_id, const Answer& a) {
  std::vector<bool> delivered;
  answer_all({{request_id, a}}, &delivered);
  return delivered.front();
}

void KafkaProxy::answer_all(const std::vector<std::pair<std::uint64_t, Answer>>& answers,
                            std::vector<bool>* delivered) {
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, a] : answers) {
      const bool ok = answer_locked(id, a);
      if (delivered) delivered->push_back(ok);
    }
  }
  wake();
}

bool KafkaProxy::answer_locked(std::uint64_t request_id, const Answer& a) {
  const auto cit = connection_of_request_.find(request_id);
  if (cit == connection_of_request_.end()) return false;
  const auto conn = connections_.find(cit->second);
  connection_of_request_.erase(cit);
  if (conn == connections_.end() || conn->second.closing) return false;
  Connection& c = conn->second;
  for (auto& p : c.pending) {
    if (!p.produce || p.request_id != request_id || p.response) continue;
    switch (a.kind) {
      case Answer::Kind::close: c.closing = true; return true;
      case Answer::Kind::malformed: {
        std::string body;  // correlation id, one topic, then nothing: cut short
        for (int shift = 24; shift >= 0; shift -= 8)
          body.push_back(static_cast<char>((p.correlation_id >> shift) & 0xff));
        body += std::string("\x00\x00\x00\x01\x00\x05", 6);
        std::string frame;
        const auto n = static_cast<std::uint32_t>(body.size());
        for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((n >> shift) & 0xff));
        p.response = frame + body;
        return true;
      }
      case Answer::Kind::ack:
      case Answer::Kind::error: {
        kafka_wire::PartitionResponse r;
        r.partition = p.partition;
        r.error_code = a.kind == Answer::Kind::ack ? kafka_wire::kErrNone : a.error_code;
        r.base_offset = a.kind == Answer::Kind::ack ? a.base_offset : -1;
        r.log_start_offset = a.kind == Answer::Kind::ack ? 0 : -1;
        p.response = kafka_wire::encode_produce_response(p.correlation_id, p.api_version, p.topic, {r});
        return true;
      }
    }
  }
  return false;
}

void KafkaProxy::close_all() {
  {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : connections_) c.closing = true;
  }
  wake();
}

void KafkaProxy::close_connection(Connection& c) {
  if (c.client >= 0) ::close(c.client);
  if (c.upstream >= 0) ::close(c.upstream);
  c.client = c.upstream = -1;
  for (const auto& p : c.pending) {
    if (p.produce) connection_of_request_.erase(p.request_id);
  }
  c.pending.clear();
}

bool KafkaProxy::read_from(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == EINTR) continue;
    return false;
  }
}

bool KafkaProxy::write_to(int fd, std::string& from) {
  while (!from.empty()) {
    const ssize_t n = ::send(fd, from.data(), from.size(), MSG_NOSIGNAL);
    if (n > 0) {
      from.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

void KafkaProxy::accept_new(std::vector<std::function<void()>>& later) {
  for (;;) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    const int up = ::socket(AF_INET, SOCK_STREAM, 0);
    if (up < 0 || ::connect(up, reinterpret_cast<const sockaddr*>(&upstream_), sizeof upstream_) != 0) {
      log_line(std::string("cannot connect to the mock broker: ") + std::strerror(errno));
      if (up >= 0) ::close(up);
      ::close(fd);
      continue;
    }
    set_nonblocking(fd);
    set_nonblocking(up);
    Connection c;
    c.id = next_connection_++;
    c.client = fd;
    c.upstream = up;
    connections_.emplace(c.id, std::move(c));
    ++stats_.connections;
    later.push_back(on_activity_);
  }
}

void KafkaProxy::handle_client_frames(Connection& c, std::vector<std::function<void()>>& later) {
  for (;;) {
    const auto size = kafka_wire::frame_size(c.client_in, kMaxFrameBytes);
    if (const auto* e = std::get_if<kafka_wire::WireError>(&size)) {
      log_line("client " + std::to_string(c.id) + ": " + e->message);
      c.closing = true;
      return;
    }
    const auto n = std::get<std::optional<std::size_t>>(size);
    if (!n) return;
    const std::string frame = c.client_in.substr(0, *n);
    c.client_in.erase(0, *n);
    const auto header = kafka_wire::parse_request_header(frame);
    if (const auto* e = std::get_if<kafka_wire::WireError>(&header)) {
      log_line("client " + std::to_string(c.id) + ": " + e->message);
      c.closing = true;
      return;
    }
    const auto h = std::get<kafka_wire::RequestHeader>(header);
    Pending p;
    p.correlation_id = h.correlation_id;
    p.api_key = h.api_key;
    p.api_version = h.api_version;
    if (h.api_key == kafka_wire::kApiProduce) {
      auto parsed = kafka_wire::parse_produce_request(frame);
      if (const auto* e = std::get_if<kafka_wire::WireError>(&parsed)) {
        // Not readable by the harness: passed to the mock so the client is not stuck.
        log_line("client " + std::to_string(c.id) + ": unreadable Produce, forwarded to the mock: " + e->message);
      } else {
        auto& req = std::get<kafka_wire::ProduceRequest>(parsed);
        p.produce = true;
        p.request_id = next_request_++;
        if (!req.topics.empty()) {
          p.topic = req.topics.front().name;
          if (!req.topics.front().partitions.empty()) p.partition = req.topics.front().partitions.front().partition;
        }
        connection_of_request_[p.request_id] = c.id;
        c.pending.push_back(p);
        HeldProduce held{p.request_id, c.id, std::move(req)};
        later.push_back([this, held = std::move(held)] { on_produce_(held); });
        continue;
      }
    }
    c.pending.push_back(p);
    c.upstream_out += frame;
  }
}

void KafkaProxy::handle_upstream_frames(Connection& c) {
  for (;;) {
    const auto size = kafka_wire::frame_size(c.upstream_in, kMaxFrameBytes);
    if (const auto* e = std::get_if<kafka_wire::WireError>(&size)) {
      log_line("upstream " + std::to_string(c.id) + ": " + e->message);
      c.closing = true;
      return;
    }
    const auto n = std::get<std::optional<std::size_t>>(size);
    if (!n) return;
    std::string frame = c.upstream_in.substr(0, *n);
    c.upstream_in.erase(0, *n);
    const auto id = kafka_wire::parse_response_correlation_id(frame);
    bool matched = false;
    if (const auto* cid = std::get_if<std::int32_t>(&id)) {
      for (auto& p : c.pending) {
        if (!p.produce && !p.response && p.correlation_id == *cid) {
          p.response = std::move(frame);
          matched = true;
          break;
        }
      }
    }
    if (!matched) log_line("upstream " + std::to_string(c.id) + ": a response matching no forwarded request, dropped");
  }
}

void KafkaProxy::release_responses(Connection& c) {
  while (!c.pending.empty() && c.pending.front().response) {
    c.client_out += *c.pending.front().response;
    ++stats_.responses_by_api[c.pending.front().api_key];
    c.pending.pop_front();
  }
}

void KafkaProxy::run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<std::uint64_t, bool>> owners;  // connection, is_client
  while (!stop_) {
    fds.clear();
    owners.clear();
    {
      std::lock_guard lock(mu_);
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({wake_pipe_[0], POLLIN, 0});
      for (auto& [id, c] : connections_) {
        if (c.closing) continue;
        fds.push_back({c.client, static_cast<short>(POLLIN | (c.client_out.empty() ? 0 : POLLOUT)), 0});
        owners.emplace_back(id, true);
        fds.push_back({c.upstream, static_cast<short>(POLLIN | (c.upstream_out.empty() ? 0 : POLLOUT)), 0});
        owners.emplace_back(id, false);
      }
    }
    ::poll(fds.data(), fds.size(), 100);
    std::vector<std::function<void()>> later;
    bool activity = false;
    {
      std::lock_guard lock(mu_);
      if (fds[1].revents & POLLIN) {
        char buf[256];
        while (::read(wake_pipe_[0], buf, sizeof buf) > 0) {
        }
      }
      if (fds[0].revents & POLLIN) accept_new(later);
      for (std::size_t i = 0; i < owners.size(); ++i) {
        const auto& [id, is_client] = owners[i];
        const auto it = connections_.find(id);
        if (it == connections_.end() || it->second.closing) continue;
        Connection& c = it->second;
        const short re = fds[i + 2].revents;
        if (re == 0) continue;
        if (re & (POLLIN | POLLHUP | POLLERR)) {
          const bool alive = read_from(is_client ? c.client : c.upstream, is_client ? c.client_in : c.upstream_in);
          activity = true;
          if (is_client) {
            handle_client_frames(c, later);
          } else {
            handle_upstream_frames(c);
          }
          if (!alive) c.closing = true;
        }
      }
      // Release what is answered, write what can be written, close what is closing.
      for (auto it = connections_.begin(); it != connections_.end();) {
        Connection& c = it->second;
        if (!c.closing) {
          release_responses(c);
          if (!c.client_out.empty() || !c.upstream_out.empty()) activity = true;
          if (!write_to(c.client, c.client_out) || !write_to(c.upstream, c.upstream_out)) c.closing = true;
        }
        if (c.closing) {
          close_connection(c);
          activity = true;
          it = connections_.erase(it);
          continue;
        }
        ++it;
      }
    }
    for (auto& f : later) f();
    if (activity && on_activity_) on_activity_();
  }
}

}  // namespace prodsm::kafka_proxy
