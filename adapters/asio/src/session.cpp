// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Session: connections, pipelining or pooling, timeouts, and the
// classification of transport failures (E2, E4). Every member of Impl and Connection is
// touched only on the session's strand.
#include "prodsm/asio/session.hpp"

#include <asio/connect.hpp>
#include <asio/dispatch.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <utility>
#include <vector>

namespace prodsm::asio {
namespace net = ::asio;
using tcp = net::ip::tcp;

namespace {

Instant steady_now() {
  return std::chrono::steady_clock::now();
}

/// One request on its way through a connection.
struct Pending {
  std::string request;
  bool head = false;
  Session::ExchangeHandler done;
  bool write_started = false;  ///< some bytes may have reached the server
  Instant deadline{};          ///< request timeout, set when the write starts
};

Error transport_error(ErrorCode code, Certainty certainty, std::string message) {
  return make_error(code, certainty, code != ErrorCode::closed && code != ErrorCode::protocol_error,
                    std::move(message));
}

}  // namespace

class Connection;

struct Session::Impl {
  Impl(net::any_io_executor executor, std::string h, std::uint16_t p, SessionOptions o)
      : strand{net::make_strand(executor)}, host{std::move(h)}, port{p}, options{std::move(o)}, resolver{strand} {}

  net::strand<net::any_io_executor> strand;
  std::string host;
  std::uint16_t port;
  SessionOptions options;
  tcp::resolver resolver;
  std::optional<tcp::resolver::results_type> endpoints;  // resolved once, reset on failure
  std::vector<std::shared_ptr<Connection>> connections;
  std::deque<Pending> backlog;  // pool mode: waiting for a free connection
  bool closed = false;
  struct {
    std::atomic<std::uint64_t> connections_opened{0};
    std::atomic<std::uint64_t> requests_written{0};
    std::atomic<std::uint64_t> responses{0};
    std::atomic<std::uint64_t> transport_failures{0};
  } stats;  // atomics: stats() may be read from any thread

  void dispatch_request(Pending p);
  void on_connection_idle();
};

/// One TCP connection carrying one (pool) or several (pipelined) requests in order.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::weak_ptr<Session> owner, Session::Impl& session)
      : owner_{std::move(owner)},
        session_{session},
        socket_{session.strand},
        timer_{session.strand},
        parser_{session.options.response_limits} {}

  [[nodiscard]] std::size_t outstanding() const noexcept { return pending_.size(); }
  [[nodiscard]] bool busy() const noexcept { return !pending_.empty(); }

  void enqueue(Pending p) {
    const Instant now = steady_now();
    if (state_ == State::connected && pending_.empty() && now - last_activity_ > session_.options.idle_reuse_limit_ns) {
      reset_socket();  // idle too long: the server may be closing it right now
    }
    const bool first = pending_.empty();
    pending_.push_back(std::move(p));
    if (first) parser_.reset(pending_.front().head);  // the parser expects this response next
    kick();
  }

  /// Fails everything outstanding and closes the socket (session close).
  void shutdown() {
    reset_socket();
    auto pending = std::exchange(pending_, {});
    written_ = 0;
    for (auto& p : pending) {
      p.done(tl::unexpected(p.write_started ? transport_error(ErrorCode::connection_lost, Certainty::indefinite,
                                                              "session closed while the request was outstanding")
                                            : transport_error(ErrorCode::closed, Certainty::definite,
                                                              "session closed before the request was sent")));
    }
  }

 private:
  enum class State : std::uint8_t { disconnected, connecting, connected };

  bool alive() const { return !owner_.expired() && !session_.closed; }

  void kick() {
    if (pending_.empty()) return;
    if (state_ == State::disconnected) {
      start_connect();
      return;
    }
    if (state_ != State::connected) return;
    const bool may_write = session_.options.mode == ConnectionMode::pipelined || written_ == 0;
    if (!writing_ && may_write && written_ < pending_.size()) start_write();
    // Never start a read while on_read is still parsing read_buffer_: Asio may read
    // speculatively into the buffer at initiation.
    if (!reading_ && !processing_read_) start_read();
  }

  void reset_socket() {
    ++generation_;
    std::error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
    state_ = State::disconnected;
    writing_ = false;
    reading_ = false;
    parser_.reset(pending_.empty() ? false : pending_.front().head);
  }

