// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Session: one I/O thread that carries out an http::Pool's commands on
// nonblocking POSIX sockets with ppoll(2), reports what the sockets did, and runs the
// deadlines of the producers attached to it. The pool decides; this file runs the loop,
// session_sockets.cpp moves the bytes.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "prodsm/detail/steady_now.hpp"
#include "session_impl.hpp"

namespace prodsm::blocking {
namespace {

using prodsm::detail::steady_now;

}  // namespace

Session::Impl::Impl(http::Pool p, int wake, SessionOptions o)
    : PoolExchanges{std::move(p), std::move(o)}, wake_fd{wake} {}

Session::Impl::~Impl() {
  for (auto& [id, s] : sockets) {
    if (s.fd >= 0) ::close(s.fd);
  }
  if (wake_fd >= 0) ::close(wake_fd);
}

// ---- any thread ------------------------------------------------------------------------------

void Session::Impl::exchange(http::Request request, ExchangeHandler done) {
  {
    std::lock_guard lock(mu);
    if (!closing) {
      inbox.emplace_back(std::move(request), std::move(done));
      done = nullptr;
    }
  }
  if (done) {
    done(tl::unexpected(make_error(ErrorCode::closed, Certainty::definite, false, "the session is closed")));
    return;
  }
  wake();
}

void Session::Impl::close() {
  {
    std::lock_guard lock(mu);
    if (closing) return;
    closing = true;
  }
  wake();
}

void Session::Impl::join() {
  std::thread t;
  {
    std::lock_guard lock(mu);
    if (!thread.joinable() || std::this_thread::get_id() == thread_id) return;
    t = std::move(thread);
  }
  t.join();
}

void Session::Impl::attach(std::weak_ptr<Participant> participant) {
  {
    std::lock_guard lock(mu);
    participants.push_back(std::move(participant));
  }
  wake();
}

void Session::Impl::wake() {
  if (on_io_thread()) {  // the I/O thread looks again before it sleeps
    wake_pending.store(true);
    return;
  }
  if (!wake_pending.exchange(true)) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }
}

bool Session::Impl::on_io_thread() const noexcept {
  return std::this_thread::get_id() == thread_id;
}

// ---- the I/O thread --------------------------------------------------------------------------

void Session::Impl::take_inbox(Instant now) {
  std::vector<std::pair<http::Request, ExchangeHandler>> taken;
  {
    std::lock_guard lock(mu);
    taken.swap(inbox);
  }
  for (auto& [request, done] : taken) enqueue(now, std::move(request), std::move(done));
}

/// The pool's drive rule: carry out every command, deliver every outcome.
void Session::Impl::drive(Instant now) {
  while (true) {
    if (auto command = pool.poll_command()) {
      if (const auto* c = std::get_if<http::Connect>(&*command)) {
        connect(c->id, now);
      } else if (const auto* w = std::get_if<http::Write>(&*command)) {
        auto it = sockets.find(w->id.value);
        if (it != sockets.end()) it->second.write_wanted = true;
      } else if (const auto* x = std::get_if<http::Close>(&*command)) {
        close_socket(x->id.value);
      }
      continue;
    }
    bool wrote = false;
    for (auto& [id, s] : sockets) {
      if (s.write_wanted && !s.write_blocked && !s.connecting && s.fd >= 0) {
        write_some(id, s, now);
        wrote = true;
        break;  // the map may have changed: look again
      }
    }
    if (wrote) continue;
    if (deliver_one()) continue;  // a handler may call exchange(): it only queues
    break;
  }
  refresh_stats();
}

/// Runs the attached producers' due deadlines; returns the earliest one left.
std::optional<Instant> Session::Impl::run_participants(Instant now) {
  std::vector<std::weak_ptr<Participant>> list;
  {
    std::lock_guard lock(mu);
    std::erase_if(participants, [](const std::weak_ptr<Participant>& p) { return p.expired(); });
    list = participants;
  }
  std::optional<Instant> earliest;
  for (auto& weak : list) {
    auto p = weak.lock();
    if (!p) continue;
    auto when = p->deadline();
    if (when && *when <= now) {
      p->on_deadline(now);
      when = p->deadline();
    }
    if (when) earliest = earliest ? std::min(*earliest, *when) : *when;
  }
  return earliest;
}

