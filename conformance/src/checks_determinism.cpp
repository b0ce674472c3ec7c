// SPDX-License-Identifier: Apache-2.0
// Determinism: D3 on a trace, D2 by replay (D1, D4 are structural) — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

Result check_d3(const Checked& c) {
  const auto& x = c.index;
  // The first delivery_timeout failure is the expiry itself (later ones carry the sticky
  // error, E1): the oldest record it fails must have reached its deadline by then.
  for (const auto& d : x.dones) {
    if (d.obs->ok) continue;
    if (d.obs->error.code != ErrorCode::delivery_timeout) return std::nullopt;
    // The completion's own instant when the target reports it (a wire target measures
    // each observation), else its step's.
    const Instant at = d.obs->at.value_or(x.trace.steps[d.step].input.at);
    const auto& oldest = x.tickets[d.obs->first_ticket];
    if (at < saturating_add(oldest.at, x.config.delivery_timeout_ns)) {
      return violation("D3", "delivery timeout fired before the deadline", {oldest.submit_step, d.step});
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail

namespace prodsm::conformance {

std::optional<Violation> check_replay(const Trace& first, const Trace& second) {
  const std::size_t n = std::min(first.steps.size(), second.steps.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (describe(first.steps[i], i) != describe(second.steps[i], i)) {
      return Violation{"D2", "replaying the same inputs observed something else at this step", {i}};
    }
    const auto& a = first.steps[i].observed;
    const auto& b = second.steps[i].observed;
    for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
      if (a[k].body != b[k].body || a[k].record_ends != b[k].record_ends) {
        return Violation{"D2", "replaying the same inputs sent other bytes", {i}};
      }
      // Within a step (an advance that fires several timers) each observation's own
      // instant must replay too: a backoff jittered by an unseeded generator moves a
      // resend inside the step, which the step's text alone does not show.
      if (a[k].at != b[k].at) {
        return Violation{"D2", "replaying the same inputs observed the same thing at another instant", {i}};
      }
    }
  }
  if (first.steps.size() != second.steps.size()) {
    return Violation{"D2", "replaying the same inputs took another number of steps", {n}};
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance
