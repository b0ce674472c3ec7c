// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Producer: the core behind one mutex (`mu`), an I/O thread that polls
// one connection and the core's deadline, and a FIFO dispatcher for completions.
//
// Order: every action is drained from the core under `mu` (the drive rule), and
// everything whose order matters is queued while `mu` is held — requests to `outbound`
// (taken by the I/O thread in that order: requests leave in seal order), completions to
// the dispatcher (so dispatcher order is core order: A1, A2).
// Lock order: mu → Dispatcher::mu_ → Signal::mu. Dispatcher tasks run with no lock held
// and may take mu.
#include "prodsm/blocking/producer.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "connection.hpp"

namespace prodsm::blocking {
namespace detail {

/// Where outcomes are published and waited for: one per producer, shared with every
/// RecordTicket so a ticket outlives the producer.
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
};

/// An outcome someone may wait for; `value` is guarded by Signal::mu and set once.
template <class T>
struct Op {
  std::optional<T> value;
};
using VoidOp = Op<VoidResult>;
struct CloseStreamOp : Op<CloseStreamResult> {};

struct TicketState : Op<RecordResult> {
  TicketState(std::shared_ptr<Signal> s, RecordCallback cb) : signal{std::move(s)}, callback{std::move(cb)} {}
  std::shared_ptr<Signal> signal;
  RecordCallback callback;  // touched by the dispatcher only, after acceptance
};

namespace {

/// Depth of completion-callback frames on this thread (dispatcher tasks).
thread_local int tls_callback_depth = 0;
struct CallbackScope {
  CallbackScope() { ++tls_callback_depth; }
  ~CallbackScope() { --tls_callback_depth; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
};

template <class T>
void publish(Signal& signal, Op<T>& op, T value) {
  {
    std::lock_guard lock(signal.mu);
    op.value = std::move(value);
  }
  signal.cv.notify_all();
}

/// Waits until `op` has a value or `deadline` passed; returns the value if it has one.
template <class T>
std::optional<T> wait_for_value(Signal& signal, const Op<T>& op, std::optional<Instant> deadline) {
  std::unique_lock lock(signal.mu);
  auto ready = [&] { return op.value.has_value(); };
  if (!deadline) {
    signal.cv.wait(lock, ready);
  } else if (!signal.cv.wait_until(lock, *deadline, ready)) {
    return std::nullopt;
  }
  return op.value;
}

bool in_callback() noexcept {
  return tls_callback_depth > 0;
}

}  // namespace

/// A1: runs tasks one at a time in post order — on a thread of its own, or as a
/// serializing queue over an injected executor (a drain task is scheduled when the
/// queue turns non-empty and runs until it is empty again, like a strand).
class Dispatcher : public std::enable_shared_from_this<Dispatcher> {
 public:
  explicit Dispatcher(Executor executor) : executor_{std::move(executor)} {}

  static std::shared_ptr<Dispatcher> start(Executor executor) {
    auto d = std::make_shared<Dispatcher>(std::move(executor));
    if (!d->executor_) d->thread_ = std::thread([self = d] { self->run(); });
    return d;
  }

  void post(std::function<void()> task) {
    bool schedule = false;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
      if (executor_ && !scheduled_) schedule = scheduled_ = true;
    }
    if (!executor_) {
      cv_.notify_one();
    } else if (schedule) {
      executor_([self = shared_from_this()] { self->drain(); });
    }
  }

  /// Own thread: runs what is queued, then stops and joins (detaches when called from
  /// the dispatcher thread itself: the producer was destroyed inside a callback).
  void stop_and_join() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

 private:
  void run() {
    CallbackScope scope;
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      task = nullptr;  // release what it captured before taking the lock again
      lock.lock();
    }
  }