  void start_connect() {
    state_ = State::connecting;
    const std::uint64_t gen = ++generation_;
    socket_ = tcp::socket{session_.strand};
    timer_.expires_after(session_.options.connect_timeout_ns);
    timer_.async_wait([self = shared_from_this(), gen](std::error_code ec) {
      if (ec || gen != self->generation_ || self->state_ != State::connecting) return;
      self->on_connect_failed("connect to " + self->session_.host + ":" + std::to_string(self->session_.port) +
                              " timed out");
    });
    auto connect = [self = shared_from_this(), gen](const tcp::resolver::results_type& eps) {
      net::async_connect(self->socket_, eps, [self, gen](std::error_code ec, const tcp::endpoint&) {
        if (gen != self->generation_) return;
        if (ec) {
          self->session_.endpoints.reset();
          self->on_connect_failed("connect to " + self->session_.host + ":" + std::to_string(self->session_.port) +
                                  " failed: " + ec.message());
          return;
        }
        self->on_connected();
      });
    };
    if (session_.endpoints) {
      connect(*session_.endpoints);
      return;
    }
    session_.resolver.async_resolve(
        session_.host, std::to_string(session_.port),
        [self = shared_from_this(), gen, connect](std::error_code ec, tcp::resolver::results_type results) {
          if (gen != self->generation_) return;
          if (ec) {
            self->on_connect_failed("resolving " + self->session_.host + " failed: " + ec.message());
            return;
          }
          self->session_.endpoints = results;
          connect(results);
        });
  }

  void on_connected() {
    timer_.cancel();
    state_ = State::connected;
    ++session_.stats.connections_opened;
    std::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    last_activity_ = steady_now();
    parser_.reset(pending_.empty() ? false : pending_.front().head);
    kick();
  }

  /// Nothing was written: every pending request fails definite (retryable).
  void on_connect_failed(const std::string& why) {
    reset_socket();
    auto pending = std::exchange(pending_, {});
    written_ = 0;
    session_.stats.transport_failures += pending.size();
    for (auto& p : pending) {
      p.done(tl::unexpected(transport_error(ErrorCode::unavailable, Certainty::definite, why)));
    }
    if (alive()) session_.on_connection_idle();
  }

  void start_write() {
    Pending& p = pending_[written_];
    p.write_started = true;
    p.deadline = steady_now() + session_.options.request_timeout_ns;
    writing_ = true;
    if (written_ == 0) arm_request_timer();
    const std::uint64_t gen = generation_;
    net::async_write(socket_, net::buffer(p.request),
                     [self = shared_from_this(), gen](std::error_code ec, std::size_t) {
                       if (gen != self->generation_) return;
                       self->writing_ = false;
                       if (ec) {
                         self->fail_connection("writing the request failed: " + ec.message());
                         return;
                       }
                       ++self->written_;
                       ++self->session_.stats.requests_written;
                       self->last_activity_ = steady_now();
                       self->kick();
                     });
  }

  void start_read() {
    reading_ = true;
    const std::uint64_t gen = generation_;
    socket_.async_read_some(net::buffer(read_buffer_),
                            [self = shared_from_this(), gen](std::error_code ec, std::size_t n) {
                              if (gen != self->generation_) return;
                              self->reading_ = false;
                              self->on_read(ec, n);
                            });
  }

  void on_read(std::error_code ec, std::size_t n) {
    if (ec) {
      if (ec == net::error::eof && !pending_.empty() && written_ > 0) {
        parser_.finish_eof();  // an EOF-delimited body ends here
        if (parser_.state() == ds::ResponseParser::State::complete) {
          deliver_front(parser_.take_response());
        }
      }
      if (pending_.empty()) {
        reset_socket();  // idle close by the server: nothing lost
        return;
      }
      fail_connection(ec == net::error::eof ? "the server closed the connection"
                                            : "reading the response failed: " + ec.message());
      return;
    }
    last_activity_ = steady_now();
    processing_read_ = true;
    struct Done {
      bool& flag;
      ~Done() { flag = false; }
    } done_processing{processing_read_};
    std::size_t offset = 0;
    while (offset < n) {
      if (pending_.empty() || written_ == 0) {
        fail_connection("the server sent bytes with no request outstanding");
        return;
      }
      offset += parser_.feed(std::span<const char>(read_buffer_.data() + offset, n - offset));
      if (parser_.state() == ds::ResponseParser::State::failed) {
        Pending p = std::move(pending_.front());
        pending_.pop_front();
        --written_;
        const Error why = parser_.error();
        fail_connection("the connection is unusable after a malformed response");
        p.done(tl::unexpected(why));
        return;
      }
      if (parser_.state() != ds::ResponseParser::State::complete) break;
      ds::Response response = parser_.take_response();
      const bool keep = response.keep_alive;
      const std::uint64_t gen = generation_;
      deliver_front(std::move(response));
      if (gen != generation_) return;  // the callback closed or reset us
      if (!keep) {
        if (pending_.empty()) {
          reset_socket();
        } else {
          fail_connection("the server closed the connection after a response");
        }
        return;
      }
    }
    processing_read_ = false;
    kick();
    if (!reading_ && state_ == State::connected) start_read();
  }

