// SPDX-License-Identifier: Apache-2.0
// Capacity: R1–R3 — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

Result check_r1(const Checked& c) {
  const auto& x = c.index;
  std::uint64_t unacked = 0;
  std::uint64_t ticket = 0;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    while (ticket < x.tickets.size() && x.tickets[ticket].submit_step == i) unacked += x.tickets[ticket++].meter;
    for (const auto& o : x.trace.steps[i].observed) {
      if (o.kind != Observation::Kind::done) continue;
      for (std::uint64_t k = o.first_ticket; k <= o.last_ticket && k < x.tickets.size(); ++k)
        unacked -= x.tickets[k].meter;
    }
    if (unacked > x.config.max_unacked_bytes) {
      return violation("R1", "unacknowledged bytes " + std::to_string(unacked) + " exceed max_unacked_bytes", {i});
    }
    if (in_flight_after(x, i) > x.config.max_in_flight) {
      return violation("R1", "more batches in flight than max_in_flight", {i});
    }
  }
  // The announcement half of R1, on targets that announce (capacity_signal).
  for (std::size_t w : c.caps.capacity_signal ? x.would_block_steps : std::vector<std::size_t>{}) {
    for (std::size_t i = w + 1; i < x.trace.steps.size(); ++i) {
      const auto& obs = x.trace.steps[i].observed;
      const auto done =
          std::find_if(obs.begin(), obs.end(), [](const Observation& o) { return o.kind == Observation::Kind::done; });
      if (done == obs.end()) continue;
      const bool announced = std::any_of(x.capacity.begin(), x.capacity.end(),
                                         [&](const auto& cap) { return cap.first > w && cap.first <= i; });
      if (!announced) {
        return violation("R1", "capacity freed after a would-block but CapacityAvailable was not announced", {w, i});
      }
      break;
    }
  }
  return std::nullopt;
}

Result check_r2(const Checked& c) {
  const auto& x = c.index;
  if (epoch_changed(x)) return std::nullopt;
  for (std::size_t w : x.would_block_steps) {
    if (x.trace.steps[w].input.kind != Input::Kind::submit) continue;
    const std::uint64_t accepted = x.accepted_before[w];
    if (accepted == 0) continue;
    const auto& last = x.tickets[accepted - 1];
    if (last.completions > 0 && last.done_step <= w) continue;
    const bool sent = last.batch && x.sends[x.batches.at(*last.batch).sends.front()].step <= w;
    if (!sent && in_flight_after(x, w) < x.config.max_in_flight && !some_batch_waiting(x, w) &&
        !c.prediction.terminal) {
      return violation("R2", "a would-block left the partial batch waiting for its linger (" + t(accepted - 1) + ")",
                       {last.submit_step, w});
    }
  }
  return std::nullopt;
}

Result check_r3(const Checked& c) {
  const auto& x = c.index;
  std::size_t claims = 0;
  std::optional<std::uint64_t> epoch;
  for (const auto& s : x.sends) {
    if (!s.obs || !s.obs->stamp.sequenced) continue;
    if (epoch && s.obs->stamp.epoch != *epoch) ++claims;
    epoch = s.obs->stamp.epoch;
  }
  for (const auto& [id, b] : x.batches) {
    std::size_t gaps = 0;
    for (std::size_t s : b.sends) {
      const auto* r = x.sends[s].response;
      if (r && r->kind == Response::Kind::fail && r->error.code == ErrorCode::sequence_gap) ++gaps;
    }
    if (b.sends.size() > x.config.max_attempts + gaps + claims) {
      return violation("R3",
                       "batch " + std::to_string(id) + " was sent " + std::to_string(b.sends.size()) +
                           " times, more than retry.max_attempts allows",
                       {x.sends[b.sends.front()].step, x.sends[b.sends.back()].step});
    }
  }
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    std::uint32_t live = 0;
    for (const auto& [id, b] : x.batches) {
      if (x.sends[b.sends.front()].step <= i && !(b.completed && b.completed_step <= i)) ++live;
    }
    if (live > x.config.max_unacked_batches) {
      return violation("R3", "more unacknowledged batches than max_unacked_batches", {i});
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
