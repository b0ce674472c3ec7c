// SPDX-License-Identifier: Apache-2.0
// Flush barrier: F1–F5 — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

namespace {

/// F1's second half on a target without per-record outcomes, on virtual time (as F2 is
/// judged there): a barrier that reports success arrives no earlier than the step in which
/// the send of every record before it was acknowledged. A record whose send is never
/// acknowledged is F5's to judge (the barrier may have succeeded over its failure).
Result check_f1_waits_for_the_acks(const Checked& c) {
  const auto& x = c.index;
  if (!c.caps.virtual_time || c.caps.measured_time) return std::nullopt;
  for (const auto& f : x.flushes) {
    if (!f.accepted) continue;
    const auto* bd = barrier_done(x, f.barrier);
    if (bd == nullptr || !bd->obs->ok) continue;
    for (std::uint64_t k = 0; k < f.cutoff && k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      if (!tk.batch) continue;
      const auto acked = acked_at(x, x.batches.at(*tk.batch));
      if (!acked || *acked <= bd->step) continue;
      return violation("F1",
                       "flush " + std::to_string(f.barrier) + " completed before " + t(k) +
                           " it covers was acknowledged (its send was acknowledged later)",
                       {f.step, bd->step, *acked});
    }
  }
  return std::nullopt;
}

/// F1's second half: a barrier that reports success arrives only once every record ordered
/// before it was acknowledged (judged on per-record outcomes; blocking calls' returns, in
/// the scheduler's order, by step). A failed barrier's timing is F5's to judge.
Result check_f1_waits_for_the_prefix(const Checked& c) {
  const auto& x = c.index;
  if (!c.caps.per_record_completions) return check_f1_waits_for_the_acks(c);
  for (const auto& f : x.flushes) {
    if (!f.accepted) continue;
    const auto* bd = barrier_done(x, f.barrier);
    if (bd == nullptr || !bd->obs->ok) continue;
    for (std::uint64_t k = 0; k < f.cutoff && k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      const bool early =
          tk.completions == 0 || (c.caps.blocking_outcomes ? tk.done_step > bd->step : tk.done_seq > bd->seq);
      if (!early) continue;
      if (tk.completions == 0) {
        return violation("F1",
                         "flush " + std::to_string(f.barrier) + " completed before " + t(k) +
                             " it covers was acknowledged (it never completed)",
                         {tk.submit_step, f.step, bd->step});
      }
      return violation(
          "F1", "flush " + std::to_string(f.barrier) + " completed before " + t(k) + " it covers was acknowledged",
          {f.step, bd->step, tk.done_step});
    }
  }
  return std::nullopt;
}

}  // namespace

Result check_f1(const Checked& c) {
  if (auto early = check_f1_waits_for_the_prefix(c)) return early;
  const auto& x = c.index;
  if (epoch_changed(x)) return std::nullopt;  // one batch in flight during a claim (S5)
  for (const auto& f : x.flushes) {
    if (!f.accepted || f.cutoff == 0) continue;
    const auto& last = x.tickets[f.cutoff - 1];
    if (last.completions > 0 && last.done_step <= f.step) continue;
    const bool sent = last.batch && x.sends[x.batches.at(*last.batch).sends.front()].step <= f.step;
    if (sent) continue;
    if (in_flight_after(x, f.step) < x.config.max_in_flight && !some_batch_waiting(x, f.step) &&
        !c.prediction.terminal) {
      return violation("F1",
                       "flush " + std::to_string(f.barrier) + " did not send the partial batch at once (" +
                           t(f.cutoff - 1) + " unsent, in-flight slots free)",
                       {last.submit_step, f.step});
    }
  }
  return std::nullopt;
}

/// The step in which record `k` was known durable: its own successful completion, or on a
/// target that reports no per-record outcomes (virtual time only, F2's applicability) the
/// step in which a send carrying it was acknowledged. Nothing when it was not (yet), or
/// failed.
std::optional<std::size_t> durable_at(const Checked& c, std::uint64_t k) {
  const auto& tk = c.index.tickets[k];
  if (c.caps.per_record_completions) {
    if (tk.completions == 0 || !tk.ok) return std::nullopt;
    return tk.done_step;
  }
  if (!tk.batch) return std::nullopt;
  return acked_at(c.index, c.index.batches.at(*tk.batch));
}

