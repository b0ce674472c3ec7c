// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Session: sockets and one timer for an http::Pool, all on one strand.
// The pool decides; this file only carries out its commands (Connect, Write, Close) and
// reports what the sockets did (the pool's drive rule).
#include "prodsm/asio/session.hpp"

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "prodsm/detail/peer_closed.hpp"
#include "prodsm/detail/pool_exchanges.hpp"
#include "prodsm/detail/resolution.hpp"
#include "prodsm/detail/steady_now.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace prodsm::asio {
namespace net = ::asio;
using tcp = net::ip::tcp;

namespace {
using prodsm::detail::steady_now;
}  // namespace

/// One socket and its read buffer; handlers hold it, so it outlives the pool's slot.
struct Socket {
  explicit Socket(const net::strand<net::any_io_executor>& strand) : socket{strand} {}
  tcp::socket socket;
  bool writing = false;
  std::array<char, 64 * 1024> buffer{};
};

/// The pool with its request bookkeeping (prodsm::detail::PoolExchanges: the pool and
/// the validated options; strand only but for stats()), and the sockets and timer.
struct Session::Impl : prodsm::detail::PoolExchanges, std::enable_shared_from_this<Session::Impl> {
  Impl(net::any_io_executor executor, http::Pool p, SessionOptions o)
      : PoolExchanges{std::move(p), std::move(o)},
        strand{net::make_strand(executor)},
        timer{strand},
        resolution_timer{strand} {}

  net::strand<net::any_io_executor> strand;
  std::optional<std::vector<tcp::endpoint>> endpoints;  // resolved once, dropped after a failed connect
  std::map<std::uint64_t, std::shared_ptr<Socket>> sockets;
  net::steady_timer timer;
  // Resolving off the strand (prodsm/detail/resolution.hpp: not Asio's resolver, whose
  // thread run() and the io_context's destruction wait for): the connections waiting for
  // it, and a timer that looks for its result while it runs.
  std::shared_ptr<prodsm::detail::Resolution> resolution;
  std::vector<std::pair<http::ConnectionId, std::shared_ptr<Socket>>> awaiting_resolution;
  net::steady_timer resolution_timer;
  Duration resolution_poll_ns{};
  std::optional<Instant> armed;
  std::uint64_t timer_generation = 0;
  std::atomic<bool> close_called{false};  ///< any thread: Session::close() or ~Session

  // ---- strand only -------------------------------------------------------------------

  void exchange(http::Request request, ExchangeHandler done) {
    enqueue(steady_now(), std::move(request), std::move(done));  // a handler may call exchange(): it only posts
    drive();
  }

  /// The pool's drive rule: carry out every command, deliver every outcome, arm the timer.
  void drive() {
    while (true) {
      if (auto command = pool.poll_command()) {
        std::visit([this](const auto& c) { run(c); }, *command);
        continue;
      }
      if (deliver_one()) continue;  // a handler may call exchange() again: it only posts
      break;
    }
    arm_timer();
    refresh_stats();
  }

  void run(const http::Connect& c) {
    auto socket = std::make_shared<Socket>(strand);
    sockets[c.id.value] = socket;
    const http::PoolOptions& o = pool.options();
    if (std::error_code not_ip; !endpoints) {  // an IP address needs no resolution
      const auto address = net::ip::make_address(o.host, not_ip);
      if (!not_ip) endpoints = std::vector<tcp::endpoint>{tcp::endpoint(address, o.port)};
    }
    if (endpoints) {
      connect(c.id, socket, *endpoints);
      return;
    }
    awaiting_resolution.emplace_back(c.id, socket);  // bounded by the pool's connect timeout
    if (resolution) return;
    auto started = prodsm::detail::Resolution::start(o.host, o.port);
    if (!started) {
      awaiting_resolution.clear();
      sockets.erase(c.id.value);
      pool.on_connect_failed(c.id, steady_now(), started.error());
      return;
    }
    resolution = std::move(*started);
    resolution_poll_ns = kFirstResolutionPollNs;
    take_resolution();
  }

