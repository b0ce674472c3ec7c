// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file lifecycle.hpp
/// Internal: the allowed changes of a Producer's lifecycle (ProducerState, producer.hpp).
/// Producer<Policy>::Impl::set_lifecycle is the only writer and checks every change
/// against this table in builds with PRODSM_CHECK_INVARIANTS (h11 style: the table is
/// the spec).

#include <cstddef>

#include "prodsm/producer.hpp"

namespace prodsm::detail {

/// Whether the lifecycle may change from `from` to `to`:
///  - open -> closing: close() (C1; C2 refuses submits from then on);
///  - open -> failed, closing -> failed: the first terminal error (E1);
///  - closing -> closed: the last batch and barrier completed (C1);
///  - failed -> closed: close() or abort() after a terminal error (C1, E1), or at once when
///    the failure ended a close.
/// Nothing leaves `closed`, nothing goes back to `open`, and no change is to itself.
constexpr bool lifecycle_edge_allowed(ProducerState from, ProducerState to) noexcept {
  using S = ProducerState;
  switch (from) {
    case S::open: return to == S::closing || to == S::failed;
    case S::closing: return to == S::failed || to == S::closed;
    case S::failed: return to == S::closed;
    case S::closed: return false;
  }
  return false;
}

/// Open or closing: outcomes and timers still matter (the producer's own `live()` and the
/// invariant checks both ask this).
constexpr bool is_live(ProducerState s) noexcept {
  return s == ProducerState::open || s == ProducerState::closing;
}

}  // namespace prodsm::detail
