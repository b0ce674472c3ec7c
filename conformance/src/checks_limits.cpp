// SPDX-License-Identifier: Apache-2.0
// Limits: S8 — docs/contract.md. The protocol numbers a producer stamps are bounded
// (Durable Streams Producer-Epoch and Producer-Seq 0..2^53-1; S2 seq_nums u64).
// Positive space: every stamp on the wire is within its range. Negative space: a submit
// is refused with sequence_exhausted only when the records accepted before it could
// have used the numbering up.
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

namespace {
constexpr std::uint64_t kDsMax = (1ULL << 53) - 1;  ///< PROTOCOL.md: Producer-Epoch and Producer-Seq
}  // namespace

Result check_s8(const Checked& c) {
  const auto& x = c.index;
  const bool ds = x.config.protocol == Protocol::durable_streams;
  for (const auto& s : x.sends) {
    if (!s.obs || !s.obs->stamp.sequenced) continue;
    const auto& st = s.obs->stamp;
    if (ds && (st.epoch > kDsMax || st.seq > kDsMax)) {
      return violation("S8",
                       "a batch was sent with Producer-Epoch " + std::to_string(st.epoch) + ", Producer-Seq " +
                           std::to_string(st.seq) + ": beyond 2^53-1",
                       {s.step});
    }
    if (!ds && st.match_seq_num && s.obs->count > UINT64_MAX - *st.match_seq_num) {
      return violation("S8",
                       "a batch of " + std::to_string(s.obs->count) + " records was sent with match_seq_num " +
                           std::to_string(*st.match_seq_num) + ": its end passes 2^64-1",
                       {s.step});
    }
  }
  // Records accepted so far, against the numbers left when the producer started.
  std::uint64_t accepted = 0;
  bool claimed = false;  // an epoch claim (S5) starts the numbering again
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& step = x.trace.steps[i];
    for (const auto& o : step.observed) {
      if (o.kind == Observation::Kind::send && o.stamp.sequenced && o.stamp.epoch != x.config.initial_epoch) {
        claimed = true;
      }
    }
    if (step.input.kind != Input::Kind::submit) continue;
    if (step.result.kind == SyncResult::Kind::ticket) ++accepted;
    if (step.result.kind != SyncResult::Kind::rejected || step.result.reason != RejectReason::sequence_exhausted) {
      continue;
    }
    bool possible = false;
    if (ds) {
      // Each accepted record can use at most one seq (one batch).
      possible =
          x.config.sequencing == Sequencing::ds_idempotent && !claimed && accepted >= kDsMax - x.config.initial_seq + 1;
    } else if (x.config.initial_match_seq_num) {
      possible = accepted >= UINT64_MAX - *x.config.initial_match_seq_num;
    }
    if (!possible) {
      return violation("S8",
                       "a submit was refused with sequence_exhausted after " + std::to_string(accepted) +
                           " records, which cannot have used up the sequence numbers",
                       {i});
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
