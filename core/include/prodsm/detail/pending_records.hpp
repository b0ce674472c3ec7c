// SPDX-License-Identifier: Apache-2.0
#pragma once
// prodsm::detail::PendingRecords: R3's max_pending_records bound, as both producer clients
// (ds and s2 ProducerClient) apply it in front of their core. A record counts from its
// acceptance until the adapter delivered its outcome (on_delivered): the core cannot see
// that, since it forgets a record once its outcome is out. The acceptances are also told
// to the submit-to-ack latency (AckLatency). Time is a parameter (D1).
//
// A refusal for max_pending_records seals the core's partial batch (R2: the records whose
// outcomes would free room must go out, whatever the linger) and asks for
// CapacityAvailable once room comes back. The caller drives its core after every call.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/detail/ack_latency.hpp"
#include "prodsm/producer.hpp"

namespace prodsm::detail {

class PendingRecords {
 public:
  /// `max_pending_records`: records accepted and not yet delivered, at most (R3; the
  /// client's validated option, >= 1).
  explicit PendingRecords(std::uint64_t max_pending_records) : max_{max_pending_records} {}

  /// Core::submit behind the bound: would_block "max_pending_records reached" (the
  /// partial batch sealed, R2) when the open core has no room left.
  template <class Core>
  tl::expected<Ticket, Rejection> submit(Core& core, Instant now, std::string_view record, AckLatency& latency) {
    if (pending() >= max_ && core.state() == ProducerState::open) return refuse(core, now);
    auto r = core.submit(now, record);
    if (r) {
      ++accepted_;
      latency.accepted(*r, 1, now);
    }
    return r;
  }

  /// Core::submit_many of the prefix that fits; a list cut short by the bound is refused
  /// at its first record left out, as Core::submit would be (would_block, R2 seal). A core
  /// that is not open refuses by itself, whatever the bound.
  template <class Core>
  SubmitManyResult submit_many(Core& core, Instant now, std::span<const std::string_view> records,
                               AckLatency& latency) {
    const std::uint64_t room = core.state() == ProducerState::open ? max_ - std::min(pending(), max_) : records.size();
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(room, records.size()));
    SubmitManyResult r = core.submit_many(now, records.first(take));
    accepted_ += r.accepted;
    latency.accepted(r.first, r.accepted, now);
    if (!r.refused && r.accepted < records.size()) r.refused = refuse(core, now).error();
    return r;
  }

  /// The adapter delivered `records` outcomes. True when a refusal for the bound is
  /// waiting for room and there is some now: the caller emits CapacityAvailable (R3).
  bool on_delivered(std::uint64_t records) {
    delivered_ = std::min(accepted_, delivered_ + records);
    if (!wanted_ || pending() >= max_) return false;
    wanted_ = false;
    return true;
  }

  /// Records accepted whose outcome the adapter has not yet delivered.
  [[nodiscard]] std::uint64_t pending() const noexcept { return accepted_ - delivered_; }

 private:
  template <class Core>
  tl::expected<Ticket, Rejection> refuse(Core& core, Instant now) {
    wanted_ = true;                // R3: CapacityAvailable once the adapter delivered some
    core.seal_partial_batch(now);  // R2: the records to deliver go out, whatever the linger
    return tl::unexpected(Rejection{RejectReason::would_block, "max_pending_records reached", {}});
  }

  std::uint64_t max_;
  std::uint64_t accepted_ = 0;
  std::uint64_t delivered_ = 0;
  bool wanted_ = false;  ///< a submit was refused for the bound
};

}  // namespace prodsm::detail