  void deliver_front(ds::Response response) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    --written_;
    ++session_.stats.responses;
    parser_.reset(pending_.empty() ? false : pending_.front().head);
    arm_request_timer();
    p.done(std::move(response));
    if (pending_.empty() && alive()) session_.on_connection_idle();
  }

  /// Requests with bytes on the wire may have been applied: indefinite. The others
  /// stay queued and go out on a new connection.
  void fail_connection(const std::string& why) {
    reset_socket();
    std::deque<Pending> failed;
    while (!pending_.empty() && pending_.front().write_started) {
      failed.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    written_ = 0;
    session_.stats.transport_failures += failed.size();
    for (auto& p : failed) {
      p.done(tl::unexpected(transport_error(ErrorCode::connection_lost, Certainty::indefinite, why)));
    }
    if (alive()) kick();
  }

  void arm_request_timer() {
    if (pending_.empty() || !pending_.front().write_started) {
      timer_.cancel();
      return;
    }
    const std::uint64_t gen = generation_;
    timer_.expires_at(pending_.front().deadline);
    timer_.async_wait([self = shared_from_this(), gen](std::error_code ec) {
      if (ec || gen != self->generation_ || self->pending_.empty()) return;
      if (!self->pending_.front().write_started || steady_now() < self->pending_.front().deadline) {
        return;
      }
      self->fail_connection("request timed out after " +
                            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               self->session_.options.request_timeout_ns)
                                               .count()) +
                            " ms");
    });
  }

  std::weak_ptr<Session> owner_;
  Session::Impl& session_;
  tcp::socket socket_;
  net::steady_timer timer_;
  ds::ResponseParser parser_;
  std::deque<Pending> pending_;
  std::size_t written_ = 0;  ///< pending_[0, written_) are fully written
  State state_ = State::disconnected;
  bool writing_ = false;
  bool reading_ = false;
  bool processing_read_ = false;  ///< on_read is parsing read_buffer_
  std::uint64_t generation_ = 0;  ///< bumps on every socket reset; stale handlers ignore
  Instant last_activity_{};
  std::array<char, 64 * 1024> read_buffer_{};
};

void Session::Impl::dispatch_request(Pending p) {
  // Pipelined: everything on connection 0. Pool: an idle connection, a new one, or the
  // backlog.
  std::shared_ptr<Connection> target;
  if (options.mode == ConnectionMode::pipelined) {
    target = connections.front();
  } else {
    for (auto& c : connections) {
      if (!c->busy()) {
        target = c;
        break;
      }
    }
    if (!target) {
      if (backlog.size() >= options.max_queued_requests) {
        p.done(tl::unexpected(
            transport_error(ErrorCode::unavailable, Certainty::definite, "session request queue is full")));
        return;
      }
      backlog.push_back(std::move(p));
      return;
    }
  }
  target->enqueue(std::move(p));
}

void Session::Impl::on_connection_idle() {
  while (!backlog.empty() && !closed) {
    std::shared_ptr<Connection> idle;
    for (auto& c : connections) {
      if (!c->busy()) {
        idle = c;
        break;
      }
    }
    if (!idle) return;
    Pending p = std::move(backlog.front());
    backlog.pop_front();
    idle->enqueue(std::move(p));
  }
}

