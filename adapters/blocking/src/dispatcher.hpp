// SPDX-License-Identifier: Apache-2.0
#pragma once
// The blocking producers' completion machinery (Durable Streams and S2): where outcomes
// are published and waited for, the callback-depth marker that keeps a callback from
// waiting for itself, and the FIFO dispatcher (A1, A2). Private to the adapter.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "prodsm/blocking/producer.hpp"
#include "prodsm/time.hpp"

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
/// Depth of completion-callback frames on this thread (dispatcher tasks of any blocking
/// producer: one variable for every translation unit).
inline thread_local int tls_callback_depth = 0;
/// Marks a dispatcher task's frame on this thread.
struct CallbackScope {
  CallbackScope() { ++tls_callback_depth; }
  ~CallbackScope() { --tls_callback_depth; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
};

/// Sets `op`'s value and wakes its waiters.
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

/// True on a thread that is running a completion callback of a blocking producer.
inline bool in_callback() noexcept {
  return tls_callback_depth > 0;
}

/// A1: an injected executor must queue its task, never run it inside the call: the
/// producer posts while it holds its lock, and an inline task that takes that lock would
/// wait for itself (a deadlock). Checked once at creation with a probe task that does
/// nothing: "callback_executor: ..." when the executor ran it inline on the calling
/// thread, nullopt otherwise (also for an executor that runs it at once on another
/// thread, or later). The probe may run after this returns; it touches only what it owns.
inline std::optional<std::string> check_executor_queues(const Executor& executor) {
  if (!executor) return std::nullopt;
  struct Probe {
    std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> returned{false};
    std::atomic<bool> ran_inline{false};
  };
  auto probe = std::make_shared<Probe>();
  executor([probe] {
    if (!probe->returned.load() && std::this_thread::get_id() == probe->caller) probe->ran_inline.store(true);
  });
  probe->returned.store(true);
  if (!probe->ran_inline.load()) return std::nullopt;
  return std::string(
      "callback_executor: it ran the task inline, inside the call; it must queue the task and run it later "
      "(the producer calls it while holding its lock: an inline completion would wait for itself)");
}

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
}  // namespace prodsm::blocking