  void drain() {
    CallbackScope scope;
    while (true) {
      std::function<void()> task;
      {
        std::lock_guard lock(mu_);
        if (queue_.empty()) {
          scheduled_ = false;
          return;
        }
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  Executor executor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // bounded by the producer's bounds (R3)
  bool scheduled_ = false;                   // executor mode: a drain task is pending
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace detail

namespace {

using detail::in_callback;
using detail::Request;

Instant steady_now() {
  return std::chrono::steady_clock::now();
}

Error local_error(ErrorCode code, std::string message) {
  return make_error(code, Certainty::definite, false, std::move(message));
}

Error waits_for_itself(std::string_view what) {
  return local_error(ErrorCode::would_block,
                     std::string(what) + " called from a completion callback would wait for itself");
}

Error timed_out(std::string_view what) {
  return make_error(ErrorCode::cancelled, Certainty::indefinite, false,
                    std::string(what) + " did not complete within timeout_ns; it goes on");
}

std::optional<Instant> deadline_after(std::optional<Duration> timeout_ns) {
  if (!timeout_ns) return std::nullopt;
  return saturating_add(steady_now(), *timeout_ns);
}

std::optional<std::string> check_options(const ProducerOptions& o) {
  using namespace std::chrono_literals;
  if (o.content_type.empty() || o.content_type.find_first_of("\r\n") != std::string::npos) {
    return "content_type: must be a non-empty header value without CR/LF";
  }
  const bool json = ds::is_json_content_type(o.content_type);
  if (json != (o.producer.protocol.body_format == DurableStreamsPolicy::BodyFormat::json)) {
    return "content_type: '" + o.content_type + "' needs producer.protocol.body_format = " + (json ? "json" : "bytes");
  }
  for (const auto& h : o.extra_headers) {
    if (auto why = ds::check_extra_header(h)) return "extra_headers: " + *why;
  }
  auto in_range = [](Duration d, Duration lo) { return d >= lo && d <= Duration{10min}; };
  if (!in_range(o.connect_timeout_ns, 1ms)) return "connect_timeout_ns: must be in 1 ms..10 min";
  if (!in_range(o.request_timeout_ns, 1ms)) return "request_timeout_ns: must be in 1 ms..10 min";
  if (!in_range(o.idle_reuse_limit_ns, 0ms)) return "idle_reuse_limit_ns: must be in 0..10 min";
  if (!in_range(o.submit_timeout_ns, 0ms)) return "submit_timeout_ns: must be in 0..10 min";
  if (o.max_pending_records < 1 || o.max_pending_records > (1U << 24)) {
    return "max_pending_records: must be in 1..16777216 (got " + std::to_string(o.max_pending_records) + ")";
  }
  if (o.response_limits.max_header_bytes < 256 || o.response_limits.max_headers < 8 ||
      o.response_limits.max_body_bytes < 1024) {
    return "response_limits: header bytes >= 256, headers >= 8, body bytes >= 1024";
  }
  if (auto e = DurableStreamsProducer::validate(o.producer)) return "producer." + e->message();
  return std::nullopt;
}

/// This thread is the I/O thread of that producer (no need to wake it).
thread_local const void* tls_io_owner = nullptr;

}  // namespace

struct Producer::Impl : std::enable_shared_from_this<Producer::Impl> {
  struct BarrierWaiter {
    std::uint64_t barrier;
    std::shared_ptr<detail::VoidOp> flush;                // a flush() waits for it, or
    std::shared_ptr<detail::CloseStreamOp> close_stream;  // close_stream() sends after it
  };

  Impl(ds::StreamUrl u, ProducerOptions o, DurableStreamsProducer c, int wake)
      : url{std::move(u)}, options{std::move(o)}, core{std::move(c)}, wake_fd{wake} {
    request_options.extra_headers = options.extra_headers;
    if (options.producer.protocol.idempotent) producer_id = options.producer.protocol.idempotent->producer_id;
  }
  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Set at creation, then read-only.
  ds::StreamUrl url;
  ProducerOptions options;
  ds::RequestOptions request_options;
  std::string producer_id;
  std::shared_ptr<detail::Signal> signal = std::make_shared<detail::Signal>();
  std::shared_ptr<detail::Dispatcher> dispatcher;

  // Guarded by mu.
  mutable std::mutex mu;
  DurableStreamsProducer core;
  std::deque<std::shared_ptr<detail::TicketState>> tickets;  // index = ticket - tickets_base
  std::uint64_t tickets_base = 0;
  std::uint64_t accepted = 0;   // records accepted
  std::uint64_t delivered = 0;  // records whose outcome the dispatcher delivered
  std::deque<BarrierWaiter> barriers;
  std::shared_ptr<detail::VoidOp> close_op;  // created by the first close() or by Closed
  std::vector<Request> outbound;             // for the I/O thread, in seal order
  std::uint32_t close_stream_outstanding = 0;
  std::optional<Instant> armed;  // the core deadline the I/O thread sleeps until
  std::condition_variable capacity_cv;
  std::uint32_t capacity_waiters = 0;
  std::uint64_t capacity_waits = 0;
  ConnectionStats connection_stats;  // copied from the I/O thread's connection

  std::atomic<std::uint64_t> callback_exceptions{0};
  std::atomic<bool> wake_pending{false};
  const int wake_fd;
  std::thread io_thread;
  std::mutex join_mu;

  // ---- completions (dispatcher) ----------------------------------------------------------

  void run_callback(const std::function<void()>& f) {
    try {
      f();
    } catch (...) {  // A3: caught, counted, reported; never unwinds into the dispatcher
      ++callback_exceptions;
      if (options.on_callback_exception) {
        try {
          options.on_callback_exception(std::current_exception());
        } catch (...) {
        }
      }
    }
  }

  /// Runs the callbacks of one completed batch in ticket order, then publishes the
  /// outcomes (a ticket turns ready after its callback ran).
  void deliver(const std::vector<std::shared_ptr<detail::TicketState>>& states,
               const std::shared_ptr<const DurableStreamsPolicy::Ack>& ack, const std::optional<Error>& error,
               Ticket first) {
    std::vector<RecordResult> results;
    results.reserve(states.size());
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (ack) {
        results.emplace_back(RecordAck{Ticket{first.value + i}, i, ack});
      } else {
        results.emplace_back(tl::unexpected(*error));
      }
      if (auto& cb = states[i]->callback) {
        run_callback([&] { cb(results.back()); });
        cb = nullptr;
      }
    }
    {
      std::lock_guard lock(signal->mu);
      for (std::size_t i = 0; i < states.size(); ++i) states[i]->value = std::move(results[i]);
    }
    signal->cv.notify_all();
    std::lock_guard lock(mu);
    delivered += states.size();
    if (capacity_waiters > 0) capacity_cv.notify_all();  // max_pending_records (R3)
  }

  template <class T>
  void post_publish(std::shared_ptr<detail::Op<T>> op, T value) {
    dispatcher->post([signal = signal, op = std::move(op), value = std::move(value)]() mutable {
      detail::publish(*signal, *op, std::move(value));
    });
  }

  // ---- the drive rule (mu held) ------------------------------------------------------------

  void drive() {
    bool notify_capacity = false;
    bool closed = false;
    while (auto action = core.poll_action()) {
      std::visit(
          [&](auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, SendBatch<DurableStreamsPolicy>>) {
              send(a);
            } else if constexpr (std::is_same_v<T, TicketsCompleted<DurableStreamsPolicy>>) {
              on_tickets_completed(a);
              notify_capacity = true;
            } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
              on_barrier(a);
            } else if constexpr (std::is_same_v<T, Closed>) {
              on_closed(a);
              closed = notify_capacity = true;
            } else if constexpr (std::is_same_v<T, CapacityAvailable>) {
              notify_capacity = true;
            }
          },
          *action);
    }
    const std::optional<Instant> next = core.next_deadline();
    if (!outbound.empty() || closed || (next && (!armed || *next < *armed))) wake_io();
    if (notify_capacity && capacity_waiters > 0) capacity_cv.notify_all();
  }

  void send(const SendBatch<DurableStreamsPolicy>& s) {
    // The body is copied into the request under mu, while the core still owns it.
    std::string bytes =
        ds::encode_batch(url, options.content_type, s.body.size(), s.stamp, producer_id, request_options);
    bytes.append(reinterpret_cast<const char*>(s.body.data()), s.body.size());
    outbound.push_back(Request{std::move(bytes), s.batch, s.attempt, s.stamp.sequenced, nullptr});
  }

  void on_tickets_completed(TicketsCompleted<DurableStreamsPolicy>& done) {
    std::vector<std::shared_ptr<detail::TicketState>> states;
    states.reserve(done.last.value - done.first.value + 1);
    for (std::uint64_t t = done.first.value; t <= done.last.value; ++t) {
      // Every accepted ticket was registered in submit(), in ticket order (P2).
      states.push_back(std::move(tickets.front()));
      tickets.pop_front();
      ++tickets_base;
    }
    std::shared_ptr<const DurableStreamsPolicy::Ack> ack;
    std::optional<Error> error;
    if (done.result) {
      ack = std::make_shared<const DurableStreamsPolicy::Ack>(std::move(*done.result));
    } else {
      error = std::move(done.result.error());
    }
    dispatcher->post([self = shared_from_this(), states = std::move(states), ack, error, first = done.first] {
      self->deliver(states, ack, error, first);
    });
  }

  void on_barrier(const BarrierCompleted& b) {
    auto it = std::find_if(barriers.begin(), barriers.end(),
                           [&](const BarrierWaiter& w) { return w.barrier == b.barrier.value; });
    if (it == barriers.end()) return;
    BarrierWaiter w = std::move(*it);
    barriers.erase(it);
    if (w.flush) {
      post_publish(std::move(w.flush), VoidResult(b.result));
    } else if (!b.result) {
      post_publish<CloseStreamResult>(std::move(w.close_stream), tl::unexpected(b.result.error()));
    } else {
      // Every covered record is durable: close the stream (a plain close, so a repeat
      // is answered 204 and the operation is idempotent).
      ++close_stream_outstanding;
      outbound.push_back(Request{ds::encode_close(url, options.content_type, std::nullopt, request_options), BatchId{},
                                 0, false, std::move(w.close_stream)});
    }
  }

  void on_closed(const Closed& closed) {
    if (!close_op) close_op = std::make_shared<detail::VoidOp>();
    post_publish(close_op, VoidResult(closed.result));
  }

  /// A request's outcome from the I/O thread: classified (S7) and given to the core.
  void on_outcome(Request request, detail::ExchangeResult result, Instant now) {
    if (request.close_stream) {
      --close_stream_outstanding;
      CloseStreamResult r =
          result ? ds::classify_close(*result, false) : CloseStreamResult(tl::unexpected(std::move(result.error())));
      post_publish<CloseStreamResult>(std::move(request.close_stream), std::move(r));
      return;
    }
    if (!result) {
      core.handle_failure(now, request.batch, request.attempt, std::move(result.error()));
    } else if (auto ack = ds::classify_append(*result, request.sequenced)) {
      core.handle_ack(now, request.batch, request.attempt, std::move(*ack));
    } else {
      core.handle_failure(now, request.batch, request.attempt, std::move(ack.error()));
    }
    drive();
  }

  // ---- the I/O thread --------------------------------------------------------------------

  void wake_io() {
    if (tls_io_owner == this) return;  // the I/O thread looks at outbound before it sleeps
    if (!wake_pending.exchange(true)) {
      const std::uint64_t one = 1;
      (void)!::write(wake_fd, &one, sizeof one);
    }
  }

  void io_loop() {
    tls_io_owner = this;
    detail::Connection conn(detail::ConnectionOptions{url.host, url.port, options.connect_timeout_ns,
                                                      options.request_timeout_ns, options.idle_reuse_limit_ns,
                                                      options.response_limits});
    std::vector<std::pair<Request, detail::ExchangeResult>> outcomes;
    std::vector<Request> to_send;
    Instant now{};
    while (true) {
      now = steady_now();
      std::optional<Instant> core_deadline;
      bool exit = false;
      {
        std::lock_guard lock(mu);
        wake_pending.store(false);  // a wake from now on is seen by the next poll
        for (auto& [request, result] : outcomes) on_outcome(std::move(request), std::move(result), now);
        if (const auto due = core.next_deadline(); due && *due <= now) {
          core.handle_timeout(now);  // linger, backoff, delivery deadline (B1, E4, E6)
          drive();
        }
        to_send.swap(outbound);
        core_deadline = armed = core.next_deadline();
        connection_stats = conn.stats();
        exit = core.state() == ProducerState::closed && close_stream_outstanding == 0;
      }
      outcomes.clear();
      for (auto& r : to_send) conn.enqueue(std::move(r), now);
      to_send.clear();
      if (exit) break;
      conn.kick(now);
      outcomes = conn.take_outcomes();
      if (!outcomes.empty()) continue;  // e.g. resolving failed: report it now

      std::optional<Instant> until = core_deadline;
      if (auto d = conn.deadline()) until = until ? std::min(*until, *d) : *d;
      int timeout_ms = -1;
      if (until) {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*until - now).count();  // never early
        timeout_ms = static_cast<int>(std::clamp<std::int64_t>(ms, 0, INT_MAX));
      }
      std::array<pollfd, 2> fds{pollfd{wake_fd, POLLIN, 0}, conn.poll_entry()};
      const int n = ::poll(fds.data(), fds[1].fd >= 0 ? 2 : 1, timeout_ms);
      now = steady_now();
      if (n > 0 && (fds[0].revents & POLLIN) != 0) {
        std::uint64_t count = 0;
        (void)!::read(wake_fd, &count, sizeof count);
      }
      if (n > 0 && fds[1].fd >= 0) conn.on_events(fds[1].revents, now);
      conn.on_time(now);
      conn.kick(now);  // requests left unwritten by a failed connection go out again
      outcomes = conn.take_outcomes();
    }
    // C4: the producer owns its connection and closes it. Batch outcomes are stale now;
    // close_stream requests cannot be outstanding (the loop waited for them).
    conn.close("the producer closed");
    (void)conn.take_outcomes();
    std::lock_guard lock(mu);
    connection_stats = conn.stats();
  }

