// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file action.hpp
/// What the Producer core asks its driver to do (quinn-proto style `poll_*` outputs).
/// Drain them with Producer::poll_action() after every input (str0m style).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include <tl/expected.hpp>

#include "prodsm/error.hpp"
#include "prodsm/ids.hpp"

namespace prodsm {

/// Send one attempt of a sealed batch. The body was framed once, at seal, in the
/// protocol's body format; it is byte-identical on every attempt (S2). The spans stay
/// valid until the TicketsCompleted action for this batch has been polled: the core
/// owns the bytes until then (ngtcp2 style: the buffer is released on acknowledgement).
/// The driver must eventually report exactly one outcome for (batch, attempt) through
/// handle_ack or handle_failure, unless the Producer failed or was aborted first; an
/// outcome reported before this action was polled is for an attempt never sent (E5).
template <class Policy>
struct SendBatch {
  BatchId batch;                               ///< echo back in handle_ack / handle_failure
  std::uint32_t attempt = 1;                   ///< 1 for the first send, then 2, 3, ... (echo back too)
  Ticket first_ticket;                         ///< the batch's first record; records are first_ticket + i
  std::uint32_t record_count = 0;              ///< records in the batch, >= 1 (B5)
  std::span<const std::byte> body;             ///< framed body (bytes), owned by the core
  std::span<const std::uint32_t> record_ends;  ///< end offset (bytes) of each record in
                                               ///< body when Policy::kKeepsRecordEnds, else empty
  typename Policy::Stamp stamp;                ///< sequencing stamps, fixed at seal (S1, S2, S5)
};

/// A contiguous range of tickets [first, last] (one batch) completed with one result
/// (P2, P3, P4). On success the result holds the batch acknowledgement; record i of the
/// batch is ticket first + i (P4). On failure it holds the sticky terminal error, with
/// `certainty` describing this range (E1, E2, C5).
template <class Policy>
struct TicketsCompleted {
  BatchId batch;                                     ///< the batch these tickets were sent in
  Ticket first;                                      ///< first ticket of the range (inclusive)
  Ticket last;                                       ///< last ticket of the range (inclusive); last >= first
  tl::expected<typename Policy::Ack, Error> result;  ///< the batch's ack, or the terminal error (E1, E2)
};

/// A flush barrier completed (F1–F5): success iff every record ordered before it
/// succeeded; otherwise the sticky terminal error (F5).
struct BarrierCompleted {
  BarrierId barrier;                 ///< as returned by flush()
  tl::expected<void, Error> result;  ///< success, or the sticky terminal error (F5)
};

/// The Producer has finished: close() drained everything, or abort() ran (C1, C5).
/// Always the last action the Producer ever emits; emitted exactly once.
struct Closed {
  /// Success iff the producer never failed: no terminal error (E1) and no abort (C5); then
  /// every record succeeded. Otherwise the sticky terminal error (C1, E1), also when it
  /// failed no record: an invalid_ack for a batch that never existed (E5), an abort after
  /// every record had completed.
  tl::expected<void, Error> result;
};

/// Capacity freed up after a submit was refused with would_block (R1): retry it now.
struct CapacityAvailable {
  friend constexpr bool operator==(CapacityAvailable, CapacityAvailable) = default;
};

/// One output of the Producer core.
template <class Policy>
using Action = std::variant<SendBatch<Policy>, TicketsCompleted<Policy>, BarrierCompleted, Closed, CapacityAvailable>;

}  // namespace prodsm
