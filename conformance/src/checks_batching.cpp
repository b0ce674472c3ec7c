// SPDX-License-Identifier: Apache-2.0
// Batching: B1, B2, B4, B5 (B3 is checked on configurations) — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

Result check_b1(const Checked& c) {
  const auto& x = c.index;
  const auto& cfg = x.config;
  for (const auto& [id, b] : x.batches) {
    const auto first_send = x.sends[b.sends.front()].step;
    if (b.count > cfg.max_batch_records) {
      return violation(
          "B1", "batch " + std::to_string(id) + " has " + std::to_string(b.count) + " records, above max_batch_records",
          {first_send});
    }
    if (batch_bytes(x, b.first, b.count) > cfg.max_batch_bytes) {
      return violation("B1", "batch " + std::to_string(id) + " exceeds max_batch_bytes", {first_send});
    }
    const std::uint64_t last = b.first + b.count - 1;
    if (last + 1 >= x.tickets.size() || full(x, b)) continue;
    const auto& next = x.tickets[last + 1];
    if (next.batch == std::optional<std::uint64_t>{id}) continue;
    const bool overflow = batch_bytes(x, b.first, b.count) + next.meter > cfg.max_batch_bytes;
    if (overflow) continue;
    // The batch was cut with room left: something between the two submits must seal it.
    const std::size_t from = x.tickets[last].submit_step;
    const Instant first_at = x.tickets[b.first].at;
    // Linger elapsed (B1) by the time the next record came: the batch may have been sealed
    // before it. With linger 0 ("no intentional delay", B2) that is the first record's own
    // instant, so a cut between records submitted at the same instant is allowed too.
    // (Time only moves forward, so this also covers every advance step in between.)
    bool reason = cfg.linger_ns && next.at >= saturating_add(first_at, *cfg.linger_ns);
    for (std::size_t s = from + 1; s < next.submit_step && !reason; ++s) {
      const Step& step = x.trace.steps[s];
      switch (step.input.kind) {
        case Input::Kind::flush:
        case Input::Kind::close:
        case Input::Kind::close_stream: reason = true; break;  // C4: a stream close is a flush barrier
        case Input::Kind::submit:
        case Input::Kind::respond:
          reason = step.result.kind == SyncResult::Kind::rejected && step.result.reason == RejectReason::would_block;
          break;
        default: break;
      }
    }
    if (!reason) {
      for (std::size_t s : x.would_block_steps) {
        if (s > from && s < next.submit_step) reason = true;
      }
    }
    if (!reason) {
      return violation("B1",
                       "batch " + std::to_string(id) + " was sealed with room for " + t(last + 1) +
                           " and no flush, close, linger expiry or would-block in between",
                       {from, next.submit_step, first_send});
    }
  }
  return std::nullopt;
}

Result check_b2(const Checked& c) {
  const auto& x = c.index;
  const auto& cfg = x.config;
  for (const auto& [id, b] : x.batches) {
    const auto& send = x.sends[b.sends.front()];
    const Instant first_at = x.tickets[b.first].at;
    const bool before_linger = !cfg.linger_ns || send.at < saturating_add(first_at, *cfg.linger_ns);
    if (!before_linger || full(x, b)) continue;
    const std::uint64_t last = b.first + b.count - 1;
    bool reason = false;
    if (last + 1 < x.tickets.size() && x.tickets[last + 1].submit_step <= send.step) {
      reason = true;  // the next record started another batch (overflow) before the send
    }
    for (std::size_t s = x.tickets[last].submit_step; s <= send.step && !reason; ++s) {
      const auto kind = x.trace.steps[s].input.kind;
      reason = kind == Input::Kind::flush || kind == Input::Kind::close || kind == Input::Kind::close_stream;
    }
    for (std::size_t s : x.would_block_steps) {
      if (s >= x.tickets[last].submit_step && s <= send.step) reason = true;
    }
    if (!reason) {
      return violation("B2",
                       "batch " + std::to_string(id) + " was sent before its linger elapsed" +
                           (cfg.linger_ns ? std::string{} : std::string{" (linger disabled)"}) +
                           " without being full, flushed, closed or blocked",
                       {x.tickets[b.first].submit_step, send.step});
    }
  }
  return std::nullopt;
}

Result check_b4(const Checked& c) {
  const auto& x = c.index;
  const auto& cfg = x.config;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if (s.input.kind != Input::Kind::submit) continue;
    const bool oversized = cfg.meter(s.input.record.size()) + cfg.batch_overhead() > cfg.max_batch_bytes;
    if (oversized && s.result.kind == SyncResult::Kind::ticket) {
      return violation("B4", "a record larger than max_batch_bytes was accepted", {i});
    }
    if (!oversized && s.result.kind == SyncResult::Kind::rejected &&
        s.result.reason == RejectReason::record_too_large) {
      return violation("B4", "a record that fits max_batch_bytes was refused as too large", {i});
    }
    // On real time a timer may act during any step: only virtual time shows that the
    // refusal itself changed nothing.
    if (oversized && s.result.kind == SyncResult::Kind::rejected && s.result.reason == RejectReason::record_too_large &&
        !s.observed.empty() && !cfg.measured_time) {
      return violation("B4", "refusing an oversized record changed the producer", {i});
    }
  }
  return std::nullopt;
}

Result check_b5(const Checked& c) {
  const auto& x = c.index;
  for (const auto& s : x.sends) {
    if (s.obs && s.obs->count == 0) return violation("B5", "an empty batch was sent", {s.step});
  }
  if (!x.malformed_sends.empty()) {
    return violation("B5", "a batch was sent with no accepted record", {x.malformed_sends.front()});
  }
  for (const auto& f : x.flushes) {
    if (!f.accepted) continue;
    for (const auto& [id, b] : x.batches) {
      if (b.first < f.cutoff && f.cutoff < b.first + b.count) {
        return violation("B5", "batch " + std::to_string(id) + " spans flush barrier " + std::to_string(f.barrier),
                         {f.step, x.sends[b.sends.front()].step});
      }
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