  void join_io() {
    std::lock_guard lock(join_mu);
    if (io_thread.joinable()) io_thread.join();
  }

  /// Destruction: abort unless closed (C5), stop the threads; the own dispatcher runs
  /// every queued completion before it stops.
  void shutdown() {
    {
      std::lock_guard lock(mu);
      if (core.state() != ProducerState::closed) {
        core.abort(steady_now());
        drive();
      }
    }
    join_io();
    dispatcher->stop_and_join();
  }
};

// ---- RecordTicket ----------------------------------------------------------------------------

bool RecordTicket::ready() const {
  std::lock_guard lock(state_->signal->mu);
  return state_->value.has_value();
}

std::optional<RecordResult> RecordTicket::wait(Duration timeout_ns) const {
  if (in_callback()) timeout_ns = Duration::zero();  // the outcome comes from this dispatcher
  return detail::wait_for_value(*state_->signal, *state_, saturating_add(steady_now(), timeout_ns));
}

RecordResult RecordTicket::wait() const {
  if (in_callback()) {
    if (auto r = wait(Duration::zero())) return *r;
    return tl::unexpected(waits_for_itself("RecordTicket::wait()"));
  }
  return *detail::wait_for_value(*state_->signal, *state_, std::nullopt);
}

// ---- Producer --------------------------------------------------------------------------------

