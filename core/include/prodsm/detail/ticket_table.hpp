// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file ticket_table.hpp
/// Internal: what an adapter keeps per accepted record until its outcome (the handler
/// of a callback, a ticket's shared state), indexed by ticket. Tickets complete in order
/// (P3), so this is a deque with a moving base: O(1) to register, O(records) to take a
/// completed batch's handlers, nothing at all for records registered without one.
/// Shared by both adapters; not part of the public API.

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "prodsm/ids.hpp"

namespace prodsm::detail {

/// Handlers by ticket (see the file comment). `Handler` is movable and default-constructible
/// as "no handler" (a null unique_ptr, shared_ptr or std::function).
template <class Handler>
class TicketTable {
 public:
  /// Registers the handler of `ticket` (tickets registered in increasing order; a gap is
  /// a run of records without handler).
  void put(Ticket ticket, Handler handler) {
    if (ticket.value < base_) return;  // completed already: cannot happen for a fresh ticket
    const std::uint64_t index = ticket.value - base_;
    if (handlers_.size() <= index) handlers_.resize(index + 1);
    handlers_[index] = std::move(handler);
  }

  /// Calls `each(Ticket, Handler&&)` for every registered handler of [first, last], in
  /// ticket order, and forgets them.
  template <class F>
  void take(Ticket first, Ticket last, F&& each) {
    if (handlers_.empty()) {  // only records without handlers so far
      base_ = std::max(base_, last.value + 1);
      return;
    }
    for (std::uint64_t t = std::max(first.value, base_); t <= last.value; ++t) {
      if (handlers_.empty()) {
        base_ = last.value + 1;
        return;
      }
      Handler h = std::move(handlers_.front());
      handlers_.pop_front();
      ++base_;
      if (h) each(Ticket{t}, std::move(h));
    }
  }

  /// Registered handlers not yet taken (records without one in between included).
  [[nodiscard]] std::size_t size() const noexcept { return handlers_.size(); }

 private:
  std::deque<Handler> handlers_;  ///< index = ticket - base_
  std::uint64_t base_ = 0;
};

}  // namespace prodsm::detail
