// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file completion.hpp
/// The Asio producers' operation plumbing (asio::Producer and asio::S2Producer): the
/// type-erased completion of one operation (a completion token's handler or a plain
/// callback), and submit, then acknowledgement — BasicRecordTicket, the handle
/// async_submit_ticket gives at acceptance, whose async_wait gives the record's outcome
/// (P2, A4). The detail:: parts are not for users.

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

#include "prodsm/action.hpp"
#include "prodsm/error.hpp"

namespace prodsm::asio {

namespace detail {
/// A type-erased, move-only completion for one operation.
template <class Result>
struct Completion {
  virtual ~Completion() = default;
  /// Runs the handler with `result` (on the callback strand).
  virtual void complete(Result result) = 0;
  /// Runs the handler with `result` later, never inside this call (a ready outcome).
  virtual void complete_later(Result result) { complete(std::move(result)); }
  /// The outcome is decided and on its way (posted): a cancel may no longer replace it.
  virtual void settle() noexcept {}
};

/// Where a completion token's handler with no executor of its own runs, and how: on the
/// producer's callback strand, inside the producer's A3 guard (what a plain callback
/// gets), as an Asio I/O object runs such handlers on its own executor.
struct TokenFallback {
  ::asio::any_io_executor executor;  ///< the callback strand (A1)
  /// Runs a handler, catching, counting and reporting what it throws (A3); never throws.
  std::function<void(const std::function<void()>&)> run;
};

/// A completion token's handler as a Completion: run on the handler's associated
/// executor, or — a handler with none, e.g. a plain lambda — as `fallback` says (on the
/// system executor, where it ran before, a handler that threw ended the process).
/// Dispatched by complete, posted by complete_later; the executor is kept busy by a work
/// guard until then. A throw from a handler on its own executor leaves that executor's
/// run(), as Asio does.
template <class Result, class Handler>
class TokenCompletion final : public Completion<Result> {
  using Executor = ::asio::associated_executor_t<Handler, ::asio::any_io_executor>;
  using Guard = std::function<void(const std::function<void()>&)>;

 public:
  /// Takes the handler and keeps its executor from running out of work.
  TokenCompletion(Handler handler, const TokenFallback& fallback)
      : handler_{std::move(handler)},
        work_{::asio::get_associated_executor(handler_, fallback.executor)},
        guard_{guard_for(work_.get_executor(), fallback)} {}
  /// Runs the handler with `result` (dispatched: at once when already on its executor).
  void complete(Result result) override {
    ::asio::dispatch(work_.get_executor(), [handler = std::move(handler_), result = std::move(result),
                                            guard = guard_]() mutable { invoke(guard, handler, std::move(result)); });
  }
  /// Runs the handler with `result` later (posted, never inside the caller's frame).
  void complete_later(Result result) override {
    ::asio::post(work_.get_executor(), [handler = std::move(handler_), result = std::move(result),
                                        guard = guard_]() mutable { invoke(guard, handler, std::move(result)); });
  }

 private:
  /// The fallback's guard when the handler runs on the fallback's executor, else none.
  static Guard guard_for(const Executor& executor, const TokenFallback& fallback) {
    if constexpr (std::is_same_v<Executor, ::asio::any_io_executor>) {
      if (executor == fallback.executor) return fallback.run;
    }
    return {};
  }
  static void invoke(const Guard& guard, Handler& handler, Result result) {
    if (guard) {
      guard([&] { std::move(handler)(std::move(result)); });
    } else {
      std::move(handler)(std::move(result));
    }
  }

  Handler handler_;
  ::asio::executor_work_guard<Executor> work_;
  Guard guard_;
};

/// A plain callback `f(Result)` as a Completion (submit's and submit_blocking's
/// on_complete), run where the producer runs completions (the callback strand, A1).
template <class Result, class F>
class CallbackCompletion final : public Completion<Result> {
 public:
  /// Takes the callback.
  explicit CallbackCompletion(F f) : f_{std::move(f)} {}
  /// Calls the callback with `result`.
  void complete(Result result) override { f_(std::move(result)); }

