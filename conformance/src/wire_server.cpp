// SPDX-License-Identifier: Apache-2.0
// The harness's receiving HTTP/1.1 server (wire_server.hpp): one poll(2) thread, requests
// parsed by libhttp-parser, answers written in each connection's request order.
#include "wire_server.hpp"

#include "prodsm/http/detail/text.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace prodsm::conformance::detail {
namespace {

using http::detail::iequals;

using Clock = std::chrono::steady_clock;

}  // namespace

std::optional<std::string_view> WireRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (iequals(n, name)) return std::string_view{v};
  }
  return std::nullopt;
}

std::string http_response_bytes(const http::Response& response) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " ";
  out += http::reason_phrase(response.status);
  out += "\r\n";
  bool has_length = false;
  for (const auto& h : response.headers) {
    has_length = has_length || iequals(h.name, "content-length");
    out += h.name + ": " + h.value + "\r\n";
  }
  const bool bodiless = response.status < 200 || response.status == 204 || response.status == 304;
  if (!bodiless && !has_length) out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += "\r\n";
  if (!bodiless) out += response.body;
  return out;
}

/// One accepted connection: its parser, the request being parsed, and its requests in
/// order with their answers (an answer waits until every earlier one was written).
struct Connection {
  std::uint64_t id = 0;
  int fd = -1;
  http_parser parser{};
  // The request being parsed.
  WireRequest partial;
  std::string field;  ///< header field being parsed
  bool in_value = false;
  std::size_t header_bytes = 0;
  // Requests in arrival order, each with its answer once given (nullopt: unanswered).
  std::deque<std::pair<std::uint64_t, std::optional<std::string>>> answers;
  std::string out;      ///< bytes to write
  bool failed = false;  ///< parse error or a limit: closed after `out` is written
  struct WireServer::Impl* server = nullptr;
};

struct WireServer::Impl {
  WireServerLimits limits;
  int listen_fd = -1;
  int wake_fd = -1;
  std::uint16_t port = 0;
  std::thread thread;

  mutable std::mutex mu;
  std::condition_variable arrived_cv;
  bool stopping = false;
  std::map<std::uint64_t, Connection> connections;       ///< by id
  std::deque<WireRequest> arrived_queue;                 ///< not yet taken
  std::vector<WireRequest> completed_now;                ///< completed in this poll round, not yet ordered
  std::int64_t read_received_ns = 0;                     ///< the kernel receive time of the read being parsed
  std::map<std::uint64_t, std::uint64_t> connection_of;  ///< held request id -> connection id
  std::uint64_t next_request = 1;
  std::uint64_t next_connection = 1;
  std::uint64_t arrived_total = 0;
  WireServerStats stats;
  http_parser_settings settings{};

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake();
    if (thread.joinable()) thread.join();
    for (auto& [id, c] : connections) ::close(c.fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void wake() const {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  // ---- parser callbacks (mu held: they run inside on_readable) ----------------------------

  static Connection& of(http_parser* p) { return *static_cast<Connection*>(p->data); }

  static int on_message_begin(http_parser* p) {
    Connection& c = of(p);
    c.partial = WireRequest{};
    c.field.clear();
    c.in_value = false;
    c.header_bytes = 0;
    return 0;
  }
  static int on_url(http_parser* p, const char* at, std::size_t n) {
    Connection& c = of(p);
    c.partial.target.append(at, n);
    return count_header(c, n);
  }
  static int on_header_field(http_parser* p, const char* at, std::size_t n) {
    Connection& c = of(p);
    if (c.in_value) c.field.clear();  // a new field begins (a field may arrive in pieces)
    c.in_value = false;
    c.field.append(at, n);
    return count_header(c, n);
  }
  static int on_header_value(http_parser* p, const char* at, std::size_t n) {
    Connection& c = of(p);
    if (!c.in_value) {
      c.partial.headers.emplace_back(c.field, std::string{});
      c.in_value = true;
    }
    c.partial.headers.back().second.append(at, n);
    return count_header(c, n);
  }
  static int on_headers_complete(http_parser* p) {
    Connection& c = of(p);
    c.partial.method = http_method_str(static_cast<http_method>(p->method));
    return 0;
  }
  static int on_body(http_parser* p, const char* at, std::size_t n) {
    Connection& c = of(p);
    if (c.partial.body.size() + n > c.server->limits.max_body_bytes) return -1;
    c.partial.body.append(at, n);
    return 0;
  }
  static int on_message_complete(http_parser* p) {
    Connection& c = of(p);
    Impl& s = *c.server;
    if (s.connection_of.size() >= s.limits.max_held_requests) return -1;
    WireRequest r = std::move(c.partial);
    r.id = s.next_request++;
    r.connection = c.id;
    r.arrived = Clock::now();
    r.received_ns = s.read_received_ns;
    c.answers.emplace_back(r.id, std::nullopt);
    s.connection_of[r.id] = c.id;
    s.completed_now.push_back(std::move(r));  // ordered with the round's others (publish)
    return 0;
  }
  static int count_header(Connection& c, std::size_t n) {
    c.header_bytes += n;
    return c.header_bytes > c.server->limits.max_header_bytes ? -1 : 0;
  }

  // ---- the socket thread ------------------------------------------------------------------

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    std::array<char, 64 * 1024> buffer{};
    while (true) {
      fds.clear();
      ids.clear();
      {
        std::lock_guard lock(mu);
        if (stopping) return;
        fds.push_back({listen_fd, POLLIN, 0});
        fds.push_back({wake_fd, POLLIN, 0});
        for (auto& [id, c] : connections) {
          short events = c.failed ? 0 : POLLIN;
          if (!c.out.empty()) events |= POLLOUT;
          fds.push_back({c.fd, events, 0});
          ids.push_back(id);
        }
      }
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      std::lock_guard lock(mu);
      if (stopping) return;
      if (fds[1].revents != 0) {
        std::uint64_t drained = 0;
        (void)!::read(wake_fd, &drained, sizeof drained);
      }
      if (fds[0].revents & POLLIN) accept_one();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        auto it = connections.find(ids[i]);
        if (it == connections.end()) continue;  // reset by the harness meanwhile
        const short ev = fds[i + 2].revents;
        if (ev == 0) continue;
        Connection& c = it->second;
        bool alive = true;
        if (ev & (POLLIN | POLLHUP | POLLERR)) alive = on_readable(c, buffer);
        if (alive && (ev & POLLOUT)) alive = flush_out(c);
        if (!alive) drop(c.id, false);
      }
      publish();
    }
  }