std::optional<std::string> SessionOptions::validate() const {
  using namespace std::chrono_literals;
  if (mode != ConnectionMode::pipelined && mode != ConnectionMode::pool) {
    return "session.mode: must be pipelined or pool";
  }
  if (max_connections < 1 || max_connections > 64) {
    return "session.max_connections: must be in 1..64 (got " + std::to_string(max_connections) + ")";
  }
  auto in_range = [](Duration d, Duration lo) { return d >= lo && d <= Duration{10min}; };
  if (!in_range(connect_timeout_ns, 1ms)) return "session.connect_timeout_ns: must be in 1 ms..10 min";
  if (!in_range(request_timeout_ns, 1ms)) return "session.request_timeout_ns: must be in 1 ms..10 min";
  if (!in_range(idle_reuse_limit_ns, 0ms)) return "session.idle_reuse_limit_ns: must be in 0..10 min";
  if (max_queued_requests < 1 || max_queued_requests > 65536) {
    return "session.max_queued_requests: must be in 1..65536";
  }
  if (response_limits.max_header_bytes < 256 || response_limits.max_headers < 8 ||
      response_limits.max_body_bytes < 1024) {
    return "session.response_limits: header bytes >= 256, headers >= 8, body bytes >= 1024";
  }
  return std::nullopt;
}

tl::expected<std::shared_ptr<Session>, std::string> Session::create(net::any_io_executor executor, std::string host,
                                                                    std::uint16_t port, SessionOptions options) {
  if (auto why = options.validate()) return tl::unexpected(*why);
  if (host.empty()) return tl::unexpected(std::string{"session: empty host"});
  if (port == 0) return tl::unexpected(std::string{"session: port 0"});
  auto impl = std::make_unique<Impl>(std::move(executor), std::move(host), port, std::move(options));
  std::shared_ptr<Session> session(new Session(std::move(impl)));
  const std::size_t count =
      session->impl_->options.mode == ConnectionMode::pipelined ? 1 : session->impl_->options.max_connections;
  for (std::size_t i = 0; i < count; ++i) {
    session->impl_->connections.push_back(std::make_shared<Connection>(session, *session->impl_));
  }
  return session;
}

tl::expected<std::shared_ptr<Session>, std::string> Session::create(net::any_io_executor executor,
                                                                    const ds::StreamUrl& url, SessionOptions options) {
  return create(std::move(executor), url.host, url.port, std::move(options));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_{std::move(impl)} {}

Session::~Session() {
  // A connection's handlers hold the Connection, not the Session: one may be running on
  // the strand right now, so the connections are shut down on the strand (found by
  // ThreadSanitizer: this destructor runs on whichever thread drops the last reference).
  // The posted task keeps Impl alive until then; handlers that run after it see the
  // bumped generation and return before touching Impl.
  std::shared_ptr<Impl> impl(impl_.release());
  net::post(impl->strand, [impl] {
    impl->closed = true;
    for (auto& c : impl->connections) c->shutdown();
    for (auto& p : std::exchange(impl->backlog, {})) {
      p.done(tl::unexpected(
          transport_error(ErrorCode::closed, Certainty::definite, "session destroyed before the request was sent")));
    }
  });
}

void Session::exchange(std::string request, bool head_request, ExchangeHandler done) {
  net::dispatch(impl_->strand, [self = shared_from_this(), request = std::move(request), head_request,
                                done = std::move(done)]() mutable {
    if (self->impl_->closed) {
      done(tl::unexpected(transport_error(ErrorCode::closed, Certainty::definite, "the session is closed")));
      return;
    }
    self->impl_->dispatch_request(Pending{std::move(request), head_request, std::move(done)});
  });
}

void Session::close() {
  net::dispatch(impl_->strand, [self = shared_from_this()] {
    if (self->impl_->closed) return;
    self->impl_->closed = true;
    for (auto& c : self->impl_->connections) c->shutdown();
    auto backlog = std::exchange(self->impl_->backlog, {});
    for (auto& p : backlog) {
      p.done(tl::unexpected(
          transport_error(ErrorCode::closed, Certainty::definite, "session closed before the request was sent")));
    }
  });
}

const net::strand<net::any_io_executor>& Session::strand() const noexcept {
  return impl_->strand;
}
const std::string& Session::host() const noexcept {
  return impl_->host;
}
std::uint16_t Session::port() const noexcept {
  return impl_->port;
}
const SessionOptions& Session::options() const noexcept {
  return impl_->options;
}
SessionStats Session::stats() const {
  return SessionStats{impl_->stats.connections_opened.load(), impl_->stats.requests_written.load(),
                      impl_->stats.responses.load(), impl_->stats.transport_failures.load()};
}

}  // namespace prodsm::asio