 private:
  F f_;
};

/// The hook that connects a capacity wait's cancel function to a handler's cancellation
/// slot (per-operation cancellation); empty when the slot is not connected.
template <class Slot>
std::function<void(std::function<void()>)> cancel_installer(Slot slot) {
  if (!slot.is_connected()) return {};
  return [slot](std::function<void()> cancel) mutable {
    slot.assign([cancel = std::move(cancel)](::asio::cancellation_type type) {
      if (type != ::asio::cancellation_type::none) cancel();
    });
  };
}

/// A completion whose handler's cancellation slot may end the wait first (per-operation
/// cancellation): the handler then gets `cancelled` at once, and the operation's own
/// completion later finds nothing to run. Once the outcome is decided (settle(): a
/// refusal or a result posted to the callback strand), a cancel changes nothing. The operation itself goes on (a flush
/// barrier stays, a close keeps draining): a durable record cannot be unsent.
template <class Result>
class CancellableCompletion final : public Completion<Result> {
 public:
  /// The handler's completion, shared with the slot's cancel function.
  struct Shared {
    std::mutex mu;                              ///< guards inner and settled
    std::unique_ptr<Completion<Result>> inner;  ///< the handler's completion; null once taken
    bool settled = false;                       ///< the outcome is decided: a cancel finds nothing to end
    /// The completion, once: null after it ran or was cancelled.
    std::unique_ptr<Completion<Result>> take() {
      std::lock_guard lock(mu);
      return std::move(inner);
    }
    /// The completion for a cancel: null once settled, ran or cancelled.
    std::unique_ptr<Completion<Result>> take_unsettled() {
      std::lock_guard lock(mu);
      if (settled) return nullptr;
      return std::move(inner);
    }
  };
  explicit CancellableCompletion(std::shared_ptr<Shared> shared) : shared_{std::move(shared)} {}
  void complete(Result result) override {
    if (auto c = shared_->take()) c->complete(std::move(result));
  }
  void complete_later(Result result) override {
    if (auto c = shared_->take()) c->complete_later(std::move(result));
  }
  void settle() noexcept override {
    std::lock_guard lock(shared_->mu);
    shared_->settled = true;
  }

 private:
  std::shared_ptr<Shared> shared_;
};

/// Wraps the handler of a waiting operation (async_flush, async_close, the stream closes,
/// a ticket's async_wait): cancellable through its slot when one is connected; a cancel
/// completes it with ErrorCode::cancelled naming `what`. `fallback`: as TokenCompletion.
template <class Result, class Handler>
std::unique_ptr<Completion<Result>> make_waiting_completion(Handler handler, const char* what,
                                                            const TokenFallback& fallback) {
  auto slot = ::asio::get_associated_cancellation_slot(handler);
  auto inner = std::make_unique<TokenCompletion<Result, Handler>>(std::move(handler), fallback);
  if (!slot.is_connected()) return inner;
  auto shared = std::make_shared<typename CancellableCompletion<Result>::Shared>();
  shared->inner = std::move(inner);
  slot.assign([weak = std::weak_ptr(shared), what](::asio::cancellation_type type) {
    if (type == ::asio::cancellation_type::none) return;
    auto s = weak.lock();
    if (!s) return;
    if (auto c = s->take_unsettled()) {
      c->complete_later(Result(tl::unexpected(
          make_error(ErrorCode::cancelled, Certainty::indefinite, false,
                     std::string(what) + " cancelled: the wait ended; the operation goes on (abort() stops it)"))));
    }
  });
  return std::make_unique<CancellableCompletion<Result>>(std::move(shared));
}

/// An async_submit's completion and the hook that connects its capacity wait to the
/// handler's cancellation slot (empty when the handler has none).
template <class Result>
struct SubmitOperation {
  std::unique_ptr<Completion<Result>> completion;               ///< runs the handler
  std::function<void(std::function<void()>)> install_cancel{};  ///< installs the cancel function
};

/// Wraps an async_submit handler (both producers' async_submit); `fallback`: as
/// TokenCompletion.
template <class Result, class Handler>
SubmitOperation<Result> make_submit_operation(Handler handler, const TokenFallback& fallback) {
  auto slot = ::asio::get_associated_cancellation_slot(handler);
  SubmitOperation<Result> op{std::make_unique<TokenCompletion<Result, Handler>>(std::move(handler), fallback)};
  op.install_cancel = cancel_installer(slot);
  return op;
}

/// The outcome of one record accepted by async_submit_ticket, shared by the producer and
/// every copy of its BasicRecordTicket. Set once, on the callback strand (A1).
template <class Result>
class TicketOutcome {
 public:
  /// `fallback`: where and how a wait's handler with no executor of its own runs
  /// (TokenFallback: the producer's callback strand and A3 guard).
  explicit TicketOutcome(TokenFallback fallback) : fallback_{std::move(fallback)} {}
  /// The fallback given at construction.
  [[nodiscard]] const TokenFallback& fallback() const noexcept { return fallback_; }
  /// The record completed: its waiters run, in the order they started waiting. Every
  /// one runs, even when one throws (a handler of its own executor run inline: a
  /// fallback handler's throw is caught by its guard); the first exception is rethrown
  /// after them, for the producer to report (A3).
  void set(Result result) {
    std::vector<std::unique_ptr<Completion<Result>>> waiting;
    {
      std::lock_guard lock(mu_);
      value_ = result;
      waiting.swap(waiters_);
    }
    std::exception_ptr first;
    for (auto& w : waiting) {
      try {
        w->complete(result);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }
  /// True once the record completed.
  [[nodiscard]] bool ready() const {
    std::lock_guard lock(mu_);
    return value_.has_value();
  }
  /// The outcome, once the record completed.
  [[nodiscard]] std::optional<Result> get() const {
    std::lock_guard lock(mu_);
    return value_;
  }
  /// Runs `c` with the outcome: at set(), or posted now when it is ready.
  void wait(std::unique_ptr<Completion<Result>> c) {
    std::optional<Result> ready;
    {
      std::lock_guard lock(mu_);
      if (!value_) {
        waiters_.push_back(std::move(c));
        return;
      }
      ready = value_;
    }
    c->complete_later(std::move(*ready));
  }

 private:
  TokenFallback fallback_;
  mutable std::mutex mu_;
  std::optional<Result> value_;
  std::vector<std::unique_ptr<Completion<Result>>> waiters_;
};

/// The record completion of an async_submit_ticket: sets the shared outcome.
template <class Result>
class OutcomeCompletion final : public Completion<Result> {
 public:
  explicit OutcomeCompletion(std::shared_ptr<TicketOutcome<Result>> o) : outcome_{std::move(o)} {}
  void complete(Result result) override { outcome_->set(std::move(result)); }

 private:
  std::shared_ptr<TicketOutcome<Result>> outcome_;
};
}  // namespace detail

/// A handle to one record accepted by async_submit_ticket (P2): its ticket, and its
/// outcome to wait for. Copyable; every copy sees the same outcome, also after the
/// producer is gone. Result: RecordResult (Durable Streams) or S2RecordResult.
template <class Result>
class BasicRecordTicket {
 public:
  /// Made by async_submit_ticket when the record is accepted.
  BasicRecordTicket(Ticket id, std::shared_ptr<detail::TicketOutcome<Result>> outcome) noexcept
      : id_{id}, outcome_{std::move(outcome)} {}
  /// The record's ticket (dense from 0 in acceptance order, P3).
  [[nodiscard]] Ticket id() const noexcept { return id_; }
  /// True once the record is durable or failed.
  [[nodiscard]] bool ready() const { return outcome_->ready(); }
  /// The outcome once ready(), else nothing.
  [[nodiscard]] std::optional<Result> result() const { return outcome_->get(); }
  /// Waits for the outcome as an Asio operation; signature void(Result). Completes when
  /// the record is durable or failed (never inside this call); any number of waits, each
  /// gets the outcome. A cancelled wait (its cancellation slot) completes with `cancelled`
  /// at once; the record is unaffected.
  template <class CompletionToken>
  auto async_wait(CompletionToken&& token) const {
    return ::asio::async_initiate<CompletionToken, void(Result)>(
        [outcome = outcome_](auto handler) {
          outcome->wait(detail::make_waiting_completion<Result>(std::move(handler), "async_wait", outcome->fallback()));
        },
        token);
  }

