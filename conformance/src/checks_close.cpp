// SPDX-License-Identifier: Apache-2.0
// Close: C1, C2, C3, C5 (C4 is an adapter clause) — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

Result check_c1(const Checked& c) {
  const auto& x = c.index;
  if (x.closeds.size() > 1) return violation("C1", "Closed was emitted twice", {x.closeds[0].step, x.closeds[1].step});
  if (x.closeds.empty()) return std::nullopt;
  const auto& closed = x.closeds.front();
  if (!close_or_abort_step(x)) return violation("C1", "Closed without close or abort", {closed.step});
  bool all_ok = true;
  for (std::uint64_t k = 0; k < x.tickets.size() && c.caps.per_record_completions; ++k) {
    const auto& tk = x.tickets[k];
    if (tk.completions == 0 || tk.done_seq > closed.seq) {
      return violation("C1", "closed before " + t(k) + " completed", {tk.submit_step, closed.step});
    }
    all_ok = all_ok && tk.ok;
  }
  // Success iff every record succeeded and no terminal error. With per-record outcomes a
  // failed record forbids success, and a failure needs a failed record, an abort (C5) or a
  // terminal error the model predicts (a stray ack fails the producer with no record at
  // stake); whether that terminal error was right is judged by the E clauses. Without
  // per-record outcomes the model decides.
  const bool aborted = !x.abort_steps.empty() && x.abort_steps.front() <= closed.step;
  const bool failure_allowed = aborted || c.prediction.terminal;
  const bool wrong = c.caps.per_record_completions ? (closed.obs->ok ? !all_ok || aborted : all_ok && !failure_allowed)
                                                   : closed.obs->ok != !failure_allowed;
  if (wrong) {
    return violation(
        "C1",
        std::string("close reported ") + (closed.obs->ok ? "success" : "failure") + " but the records say otherwise",
        {closed.step});
  }
  for (std::size_t s : x.close_steps) {
    const auto& r = x.trace.steps[s].result;
    if (s > closed.step && r.kind != SyncResult::Kind::closed_result) {
      return violation("C1", "a second close did not return the close result at once", {closed.step, s});
    }
    if (s > closed.step && (r.ok != closed.obs->ok || (!r.ok && r.error && r.error->code != closed.obs->error.code))) {
      return violation("C1", "a second close returned another result", {closed.step, s});
    }
  }
  return std::nullopt;
}

Result check_c2(const Checked& c) {
  const auto& x = c.index;
  const auto end = close_or_abort_step(x);
  if (!end) return std::nullopt;
  for (std::size_t i = *end + 1; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if ((s.input.kind == Input::Kind::submit || s.input.kind == Input::Kind::flush) &&
        !(s.result.kind == SyncResult::Kind::rejected && s.result.reason == RejectReason::closed)) {
      return violation("C2", "a submit or flush after close was not refused with `closed`", {*end, i});
    }
  }
  return std::nullopt;
}

Result check_c3(const Checked& c) {
  const auto& x = c.index;
  if (x.closeds.empty()) return std::nullopt;
  const auto& closed = x.closeds.front();
  // A flush issued after close/abort should have been refused: C2 judges it.
  const auto end = close_or_abort_step(x);
  for (const auto& f : x.flushes) {
    if (!f.accepted || (end && f.step > *end)) continue;
    const auto* bd = barrier_done(x, f.barrier);
    // Blocking calls returning (Capabilities::blocking_outcomes) come in the scheduler's
    // order: there the barrier must have returned by the end of Closed's step.
    const bool late =
        c.caps.blocking_outcomes ? bd != nullptr && bd->step > closed.step : bd != nullptr && bd->seq > closed.seq;
    if (bd == nullptr || late) {
      return violation("C3", "flush " + std::to_string(f.barrier) + " was still pending when Closed came",
                       {f.step, closed.step});
    }
  }
  return std::nullopt;
}

Result check_c5(const Checked& c) {
  const auto& x = c.index;
  const auto& p = c.prediction;
  if (!p.terminal || *p.terminal != ErrorCode::aborted) return std::nullopt;
  for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
    const auto& tk = x.tickets[k];
    if (p.tickets[k] != Outcome::failed) continue;
    if (tk.completions == 0) return violation("C5", t(k) + " was left unresolved by abort", {p.terminal_step});
    if (tk.error.code != ErrorCode::aborted) {
      return violation("C5", t(k) + " failed with " + std::string(to_string(tk.error.code)) + ", not aborted",
                       {p.terminal_step, tk.done_step});
    }
    if (c.caps.classifies_certainty && !tk.batch && tk.error.certainty != Certainty::definite) {
      return violation("C5", t(k) + " was never sent but its abort is marked indefinite", {tk.done_step});
    }
  }
  if (x.closeds.empty()) return violation("C5", "abort did not end with Closed", {p.terminal_step});
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