void Session::Impl::run() {
  bool closed = false;
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;
  while (true) {
    Instant now = steady_now();
    wake_pending.store(false);  // a wake from now on is seen by the next poll
    take_inbox(now);
    take_resolution(now);
    bool stop = false;
    {
      std::lock_guard lock(mu);
      stop = closing;
    }
    if (stop && !closed) {
      closed = true;
      pool.close(now);
    }
    if (const auto due = pool.next_deadline(); due && *due <= now) pool.handle_timeout(now);
    drive(now);
    const std::optional<Instant> participant_deadline = run_participants(now);
    take_inbox(now);  // what the participants sent
    drive(now);
    if (closed && idle() && sockets.empty()) {
      std::lock_guard lock(mu);
      if (inbox.empty()) break;
      continue;
    }

    std::optional<Instant> until = pool.next_deadline();
    if (participant_deadline) until = until ? std::min(*until, *participant_deadline) : *participant_deadline;
    fds.clear();
    ids.clear();
    fds.push_back(pollfd{wake_fd, POLLIN, 0});
    for (const auto& [id, s] : sockets) {
      if (s.fd < 0) continue;
      short events = s.connecting ? POLLOUT : POLLIN;
      if (!s.connecting && s.write_wanted && s.write_blocked) events |= POLLOUT;
      fds.push_back(pollfd{s.fd, events, 0});
      ids.push_back(id);
    }
    timespec timeout{};
    timespec* timeout_ptr = nullptr;
    if (until) {
      const auto wait = std::max(Duration{0}, *until - now);
      const auto us = std::chrono::ceil<std::chrono::microseconds>(wait).count();  // never early
      timeout.tv_sec = static_cast<time_t>(us / 1'000'000);
      timeout.tv_nsec = static_cast<long>((us % 1'000'000) * 1000);
      timeout_ptr = &timeout;
    }
    if (wake_pending.load()) {  // woken while preparing (also by this thread's own handlers)
      timeout = {};
      timeout_ptr = &timeout;
    }
    const int n = ::ppoll(fds.data(), fds.size(), timeout_ptr, nullptr);
    now = steady_now();
    if (n <= 0) continue;
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      (void)!::read(wake_fd, &count, sizeof count);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) on_socket_events(ids[i - 1], fds[i].revents, now);
    drive(now);
  }
}

// ---- Session ---------------------------------------------------------------------------------

namespace {
/// Starts the I/O thread of a session over `made` (the pool and the validated options).
tl::expected<std::shared_ptr<Session::Impl>, std::string> start(
    tl::expected<std::pair<http::Pool, SessionOptions>, std::string> made) {
  if (!made) return tl::unexpected(made.error());
  const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) return tl::unexpected(std::string("eventfd: ") + std::strerror(errno));
  auto impl = std::make_shared<Session::Impl>(std::move(made->first), wake_fd, std::move(made->second));
  std::lock_guard lock(impl->mu);
  impl->thread = std::thread([impl] { impl->run(); });
  impl->thread_id = impl->thread.get_id();
  return impl;
}
}  // namespace

tl::expected<std::shared_ptr<Session>, std::string> Session::create(std::string host, std::uint16_t port,
                                                                    SessionOptions options) {
  auto impl = start(prodsm::detail::make_pool(std::move(host), port, false, std::move(options)));
  if (!impl) return tl::unexpected(std::move(impl.error()));
  return std::shared_ptr<Session>(new Session(std::move(*impl)));
}

tl::expected<std::shared_ptr<Session>, std::string> Session::create(const ds::StreamUrl& url, SessionOptions options) {
  auto impl = start(prodsm::detail::make_pool(url.host, url.port, url.tls, std::move(options)));
  if (!impl) return tl::unexpected(std::move(impl.error()));
  return std::shared_ptr<Session>(new Session(std::move(*impl)));
}

Session::Session(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}

Session::~Session() {
  close();
}

void Session::exchange(http::Request request, ExchangeHandler done) {
  impl_->exchange(std::move(request), std::move(done));
}

ExchangeResult Session::exchange_and_wait(http::Request request, std::optional<Duration> timeout_ns) {
  if (impl_->on_io_thread()) {
    return tl::unexpected(make_error(ErrorCode::would_block, Certainty::definite, false,
                                     "exchange_and_wait called on the session's I/O thread would wait for itself"));
  }
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<ExchangeResult> result;
  };
  auto w = std::make_shared<Waiter>();
  impl_->exchange(std::move(request), [w](ExchangeResult r) {
    {
      std::lock_guard lock(w->mu);
      w->result = std::move(r);
    }
    w->cv.notify_all();
  });
  std::unique_lock lock(w->mu);
  auto ready = [&] { return w->result.has_value(); };
  if (!timeout_ns) {
    w->cv.wait(lock, ready);
  } else if (!w->cv.wait_until(lock, saturating_add(steady_now(), *timeout_ns), ready)) {
    return tl::unexpected(make_error(ErrorCode::cancelled, Certainty::indefinite, false,
                                     "the request did not complete within timeout_ns; it goes on"));
  }
  return std::move(*w->result);
}

void Session::close() {
  impl_->close();
  impl_->join();
}

bool Session::closed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->closing;
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

}  // namespace prodsm::blocking
