// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::S2Producer: an s2::ProducerClient driven by a Session and one timer.
// Locking as in producer.cpp: `mu` guards the client and the handler tables; requests
// (seal order) and completions (ticket order, A1) are posted while `mu` is held, so
// strand FIFO order is client order.
#include "prodsm/asio/s2_producer.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "prodsm/detail/ticket_table.hpp"

namespace prodsm::asio {
namespace net = ::asio;

namespace {
Instant steady_now() {
  return std::chrono::steady_clock::now();
}
}  // namespace

struct S2Producer::Impl : std::enable_shared_from_this<S2Producer::Impl> {
  using RecordCompletion = std::unique_ptr<detail::Completion<S2RecordResult>>;
  using VoidCompletion = std::unique_ptr<detail::Completion<VoidResult>>;

  Impl(S2ProducerOptions o, std::shared_ptr<Session> s, bool owned, s2::ProducerClient c)
      : options{std::move(o)},
        session{std::move(s)},
        owns_session{owned},
        callback_strand{net::make_strand(options.callback_executor ? *options.callback_executor
                                                                   : net::any_io_executor{session->strand()})},
        timer{session->strand()},
        client{std::move(c)} {}

  S2ProducerOptions options;
  std::shared_ptr<Session> session;
  bool owns_session;
  net::strand<net::any_io_executor> callback_strand;
  net::steady_timer timer;  // used on the session strand only

  mutable std::mutex mu;
  s2::ProducerClient client;
  prodsm::detail::TicketTable<RecordCompletion> records;
  std::unordered_map<std::uint64_t, VoidCompletion> flushes;
  std::vector<VoidCompletion> closes;
  std::optional<VoidResult> close_result;
  std::optional<Instant> armed;
  bool session_released = false;
  std::uint64_t callback_exceptions = 0;
  std::uint64_t capacity_waits = 0;
  std::condition_variable capacity_cv;  // submit_blocking waits here (with mu)

  void run_callback(const std::function<void()>& f) {
    try {
      f();
    } catch (...) {  // A3: never unwinds into Asio or the core
      std::function<void(std::exception_ptr)> hook;
      {
        std::lock_guard lock(mu);
        ++callback_exceptions;
        hook = options.on_callback_exception;
      }
      if (hook) {
        try {
          hook(std::current_exception());
        } catch (...) {
        }
      }
    }
  }

  template <class Result, class C>
  void post_result(C completion, Result result) {
    auto shared = std::make_shared<C>(std::move(completion));
    net::post(callback_strand, [self = shared_from_this(), shared, result = std::move(result)] {
      self->run_callback([&] { (*shared)->complete(result); });
    });
  }

  // ---- the drive rule (mu held) ----------------------------------------------------------

  void drive(Instant now) {
    while (auto r = client.poll_request()) {
      session->exchange(std::move(r->request), [weak = weak_from_this(), tag = r->tag](ExchangeResult result) {
        auto self = weak.lock();
        if (!self) return;
        std::lock_guard lock(self->mu);
        self->client.handle_outcome(steady_now(), tag, std::move(result));
        self->drive(steady_now());
      });
    }
    while (auto event = client.poll_event()) {
      std::visit([&](auto& e) { route(now, e); }, *event);
    }
    if (!session_released && owns_session && client.finished()) {
      session_released = true;
      session->close();  // C4: an owned session is closed, an attached one left open
    }
    arm_timer();
  }

  void route(Instant now, s2::RecordsCompleted& done) {
    std::vector<std::pair<Ticket, RecordCompletion>> handlers;
    records.take(done.first, done.last, [&](Ticket t, RecordCompletion h) { handlers.emplace_back(t, std::move(h)); });
    const std::uint64_t count = done.last.value - done.first.value + 1;
    if (handlers.empty()) {  // fire-and-forget records are delivered now (R3)
      client.on_delivered(now, count);
      return;
    }
    auto shared = std::make_shared<decltype(handlers)>(std::move(handlers));
    auto batch = std::make_shared<s2::RecordsCompleted>(std::move(done));
    net::post(callback_strand, [impl = shared_from_this(), shared, batch, count] {
      for (auto& entry : *shared) {  // A1: ticket order
        impl->run_callback([&] { entry.second->complete(batch->record(entry.first)); });
      }
      std::lock_guard lock(impl->mu);
      impl->client.on_delivered(steady_now(), count);
      impl->drive(steady_now());
    });
  }
  void route(Instant, BarrierCompleted& done) {
    auto it = flushes.find(done.barrier.value);
    if (it == flushes.end()) return;
    post_result<VoidResult>(std::move(it->second), VoidResult(done.result));
    flushes.erase(it);
  }
  void route(Instant, Closed& closed) {
    close_result = closed.result;
    for (auto& c : std::exchange(closes, {})) post_result<VoidResult>(std::move(c), VoidResult(closed.result));
    capacity_cv.notify_all();
  }
  void route(Instant, CapacityAvailable&) { capacity_cv.notify_all(); }

  void arm_timer() {
    const std::optional<Instant> when = client.next_deadline();
    if (when == armed) return;
    armed = when;
    net::post(session->strand(), [weak = weak_from_this(), when] {
      auto self = weak.lock();
      if (!self) return;
      if (!when) {
        self->timer.cancel();
        return;
      }
      self->timer.expires_at(*when);
      self->timer.async_wait([weak](std::error_code ec) {
        if (ec) return;  // re-armed or cancelled
        if (auto s = weak.lock()) s->on_timer();
      });
    });
  }