Result check_f2(const Checked& c) {
  const auto& x = c.index;
  for (const auto& f : x.flushes) {
    if (!f.accepted) continue;
    std::size_t ready = f.step;
    bool all_ok = true;
    for (std::uint64_t k = 0; k < f.cutoff && all_ok; ++k) {
      const auto at = durable_at(c, k);
      all_ok = at.has_value();
      if (at) ready = std::max(ready, *at);
    }
    if (!all_ok) continue;
    const auto* bd = barrier_done(x, f.barrier);
    // A barrier that completed early did not wait for anything: F1 judges that.
    if (bd != nullptr && bd->step < ready) continue;
    if (bd == nullptr) {
      return violation(
          "F2", "flush " + std::to_string(f.barrier) + " never completed although every record before it was durable",
          {f.step, ready});
    }
    if (bd->step != ready) {
      return violation("F2",
                       "flush " + std::to_string(f.barrier) +
                           " completed later than the step in which every record before it was durable",
                       {f.step, ready, bd->step});
    }
  }
  return std::nullopt;
}

Result check_f3(const Checked& c) {
  const auto& x = c.index;
  // A flush at or after close/abort is C2's to judge: it must be refused, not be empty.
  const auto end = close_or_abort_step(x);
  for (const auto& f : x.flushes) {
    if (!f.accepted || (end && f.step >= *end)) continue;
    bool pending = false;
    for (std::uint64_t k = 0; k < f.cutoff; ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions == 0 || tk.done_step >= f.step) pending = true;
    }
    if (pending) continue;
    const Step& step = x.trace.steps[f.step];
    const bool sent = std::any_of(step.observed.begin(), step.observed.end(),
                                  [](const Observation& o) { return o.kind == Observation::Kind::send; });
    const auto* bd = barrier_done(x, f.barrier);
    if (bd == nullptr || bd->step != f.step || sent) {
      return violation("F3", "an empty flush did not complete at once without sending", {f.step});
    }
  }
  return std::nullopt;
}

Result check_f4(const Checked& c) {
  const auto& x = c.index;
  const auto end = close_or_abort_step(x);
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if ((s.input.kind == Input::Kind::submit || s.input.kind == Input::Kind::flush) &&
        s.result.kind == SyncResult::Kind::rejected && s.result.reason == RejectReason::closed && (!end || i < *end)) {
      return violation("F4", "the producer refused with `closed` although it was never closed", {i});
    }
  }
  return std::nullopt;
}

Result check_f5(const Checked& c) {
  const auto& x = c.index;
  for (const auto& bd : x.barrier_dones) {
    auto it = x.flush_by_barrier.find(bd.obs->barrier);
    if (it == x.flush_by_barrier.end()) continue;
    const auto& f = x.flushes[it->second];
    // Judged on the records' reported outcomes; a target without per-record outcomes is
    // judged on the reference model's.
    std::optional<std::uint64_t> failed;
    for (std::uint64_t k = 0; k < f.cutoff; ++k) {
      const bool did_fail = c.caps.per_record_completions ? (x.tickets[k].completions > 0 && !x.tickets[k].ok)
                                                          : c.prediction.tickets[k] == Outcome::failed;
      if (did_fail) {
        failed = k;
        break;
      }
    }
    if (bd.obs->ok && failed) {
      return violation("F5",
                       "flush " + std::to_string(f.barrier) + " succeeded although " + t(*failed) + " it covers failed",
                       {f.step, x.tickets[*failed].done_step, bd.step});
    }
    if (!bd.obs->ok && !failed) {
      return violation("F5", "flush " + std::to_string(f.barrier) + " failed although every record it covers succeeded",
                       {f.step, bd.step});
    }
    if (!bd.obs->ok && failed && x.tickets[*failed].completions > 0 &&
        bd.obs->error.code != x.tickets[*failed].error.code) {
      return violation("F5",
                       "flush " + std::to_string(f.barrier) + " failed with " +
                           std::string(to_string(bd.obs->error.code)) + ", not the sticky " +
                           std::string(to_string(x.tickets[*failed].error.code)),
                       {x.tickets[*failed].done_step, bd.step});
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
