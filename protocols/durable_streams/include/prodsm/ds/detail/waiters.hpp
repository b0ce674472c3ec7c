// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file waiters.hpp
/// Internal: what an adapter keeps for the producer client's events — the handler of
/// each record (by ticket), of each flush (by barrier), of each close and stream close —
/// and the routing of every ClientEvent to them. Both adapters use it; they only say how
/// a completion is delivered (a strand, a dispatcher thread: A1, A2), through a sink.
/// Not part of the public API.

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "prodsm/detail/ticket_table.hpp"
#include "prodsm/ds/client.hpp"

namespace prodsm::ds::detail {

/// Handlers are movable and default-constructible as "none" (null pointers).
template <class RecordHandler, class VoidHandler, class StreamCloseHandler>
class Waiters {
 public:
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

  /// Routes `event` to its waiters through `sink`:
  ///  - sink.records(RecordsCompleted&&, RecordBatch&&, std::uint64_t count): a batch's
  ///    records completed (count = every record of the range, handler or not);
  ///  - sink.complete(VoidHandler&&, VoidResult): a flush or close completed;
  ///  - sink.complete(StreamCloseHandler&&, CloseStreamResult): a stream close completed;
  ///  - sink.closed(const VoidResult&): the producer closed (after the close handlers);
  ///  - sink.capacity(): capacity came back (R1, R3).
  template <class Sink>
  void route(ClientEvent& event, Sink& sink) {
    std::visit([&](auto& e) { route_one(e, sink); }, event);
  }

 private:
  template <class Sink>
  void route_one(RecordsCompleted& done, Sink& sink) {
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
  template <class Sink>
  void route_one(StreamCloseCompleted& done, Sink& sink) {
    auto it = stream_closes_.find(done.op);
    if (it == stream_closes_.end()) return;
    auto handlers = std::move(it->second);
    stream_closes_.erase(it);
    for (auto& h : handlers) sink.complete(std::move(h), CloseStreamResult(done.result));
  }

  prodsm::detail::TicketTable<RecordHandler> records_;
  std::unordered_map<std::uint64_t, VoidHandler> flushes_;
  std::vector<VoidHandler> closes_;
  std::optional<VoidResult> close_result_;
  std::unordered_map<std::uint64_t, std::vector<StreamCloseHandler>> stream_closes_;
};

}  // namespace prodsm::ds::detail
