// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file ids.hpp
/// Strongly typed identifiers issued by the Producer core (P1, P2).

#include <compare>
#include <cstdint>

namespace prodsm {

/// Identifies one accepted record (P2). Tickets are issued densely from 0 in submit
/// order, so ticket order is submission order (P3).
struct Ticket {
  std::uint64_t value = 0;  ///< 0, 1, 2, ... in submit order
  friend constexpr auto operator<=>(Ticket, Ticket) = default;
};

/// Identifies one batch, issued densely from 0 in seal order. Adapters echo it back
/// with each acknowledgement or failure (handle_ack / handle_failure).
struct BatchId {
  std::uint64_t value = 0;  ///< 0, 1, 2, ... in seal order
  friend constexpr auto operator<=>(BatchId, BatchId) = default;
};

/// Identifies one flush barrier (F1–F5), issued densely from 0 in flush order.
struct BarrierId {
  std::uint64_t value = 0;  ///< 0, 1, 2, ... in flush order
  friend constexpr auto operator<=>(BarrierId, BarrierId) = default;
};

}  // namespace prodsm