  /// Looks for the resolution's result: connects the connections waiting for it, or fails
  /// them with it; else looks again later (1 ms, doubling up to 50 ms).
  static constexpr Duration kFirstResolutionPollNs = std::chrono::milliseconds{1};
  static constexpr Duration kMaxResolutionPollNs = std::chrono::milliseconds{50};
  void take_resolution() {
    auto result = resolution->result();
    if (!result) {
      resolution_timer.expires_after(resolution_poll_ns);
      resolution_poll_ns = std::min(resolution_poll_ns * 2, kMaxResolutionPollNs);
      resolution_timer.async_wait([weak = weak_from_this()](std::error_code ec) {
        auto self = weak.lock();
        if (!self || ec || !self->resolution) return;
        self->take_resolution();
        self->drive();
      });
      return;
    }
    resolution.reset();
    if (*result) endpoints = to_endpoints((*result)->get());
    for (auto& [id, socket] : std::exchange(awaiting_resolution, {})) {
      if (!pool.knows(id)) continue;  // timed out or closed meanwhile
      if (endpoints && !endpoints->empty()) {
        connect(id, socket, *endpoints);
      } else {
        sockets.erase(id.value);
        pool.on_connect_failed(id, steady_now(),
                               *result ? "resolving " + pool.options().host + " gave no TCP address" : result->error());
      }
    }
  }

  /// The TCP endpoints of a getaddrinfo(3) list (IPv4 and IPv6 only).
  static std::vector<tcp::endpoint> to_endpoints(const addrinfo* list) {
    std::vector<tcp::endpoint> out;
    for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
      if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addr == nullptr) continue;
      tcp::endpoint endpoint;
      if (a->ai_addrlen > endpoint.capacity()) continue;
      std::memcpy(endpoint.data(), a->ai_addr, a->ai_addrlen);
      endpoint.resize(a->ai_addrlen);
      out.push_back(endpoint);
    }
    return out;
  }

  void connect(http::ConnectionId id, const std::shared_ptr<Socket>& socket, const std::vector<tcp::endpoint>& eps) {
    net::async_connect(socket->socket, eps,
                       [self = shared_from_this(), socket, id](std::error_code ec, const tcp::endpoint&) {
                         if (!self->pool.knows(id)) return;
                         if (ec) {
                           self->endpoints.reset();
                           self->pool.on_connect_failed(id, steady_now(), ec.message());
                         } else {
                           std::error_code ignored;
                           socket->socket.set_option(tcp::no_delay(true), ignored);
                           self->pool.on_connected(id, steady_now());
                           self->start_read(id, socket);
                         }
                         self->drive();
                       });
  }

  void run(const http::Write& w) {
    auto it = sockets.find(w.id.value);
    if (it == sockets.end() || it->second->writing) return;
    auto socket = it->second;
    if (prodsm::detail::report_peer_closed_before_write(pool, w.id, socket->socket.native_handle(), steady_now())) {
      return;  // closed by the server while idle: reported instead of written into
    }
    const http::WriteView view = pool.take_write(w.id, steady_now());
    if (view.empty()) return;
    std::vector<net::const_buffer> buffers;
    buffers.reserve(view.count);
    for (const auto& part : view.spans()) buffers.emplace_back(part.data(), part.size());
    socket->writing = true;
    // The pool keeps the bytes alive until on_written; the handler keeps the Impl (and so
    // the pool) alive until then, even if the session is dropped meanwhile.
    net::async_write(socket->socket, buffers,
                     [self = shared_from_this(), socket, id = w.id](std::error_code ec, std::size_t written) {
                       socket->writing = false;
                       self->pool.on_written(id, steady_now(), written);
                       if (ec) self->pool.on_error(id, steady_now(), "writing the request failed: " + ec.message());
                       self->drive();
                     });
  }

  void run(const http::Close& c) {
    auto it = sockets.find(c.id.value);
    if (it == sockets.end()) return;
    std::error_code ignored;
    it->second->socket.close(ignored);  // pending operations complete with operation_aborted
    sockets.erase(it);
  }

  void start_read(http::ConnectionId id, const std::shared_ptr<Socket>& socket) {
    socket->socket.async_read_some(net::buffer(socket->buffer),
                                   [weak = weak_from_this(), socket, id](std::error_code ec, std::size_t n) {
                                     auto self = weak.lock();
                                     if (!self || !self->pool.knows(id)) return;
                                     const Instant now = steady_now();
                                     if (ec == net::error::eof) {
                                       self->pool.on_eof(id, now);
                                     } else if (ec) {
                                       self->pool.on_error(id, now, "reading the response failed: " + ec.message());
                                     } else {
                                       self->pool.on_bytes(id, now, std::span<const char>(socket->buffer.data(), n));
                                     }
                                     self->drive();
                                     if (!ec && self->sockets.count(id.value) != 0) self->start_read(id, socket);
                                   });
  }

  void arm_timer() {
    const std::optional<Instant> when = pool.next_deadline();
    if (when == armed) return;
    armed = when;
    const std::uint64_t generation = ++timer_generation;
    if (!when) {
      timer.cancel();
      return;
    }
    timer.expires_at(*when);
    timer.async_wait([weak = weak_from_this(), generation](std::error_code ec) {
      auto self = weak.lock();
      if (!self || ec || generation != self->timer_generation) return;
      self->on_timer(0);
    });
  }

  /// A deadline is due. What has already arrived is taken first, so a response that has
  /// arrived is never taken for a stall or a request timeout: a read completion already
  /// queued on the strand (its bytes read, no longer available() in the socket) runs
  /// before the first deferral, which is always made; bytes still in a socket are waited
  /// for by up to 8 deferrals, each behind the read completion they queue.
  void on_timer(int deferrals) {
    if (deferrals == 0) {
      net::post(strand, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->on_timer(1);
      });
      return;
    }
    if (deferrals < 8) {
      for (auto& [id, socket] : sockets) {
        std::error_code ec;
        if (socket->socket.is_open() && socket->socket.available(ec) > 0 && !ec) {
          net::post(strand, [weak = weak_from_this(), deferrals] {
            if (auto self = weak.lock()) self->on_timer(deferrals + 1);
          });
          return;
        }
      }
    }
    armed.reset();
    pool.handle_timeout(steady_now());
    drive();
  }

  void close() {
    resolution.reset();  // its thread goes on alone; nothing here waits for it
    awaiting_resolution.clear();
    resolution_timer.cancel();
    pool.close(steady_now());
    drive();
  }
};