  /// The requests completed in this round, in the order they reached the server (kernel
  /// receive time; one connection's keep their order), to the queue the harness takes from.
  void publish() {
    if (completed_now.empty()) return;
    std::stable_sort(completed_now.begin(), completed_now.end(),
                     [](const WireRequest& a, const WireRequest& b) { return a.received_ns < b.received_ns; });
    for (auto& r : completed_now) {
      arrived_queue.push_back(std::move(r));
      ++arrived_total;
    }
    completed_now.clear();
    arrived_cv.notify_all();
  }

  void accept_one() {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    ++stats.connections_accepted;
    if (connections.size() >= limits.max_connections) {
      ::close(fd);
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    const std::uint64_t id = next_connection++;
    Connection& c = connections[id];
    c.id = id;
    c.fd = fd;
    c.server = this;
    http_parser_init(&c.parser, HTTP_REQUEST);
    c.parser.data = &c;
  }

  /// Reads what is there and parses it; false when the connection is finished.
  bool on_readable(Connection& c, std::array<char, 64 * 1024>& buffer) {
    while (true) {
      iovec iov{buffer.data(), buffer.size()};
      alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(timespec))> control{};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      const ssize_t n = ::recvmsg(c.fd, &msg, 0);
      read_received_ns = 0;
      for (cmsghdr* m = CMSG_FIRSTHDR(&msg); n > 0 && m != nullptr; m = CMSG_NXTHDR(&msg, m)) {
        if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts{};
          std::memcpy(&ts, CMSG_DATA(m), sizeof ts);
          read_received_ns = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        }
      }
      if (n == 0) {
        ++stats.connections_closed_by_peer;
        return false;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        if (errno == EINTR) continue;
        ++stats.connections_closed_by_peer;
        return false;
      }
      const std::size_t used = http_parser_execute(&c.parser, &settings, buffer.data(), static_cast<std::size_t>(n));
      if (HTTP_PARSER_ERRNO(&c.parser) != HPE_OK || used != static_cast<std::size_t>(n)) {
        ++stats.malformed_requests;
        stats.last_malformed = std::string(http_errno_name(HTTP_PARSER_ERRNO(&c.parser))) + ": " +
                               http_errno_description(HTTP_PARSER_ERRNO(&c.parser));
        c.failed = true;
        return !c.out.empty();  // what was answered still goes out, then it closes
      }
    }
  }

  /// Moves every answer that is next in order to `out` and writes; false when finished.
  bool flush_out(Connection& c) {
    while (!c.answers.empty() && c.answers.front().second) {
      c.out += *c.answers.front().second;
      connection_of.erase(c.answers.front().first);
      c.answers.pop_front();
    }
    while (!c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        if (errno == EINTR) continue;
        return false;
      }
      c.out.erase(0, static_cast<std::size_t>(n));
    }
    return !c.failed;
  }

  /// Closes connection `id`; with `rst`, as a reset. Its unanswered requests are forgotten.
  void drop(std::uint64_t id, bool rst) {
    auto it = connections.find(id);
    if (it == connections.end()) return;
    if (rst) {
      const linger l{1, 0};
      ::setsockopt(it->second.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ::close(it->second.fd);
    for (const auto& [request, answer] : it->second.answers) connection_of.erase(request);
    connections.erase(it);
  }
};

WireServer::WireServer(std::unique_ptr<Impl> impl) : impl_{std::move(impl)} {}
WireServer::~WireServer() = default;

tl::expected<std::unique_ptr<WireServer>, std::string> WireServer::start(std::uint16_t port, WireServerLimits limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  auto& st = impl->settings;
  st.on_message_begin = &Impl::on_message_begin;
  st.on_url = &Impl::on_url;
  st.on_header_field = &Impl::on_header_field;
  st.on_header_value = &Impl::on_header_value;
  st.on_headers_complete = &Impl::on_headers_complete;
  st.on_body = &Impl::on_body;
  st.on_message_complete = &Impl::on_message_complete;
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->wake_fd < 0) return tl::unexpected(std::string("wire server: eventfd: ") + std::strerror(errno));
  impl->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) return tl::unexpected(std::string("wire server: socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return tl::unexpected("wire server: bind 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno));
  }
  if (::listen(impl->listen_fd, 128) != 0)
    return tl::unexpected(std::string("wire server: listen: ") + std::strerror(errno));
  socklen_t len = sizeof addr;
  ::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl->port = ntohs(addr.sin_port);
  try {
    impl->thread = std::thread([raw = impl.get()] { raw->run(); });
  } catch (const std::system_error& e) {
    return tl::unexpected(std::string("wire server: thread: ") + e.what());
  }
  return std::unique_ptr<WireServer>(new WireServer(std::move(impl)));
}

