// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file waiters.hpp
/// Internal: what an adapter keeps for a producer client's events — the handler of each
/// record (by ticket), of each flush (by barrier), of each close and, for a protocol
/// that closes streams (Durable Streams, S6), of each stream close — and the routing of
/// every event of the client (ds::ClientEvent, s2::ClientEvent) to them. Every adapter
/// producer uses it; the adapter only says how a completion is delivered (a strand, a
/// dispatcher thread: A1, A2), through a sink. Protocol-agnostic: the record and stream
/// close events are recognised by their shape. Not part of the public API.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "prodsm/action.hpp"
#include "prodsm/detail/ticket_table.hpp"

namespace prodsm::detail {

/// A client's "records [first, last] completed" event (ds/s2 RecordsCompleted).
template <class E>
concept RecordsEvent = requires(const E& e) {
  { e.first } -> std::convertible_to<Ticket>;
  { e.last } -> std::convertible_to<Ticket>;
  e.record(e.first);
};

/// A client's "stream close `op` finished" event (ds::StreamCloseCompleted, S6).
template <class E>
concept StreamCloseEvent = requires(const E& e) {
  { e.op } -> std::convertible_to<std::uint64_t>;
  e.result;
};

/// Handlers are movable and default-constructible as "none" (null pointers).
/// StreamCloseHandler is only used by a client with stream close events.
template <class RecordHandler, class VoidHandler, class StreamCloseHandler = std::nullptr_t>
class Waiters {
 public:
  /// A flush's or close's outcome.
  using VoidResult = tl::expected<void, Error>;
  /// The handlers of records [first, last] of a completed batch, in ticket order (A1).
  using RecordBatch = std::vector<std::pair<Ticket, RecordHandler>>;

  /// Registers an accepted record's handler (A4: only accepted records register).
  void add_record(Ticket ticket, RecordHandler handler) { records_.put(ticket, std::move(handler)); }
  /// Registers a flush's handler.
  void add_flush(BarrierId barrier, VoidHandler handler) { flushes_.emplace(barrier.value, std::move(handler)); }
  /// Registers a close's handler. Check close_result() first: once the producer closed,
  /// a later close gets that result at once (C1).
  void add_close(VoidHandler handler) { closes_.push_back(std::move(handler)); }
  /// Registers a stream close's handler (several may wait for one op).
  void add_stream_close(std::uint64_t op, StreamCloseHandler handler) {
    stream_closes_[op].push_back(std::move(handler));
  }
  /// The close's result, once Closed was routed.
  [[nodiscard]] const std::optional<VoidResult>& close_result() const noexcept { return close_result_; }

  /// Routes `event` (a std::variant of the client's events) to its waiters through `sink`:
  ///  - sink.records(RecordsCompleted&&, RecordBatch&&, std::uint64_t count): a batch's
  ///    records completed (count = every record of the range, handler or not);
  ///  - sink.complete(VoidHandler&&, VoidResult): a flush or close completed;
  ///  - sink.complete(StreamCloseHandler&&, result): a stream close completed;
  ///  - sink.closed(const VoidResult&): the producer closed (after the close handlers);
  ///  - sink.capacity(): capacity came back (R1, R3).
  template <class Event, class Sink>
  void route(Event& event, Sink& sink) {
    std::visit([&](auto& e) { route_one(e, sink); }, event);
  }

 private:
  template <RecordsEvent Done, class Sink>
  void route_one(Done& done, Sink& sink) {
    RecordBatch batch;
    records_.take(done.first, done.last, [&](Ticket t, RecordHandler h) { batch.emplace_back(t, std::move(h)); });
    const std::uint64_t count = done.last.value - done.first.value + 1;
    sink.records(std::move(done), std::move(batch), count);
  }
  template <class Sink>
  void route_one(BarrierCompleted& done, Sink& sink) {
    auto it = flushes_.find(done.barrier.value);
    if (it == flushes_.end()) return;
    VoidHandler h = std::move(it->second);
    flushes_.erase(it);
    sink.complete(std::move(h), VoidResult(done.result));
  }
  template <class Sink>
  void route_one(Closed& closed, Sink& sink) {
    close_result_ = closed.result;
    for (auto& h : std::exchange(closes_, {})) sink.complete(std::move(h), VoidResult(closed.result));
    sink.closed(*close_result_);
  }
  template <class Sink>
  void route_one(CapacityAvailable&, Sink& sink) {
    sink.capacity();
  }
  template <StreamCloseEvent Done, class Sink>
  void route_one(Done& done, Sink& sink) {
    auto it = stream_closes_.find(done.op);
    if (it == stream_closes_.end()) return;
    auto handlers = std::move(it->second);
    stream_closes_.erase(it);
    for (auto& h : handlers) sink.complete(std::move(h), done.result);
  }

  TicketTable<RecordHandler> records_;
  std::unordered_map<std::uint64_t, VoidHandler> flushes_;
  std::vector<VoidHandler> closes_;
  std::optional<VoidResult> close_result_;
  std::unordered_map<std::uint64_t, std::vector<StreamCloseHandler>> stream_closes_;
};

}  // namespace prodsm::detail