 private:
  Ticket id_;
  std::shared_ptr<detail::TicketOutcome<Result>> outcome_;
};

namespace detail {
/// An async_submit_ticket's parts: the record's completion (sets the shared outcome),
/// the acceptance completion (the handler, given a BasicRecordTicket or the refusal),
/// and the cancellation hook of its capacity wait.
template <class Result>
struct TicketOperation {
  std::unique_ptr<Completion<Result>> record;                         ///< sets the ticket's shared outcome
  std::unique_ptr<Completion<tl::expected<Ticket, Error>>> accepted;  ///< the handler: the ticket or the refusal
  std::function<void(std::function<void()>)> install_cancel{};        ///< hooks the wait to the cancel slot
};

/// Turns the accepted ticket into a BasicRecordTicket for the handler.
template <class Result, class Handler>
class AcceptCompletion final : public Completion<tl::expected<Ticket, Error>> {
 public:
  AcceptCompletion(std::shared_ptr<TicketOutcome<Result>> o, Handler handler)
      : outcome_{std::move(o)}, inner_{std::move(handler), outcome_->fallback()} {}
  void complete(tl::expected<Ticket, Error> r) override {
    if (!r) return inner_.complete(tl::unexpected(std::move(r.error())));
    inner_.complete(BasicRecordTicket<Result>(*r, outcome_));
  }

 private:
  std::shared_ptr<TicketOutcome<Result>> outcome_;
  TokenCompletion<tl::expected<BasicRecordTicket<Result>, Error>, Handler> inner_;
};

/// Wraps an async_submit_ticket handler (both producers').
template <class Result, class Handler>
TicketOperation<Result> make_ticket_operation(Handler handler, const TokenFallback& fallback) {
  auto slot = ::asio::get_associated_cancellation_slot(handler);
  auto outcome = std::make_shared<TicketOutcome<Result>>(fallback);
  TicketOperation<Result> op{std::make_unique<OutcomeCompletion<Result>>(outcome),
                             std::make_unique<AcceptCompletion<Result, Handler>>(outcome, std::move(handler))};
  op.install_cancel = cancel_installer(slot);
  return op;
}
}  // namespace detail

}  // namespace prodsm::asio