std::uint16_t WireServer::port() const noexcept {
  return impl_->port;
}

std::optional<WireRequest> WireServer::take(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(impl_->mu);
  impl_->arrived_cv.wait_until(lock, until, [&] { return !impl_->arrived_queue.empty(); });
  if (impl_->arrived_queue.empty()) return std::nullopt;
  WireRequest r = std::move(impl_->arrived_queue.front());
  impl_->arrived_queue.pop_front();
  return r;
}

std::uint64_t WireServer::arrived() const {
  std::lock_guard lock(impl_->mu);
  return impl_->arrived_total;
}

bool WireServer::respond(std::uint64_t id, std::string bytes) {
  {
    std::lock_guard lock(impl_->mu);
    auto conn = impl_->connection_of.find(id);
    if (conn == impl_->connection_of.end()) return false;
    auto it = impl_->connections.find(conn->second);
    if (it == impl_->connections.end()) return false;
    bool found = false;
    for (auto& [request, answer] : it->second.answers) {
      if (request != id) continue;
      if (answer) return false;
      answer = std::move(bytes);
      found = true;
    }
    if (!found) return false;
    // Queue what is now in order; the socket thread writes it.
    Connection& c = it->second;
    while (!c.answers.empty() && c.answers.front().second) {
      c.out += *c.answers.front().second;
      impl_->connection_of.erase(c.answers.front().first);
      c.answers.pop_front();
    }
  }
  impl_->wake();
  return true;
}

bool WireServer::reset(std::uint64_t id) {
  {
    std::lock_guard lock(impl_->mu);
    auto conn = impl_->connection_of.find(id);
    if (conn == impl_->connection_of.end()) return false;
    impl_->drop(conn->second, true);
  }
  impl_->wake();
  return true;
}

WireServerStats WireServer::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

std::size_t WireServer::open_connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->connections.size();
}

}  // namespace prodsm::conformance::detail