tl::expected<Producer, std::string> Producer::create(ProducerOptions options) {
  auto url = ds::StreamUrl::parse(options.url);
  if (!url) return tl::unexpected("url: " + url.error());
  if (auto why = check_options(options)) return tl::unexpected(*why);
  auto core = DurableStreamsProducer::create(options.producer);
  if (!core) return tl::unexpected("producer." + core.error().message());
  const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) return tl::unexpected(std::string("eventfd: ") + std::strerror(errno));
  auto impl = std::make_shared<Impl>(std::move(*url), std::move(options), std::move(*core), wake_fd);
  impl->dispatcher = detail::Dispatcher::start(impl->options.callback_executor);
  impl->io_thread = std::thread([raw = impl.get()] { raw->io_loop(); });
  return Producer(std::move(impl));
}

Producer::Producer(std::shared_ptr<Impl> impl) noexcept : impl_{std::move(impl)} {}
Producer::Producer(Producer&&) noexcept = default;
Producer& Producer::operator=(Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Producer::~Producer() {
  if (impl_) impl_->shutdown();
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record) {
  return submit(record, nullptr);
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record, RecordCallback on_complete) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  std::optional<Instant> give_up;
  while (true) {
    const Instant now = steady_now();
    tl::expected<Ticket, Rejection> r =
        m.accepted - m.delivered >= m.options.max_pending_records && m.core.state() == ProducerState::open
            ? tl::expected<Ticket, Rejection>(
                  tl::unexpected(Rejection{RejectReason::would_block, "max_pending_records reached", {}}))
            : m.core.submit(now, record);
    if (r) {
      auto state = std::make_shared<detail::TicketState>(m.signal, std::move(on_complete));
      m.tickets.push_back(state);  // A4: registered only when accepted
      ++m.accepted;
      m.drive();
      return RecordTicket(*r, std::move(state));
    }
    m.drive();  // a would-block sealed the partial batch (R2)
    if (r.error().reason != RejectReason::would_block) return tl::unexpected(std::move(r.error()));
    if (!give_up) {
      if (in_callback() || m.options.submit_timeout_ns.count() == 0) return tl::unexpected(std::move(r.error()));
      give_up = saturating_add(now, m.options.submit_timeout_ns);
      ++m.capacity_waits;
    } else if (now >= *give_up) {
      return tl::unexpected(Rejection{RejectReason::would_block,
                                      "no capacity within submit_timeout_ns (max_unacked_bytes, "
                                      "max_unacked_batches or max_pending_records reached)",
                                      {}});
    }
    // R1: woken by CapacityAvailable, a delivered completion, or the close.
    ++m.capacity_waiters;
    m.capacity_cv.wait_until(lock, *give_up);
    --m.capacity_waiters;
  }
}