  void on_timer() {
    std::lock_guard lock(mu);
    const Instant now = steady_now();
    armed.reset();
    client.handle_timeout(now);  // linger, backoff, delivery deadline (B1, E4, E6)
    drive(now);
  }
};

namespace {
/// The session's server as a URL (for Session::create: TLS for https).
tl::expected<ds::StreamUrl, std::string> server_url(const s2::Endpoint& e) {
  auto url = ds::StreamUrl::parse(std::string(e.tls ? "https://" : "http://") + e.authority() + "/");
  if (!url) return tl::unexpected("endpoint: " + url.error());
  return url;
}
}  // namespace

tl::expected<S2Producer, std::string> S2Producer::create(net::any_io_executor executor, S2ProducerOptions options) {
  auto client = s2::ProducerClient::create(options);
  if (!client) return tl::unexpected(client.error());
  auto url = server_url(options.endpoint);
  if (!url) return tl::unexpected(url.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(std::move(executor), *url, std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  return S2Producer(std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(*client)));
}

tl::expected<S2Producer, std::string> S2Producer::attach(std::shared_ptr<Session> session, S2ProducerOptions options) {
  if (!session) return tl::unexpected(std::string{"session: null"});
  if (options.header_provider) {
    return tl::unexpected(std::string{"header_provider: an attached producer uses its session's (SessionOptions)"});
  }
  // The session's transport is the one that runs: its mode and stall detection count.
  if (auto why = s2::validate_attached(options, session->options())) return tl::unexpected(*why);
  auto client = s2::ProducerClient::create(options);
  if (!client) return tl::unexpected(client.error());
  if (options.endpoint.host != session->host() || options.endpoint.port != session->port()) {
    return tl::unexpected("endpoint: " + options.endpoint.authority() + " is not the session's server " +
                          session->host() + ":" + std::to_string(session->port()));
  }
  return S2Producer(std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client)));
}

S2Producer::S2Producer(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}
S2Producer::S2Producer(S2Producer&&) noexcept = default;
S2Producer& S2Producer::operator=(S2Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) abort();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
S2Producer::~S2Producer() {
  if (impl_) abort();  // C5: no-op after a completed close
}

tl::expected<Ticket, Rejection> S2Producer::submit(std::string_view record) {
  return submit_with(record, nullptr);
}

tl::expected<Ticket, Rejection> S2Producer::submit_with(std::string_view record,
                                                        std::unique_ptr<detail::Completion<S2RecordResult>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto r = impl_->client.submit(now, record);
  if (r && c) impl_->records.put(*r, std::move(c));  // A4: only an accepted submit registers
  impl_->drive(now);
  return r;
}

tl::expected<Ticket, Rejection> S2Producer::submit_blocking(std::string_view record, Duration timeout_ns) {
  return submit_blocking_with(record, timeout_ns, nullptr);
}

tl::expected<Ticket, Rejection> S2Producer::submit_blocking_with(
    std::string_view record, Duration timeout_ns, std::unique_ptr<detail::Completion<S2RecordResult>> c) {
  std::unique_lock lock(impl_->mu);
  const auto give_up = std::chrono::steady_clock::now() + timeout_ns;
  bool waited = false;
  while (true) {
    const Instant now = steady_now();
    auto r = impl_->client.submit(now, record);
    if (r && c) impl_->records.put(*r, std::move(c));  // A4: registered only when accepted
    impl_->drive(now);
    if (r || r.error().reason != RejectReason::would_block) return r;
    if (!waited) ++impl_->capacity_waits;
    waited = true;
    // R1: wait for CapacityAvailable (or close); the core sealed the partial batch (R2).
    if (impl_->capacity_cv.wait_until(lock, give_up) == std::cv_status::timeout) return r;
  }
}

void S2Producer::initiate_submit(std::string_view record, std::unique_ptr<detail::Completion<S2RecordResult>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto r = impl_->client.submit(now, record);
  if (r) {
    impl_->records.put(*r, std::move(c));
  } else {
    impl_->post_result<S2RecordResult>(std::move(c), tl::unexpected(to_error(r.error())));
  }
  impl_->drive(now);
}

void S2Producer::initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  auto r = impl_->client.flush(now);
  if (r) {
    impl_->flushes.emplace(r->value, std::move(c));
  } else {  // A2: a refusal too is delivered behind the callbacks already queued
    impl_->post_result<VoidResult>(std::move(c), tl::unexpected(to_error(r.error())));
  }
  impl_->drive(now);
}

void S2Producer::initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c) {
  std::lock_guard lock(impl_->mu);
  if (impl_->close_result) {  // C1: a second close returns the same result
    impl_->post_result<VoidResult>(std::move(c), *impl_->close_result);
    return;
  }
  const Instant now = steady_now();
  impl_->closes.push_back(std::move(c));
  impl_->client.close(now);
  impl_->drive(now);
}

void S2Producer::abort() {
  std::lock_guard lock(impl_->mu);
  const Instant now = steady_now();
  impl_->client.abort(now);
  impl_->drive(now);
}

ProducerAdapterStats S2Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->client.core().stats(), impl_->session->stats(), impl_->callback_exceptions,
                              impl_->capacity_waits};
}

const std::shared_ptr<Session>& S2Producer::session() const noexcept {
  return impl_->session;
}

const s2::ProducerOptions& S2Producer::options() const noexcept {
  return impl_->client.options();
}

}  // namespace prodsm::asio