// ---- Session -------------------------------------------------------------------------------

std::shared_ptr<Session> Session::wrap(std::shared_ptr<Impl> impl) {
  return std::shared_ptr<Session>(new Session(std::move(impl)));
}

tl::expected<std::shared_ptr<Session>, std::string> Session::create(net::any_io_executor executor, std::string host,
                                                                    std::uint16_t port, SessionOptions options) {
  auto made = prodsm::detail::make_pool(std::move(host), port, false, std::move(options));
  if (!made) return tl::unexpected(made.error());
  return wrap(std::make_shared<Impl>(std::move(executor), std::move(made->first), std::move(made->second)));
}

tl::expected<std::shared_ptr<Session>, std::string> Session::create(net::any_io_executor executor,
                                                                    const ds::StreamUrl& url, SessionOptions options) {
  auto made = prodsm::detail::make_pool(url.host, url.port, url.tls, std::move(options));
  if (!made) return tl::unexpected(made.error());
  return wrap(std::make_shared<Impl>(std::move(executor), std::move(made->first), std::move(made->second)));
}

Session::Session(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}

Session::~Session() {
  // Handlers hold the Impl, not the Session: close on the strand; the posted task keeps
  // the Impl alive until it ran, and the sockets' pending operations then end.
  close();
}

void Session::exchange(http::Request request, ExchangeHandler done) {
  // Always posted (never run inline), so a handler may call exchange() re-entrantly and
  // requests keep their call order on the strand.
  net::post(impl_->strand, [impl = impl_, request = std::move(request), done = std::move(done)]() mutable {
    impl->exchange(std::move(request), std::move(done));
  });
}

void Session::exchange(std::string request, bool head_request, ExchangeHandler done) {
  http::Request r;
  r.bytes = std::move(request);
  r.head = head_request;
  exchange(std::move(r), std::move(done));
}

void Session::close() {
  impl_->close_called.store(true);
  net::post(impl_->strand, [impl = impl_] { impl->close(); });
}

bool Session::closed() const noexcept {
  return impl_->close_called.load();
}

const net::strand<net::any_io_executor>& Session::strand() const noexcept {
  return impl_->strand;
}
const std::string& Session::host() const noexcept {
  return impl_->pool.options().host;
}
std::uint16_t Session::port() const noexcept {
  return impl_->pool.options().port;
}
const SessionOptions& Session::options() const noexcept {
  return impl_->options;
}
SessionStats Session::stats() const {
  return impl_->stats();
}

}  // namespace prodsm::asio