VoidResult Producer::flush(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("flush()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::VoidOp>();
  {
    std::lock_guard lock(impl_->mu);
    auto r = impl_->core.flush(steady_now());
    if (r) {
      impl_->barriers.push_back(Impl::BarrierWaiter{r->value, op, nullptr});
    } else {  // A2: a refusal too is delivered behind the callbacks already queued
      impl_->post_publish(op, VoidResult(tl::unexpected(to_error(r.error()))));
    }
    impl_->drive();
  }
  auto result = detail::wait_for_value(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("flush()"));
  return *result;
}

VoidResult Producer::close(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close()"));
  const auto deadline = deadline_after(timeout_ns);
  std::shared_ptr<detail::VoidOp> op;
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->close_op) impl_->close_op = std::make_shared<detail::VoidOp>();
    op = impl_->close_op;
    (void)impl_->core.close(steady_now());  // C1: the result comes with Closed
    impl_->drive();
  }
  auto result = detail::wait_for_value(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("close()"));
  impl_->join_io();  // C4: the owned connection is closed when close() returns
  return *result;
}

CloseStreamResult Producer::close_stream(std::optional<Duration> timeout_ns) {
  if (in_callback()) return tl::unexpected(waits_for_itself("close_stream()"));
  const auto deadline = deadline_after(timeout_ns);
  auto op = std::make_shared<detail::CloseStreamOp>();
  {
    std::lock_guard lock(impl_->mu);
    auto r = impl_->core.flush(steady_now());
    if (r) {
      impl_->barriers.push_back(Impl::BarrierWaiter{r->value, nullptr, op});
    } else {  // A2, as in flush()
      impl_->post_publish<CloseStreamResult>(op, tl::unexpected(to_error(r.error())));
    }
    impl_->drive();
  }
  auto result = detail::wait_for_value<CloseStreamResult>(*impl_->signal, *op, deadline);
  if (!result) return tl::unexpected(timed_out("close_stream()"));
  return *result;
}

void Producer::abort() {
  std::lock_guard lock(impl_->mu);
  impl_->core.abort(steady_now());
  impl_->drive();
}

ProducerAdapterStats Producer::stats() const {
  std::lock_guard lock(impl_->mu);
  return ProducerAdapterStats{impl_->core.stats(), impl_->connection_stats, impl_->callback_exceptions.load(),
                              impl_->capacity_waits};
}

const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->url;
}

}  // namespace prodsm::blocking
