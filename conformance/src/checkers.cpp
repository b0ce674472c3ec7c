// SPDX-License-Identifier: Apache-2.0
// One checker per clause (docs/contract.md). Each reads the trace through a TraceIndex
// and the reference model's Prediction, and names the steps that show a violation.
#include "prodsm/conformance/checkers.hpp"

#include <algorithm>
#include <sstream>

#include "prodsm/conformance/model.hpp"
#include "trace_index.hpp"

namespace prodsm::conformance {
namespace detail {
/// The index plus the model's prediction, built once per check.
struct Checked {
  Checked(const Trace& t, const Capabilities& c) : index{t}, prediction{predict(t)}, caps{c} {}
  TraceIndex index;
  Prediction prediction;
  Capabilities caps;
};
}  // namespace detail

namespace {

using detail::Checked;
using Outcome = Prediction::Outcome;
using Result = std::optional<Violation>;

Violation violation(std::string clause, std::string message, std::vector<std::size_t> evidence) {
  std::sort(evidence.begin(), evidence.end());
  evidence.erase(std::unique(evidence.begin(), evidence.end()), evidence.end());
  return Violation{std::move(clause), std::move(message), std::move(evidence)};
}

std::string t(std::uint64_t ticket) { return "ticket " + std::to_string(ticket); }

/// Bytes a batch of tickets [first, first+count) takes (framing included).
std::uint64_t batch_bytes(const detail::TraceIndex& x, std::uint64_t first, std::uint32_t count) {
  std::uint64_t bytes = x.config.batch_overhead();
  for (std::uint64_t i = first; i < first + count && i < x.tickets.size(); ++i) bytes += x.tickets[i].meter;
  return bytes;
}

/// Smallest metered record (decides "full").
std::uint64_t min_meter(const TraceConfig& c) {
  return c.protocol == Protocol::s2 ? c.meter(0) : c.meter(1);
}

bool full(const detail::TraceIndex& x, const detail::BatchInfo& b) {
  return b.count >= x.config.max_batch_records ||
         batch_bytes(x, b.first, b.count) + min_meter(x.config) > x.config.max_batch_bytes;
}

/// Batches in flight at the end of `step`: newest send unanswered by then, batch not
/// completed by then.
std::uint32_t in_flight_after(const detail::TraceIndex& x, std::size_t step) {
  std::uint32_t n = 0;
  for (const auto& [id, b] : x.batches) {
    std::optional<std::size_t> latest;
    for (std::size_t s : b.sends) {
      if (x.sends[s].step <= step) latest = s;
    }
    if (!latest) continue;
    const auto& send = x.sends[*latest];
    const bool answered = send.response_step && *send.response_step <= step;
    const bool completed = b.completed && b.completed_step <= step;
    if (!answered && !completed) ++n;
  }
  return n;
}

/// A batch that got a failure by `step` and was neither resent nor completed by then:
/// it may hold later batches back (backoff, parking).
bool some_batch_waiting(const detail::TraceIndex& x, std::size_t step) {
  for (const auto& [id, b] : x.batches) {
    if (b.completed && b.completed_step <= step) continue;
    std::optional<std::size_t> latest;
    for (std::size_t s : b.sends) {
      if (x.sends[s].step <= step) latest = s;
    }
    if (!latest) continue;
    const auto& send = x.sends[*latest];
    if (send.response_step && *send.response_step <= step && send.response->kind == Response::Kind::fail) {
      return true;
    }
  }
  return false;
}

bool epoch_changed(const detail::TraceIndex& x) {
  for (const auto& s : x.sends) {
    if (s.obs && s.obs->stamp.sequenced && s.obs->stamp.epoch != x.config.initial_epoch) return true;
  }
  return false;
}

std::optional<std::size_t> first_step_of_kind(const detail::TraceIndex& x, Input::Kind kind) {
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    if (x.trace.steps[i].input.kind == kind) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> close_or_abort_step(const detail::TraceIndex& x) {
  std::optional<std::size_t> a = first_step_of_kind(x, Input::Kind::close);
  std::optional<std::size_t> b = first_step_of_kind(x, Input::Kind::abort);
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

// ---- P: ordering and tickets ------------------------------------------------------------

Result check_p1(const Checked& c) {
  const auto& x = c.index;
  if (!x.ticket_ids_out_of_order.empty()) {
    return violation("P1", "tickets are not issued densely in submit order", x.ticket_ids_out_of_order);
  }
  for (const auto& bd : x.barrier_dones) {
    auto it = x.flush_by_barrier.find(bd.obs->barrier);
    if (it == x.flush_by_barrier.end()) {
      return violation("P1", "a barrier completed that no flush created", {bd.step});
    }
    const auto& f = x.flushes[it->second];
    if (!c.caps.per_record_completions) continue;  // nothing to order the barrier against
    for (std::uint64_t k = 0; k < f.cutoff; ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions == 0 || tk.done_seq > bd.seq) {
        return violation("P1", "barrier " + std::to_string(f.barrier) + " completed before " + t(k) +
                                   ", submitted before the flush, completed",
                         {tk.submit_step, f.step, bd.step});
      }
    }
  }
  return std::nullopt;
}

Result check_p2(const Checked& c) {
  const auto& x = c.index;
  for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
    const auto& tk = x.tickets[k];
    if (tk.completions > 1) {
      return violation("P2", t(k) + " completed " + std::to_string(tk.completions) + " times", {tk.submit_step, tk.done_step});
    }
    if (tk.completions == 0 && c.prediction.tickets[k] == Outcome::ok) {
      return violation("P2", t(k) + " was acknowledged, with every record before it, but never completed",
                       {tk.submit_step});
    }
  }
  if (!x.malformed_dones.empty()) {
    return violation("P2", "a completion names tickets that were never accepted", {x.malformed_dones.front()});
  }
  for (const auto& d : x.dones) {
    if (d.obs->last_ticket >= x.accepted_before[d.step + 1]) {
      return violation("P2", "a completion names tickets accepted only later", {d.step});
    }
  }
  if (!x.malformed_sends.empty()) {
    return violation("P2", "a batch was sent with no record or with records never accepted",
                     {x.malformed_sends.front()});
  }
  return std::nullopt;
}

Result check_p3(const Checked& c) {
  const auto& x = c.index;
  std::uint64_t next = 0;
  for (const auto& d : x.dones) {
    if (d.obs->first_ticket != next) {
      return violation("P3", "completion of tickets " + std::to_string(d.obs->first_ticket) + ".." +
                                 std::to_string(d.obs->last_ticket) + " is out of submission order (expected " +
                                 t(next) + " next)",
                       {d.step});
    }
    next = d.obs->last_ticket + 1;
  }
  for (std::size_t i = 1; i < x.barrier_dones.size(); ++i) {
    if (x.barrier_dones[i].obs->barrier < x.barrier_dones[i - 1].obs->barrier) {
      return violation("P3", "barriers completed out of order", {x.barrier_dones[i - 1].step, x.barrier_dones[i].step});
    }
  }
  for (const auto& bd : x.barrier_dones) {
    auto it = x.flush_by_barrier.find(bd.obs->barrier);
    if (it == x.flush_by_barrier.end()) continue;
    const auto cutoff = x.flushes[it->second].cutoff;
    for (const auto& d : x.dones) {
      if (d.obs->first_ticket >= cutoff && d.seq < bd.seq) {
        return violation("P3", "a record submitted after flush " + std::to_string(bd.obs->barrier) +
                                   " completed before that barrier",
                         {x.flushes[it->second].step, d.step, bd.step});
      }
    }
  }
  if (!x.closeds.empty() && x.closeds.front().seq + 1 != x.observations) {
    return violation("P3", "something was observed after Closed (Closed must be last)", {x.closeds.front().step});
  }
  return std::nullopt;
}

Result check_p4(const Checked& c) {
  const auto& x = c.index;
  for (const auto& d : x.dones) {
    if (!d.obs->ok) continue;
    // The completion covers (part of) one sent batch: one range per batch, or one
    // record at a time for SDKs with a promise per record.
    const detail::BatchInfo* batch = nullptr;
    for (const auto& [id, b] : x.batches) {
      if (b.first <= d.obs->first_ticket && d.obs->last_ticket < b.first + b.count) batch = &b;
    }
    if (batch == nullptr) {
      return violation("P4", "a successful completion does not lie within a batch that was sent", {d.step});
    }
    if (x.config.protocol == Protocol::s2) {
      // The ack is the batch's [start, end): one position per record of the batch, and a
      // record reported on its own carries start + its index.
      const auto& a = d.obs->ack;
      const std::uint64_t records = d.obs->last_ticket - d.obs->first_ticket + 1;
      const std::uint64_t span = a.end >= a.start ? a.end - a.start : 0;
      if (a.end < a.start || (span != batch->count && span != records)) {
        return violation("P4", "S2 ack range does not give one position per record", {d.step});
      }
      if (a.seq_num && span == batch->count && *a.seq_num != a.start + (d.obs->first_ticket - batch->first)) {
        return violation("P4", t(d.obs->first_ticket) + " was given position " + std::to_string(*a.seq_num) +
                                   ", not batch start + index",
                         {d.step});
      }
    } else if (d.obs->ack.next_offset.empty() && !d.obs->ack.duplicate) {
      return violation("P4", "Durable Streams success without next offset or duplicate flag", {d.step});
    }
  }
  return std::nullopt;
}

// ---- B: batching ----------------------------------------------------------------------------

Result check_b1(const Checked& c) {
  const auto& x = c.index;
  const auto& cfg = x.config;
  for (const auto& [id, b] : x.batches) {
    const auto first_send = x.sends[b.sends.front()].step;
    if (b.count > cfg.max_batch_records) {
      return violation("B1", "batch " + std::to_string(id) + " has " + std::to_string(b.count) +
                                 " records, above max_batch_records",
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
    bool reason = false;
    for (std::size_t s = from + 1; s < next.submit_step && !reason; ++s) {
      const Step& step = x.trace.steps[s];
      switch (step.input.kind) {
        case Input::Kind::flush:
        case Input::Kind::close:
          reason = true;
          break;
        case Input::Kind::submit:
        case Input::Kind::respond:
          reason = step.result.kind == SyncResult::Kind::rejected &&
                   step.result.reason == RejectReason::would_block;
          break;
        case Input::Kind::advance:
          reason = cfg.linger_ns && step.input.at >= saturating_add(first_at, *cfg.linger_ns);
          break;
        default:
          break;
      }
    }
    if (!reason) {
      for (std::size_t s : x.would_block_steps) {
        if (s > from && s < next.submit_step) reason = true;
      }
    }
    if (!reason) {
      return violation("B1", "batch " + std::to_string(id) + " was sealed with room for " + t(last + 1) +
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
      reason = kind == Input::Kind::flush || kind == Input::Kind::close;
    }
    for (std::size_t s : x.would_block_steps) {
      if (s >= x.tickets[last].submit_step && s <= send.step) reason = true;
    }
    if (!reason) {
      return violation("B2", "batch " + std::to_string(id) + " was sent before its linger elapsed" +
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
    if (oversized && s.result.kind == SyncResult::Kind::rejected &&
        s.result.reason == RejectReason::record_too_large && !s.observed.empty()) {
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

// ---- F: flush barrier ----------------------------------------------------------------------

const detail::BarrierDoneInfo* barrier_done(const detail::TraceIndex& x, std::uint64_t id) {
  for (const auto& bd : x.barrier_dones) {
    if (bd.obs->barrier == id) return &bd;
  }
  return nullptr;
}

Result check_f1(const Checked& c) {
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
      return violation("F1", "flush " + std::to_string(f.barrier) + " did not send the partial batch at once (" +
                                 t(f.cutoff - 1) + " unsent, in-flight slots free)",
                       {last.submit_step, f.step});
    }
  }
  return std::nullopt;
}

Result check_f2(const Checked& c) {
  const auto& x = c.index;
  for (const auto& f : x.flushes) {
    if (!f.accepted) continue;
    std::size_t ready = f.step;
    bool all_ok = true;
    for (std::uint64_t k = 0; k < f.cutoff; ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions == 0) {
        all_ok = false;
        break;
      }
      all_ok = all_ok && tk.ok;
      ready = std::max(ready, tk.done_step);
    }
    if (!all_ok) continue;
    const auto* bd = barrier_done(x, f.barrier);
    if (bd == nullptr || bd->step != ready) {
      return violation("F2", "flush " + std::to_string(f.barrier) +
                                 " did not complete when every record before it was durable",
                       {f.step, ready});
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
        s.result.kind == SyncResult::Kind::rejected && s.result.reason == RejectReason::closed &&
        (!end || i < *end)) {
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
      return violation("F5", "flush " + std::to_string(f.barrier) + " succeeded although " + t(*failed) +
                                 " it covers failed",
                       {f.step, x.tickets[*failed].done_step, bd.step});
    }
    if (!bd.obs->ok && !failed) {
      return violation("F5", "flush " + std::to_string(f.barrier) + " failed although every record it covers succeeded",
                       {f.step, bd.step});
    }
    if (!bd.obs->ok && failed && x.tickets[*failed].completions > 0 &&
        bd.obs->error.code != x.tickets[*failed].error.code) {
      return violation("F5", "flush " + std::to_string(f.barrier) + " failed with " +
                                 std::string(to_string(bd.obs->error.code)) + ", not the sticky " +
                                 std::string(to_string(x.tickets[*failed].error.code)),
                       {x.tickets[*failed].done_step, bd.step});
    }
  }
  return std::nullopt;
}

// ---- C: close -------------------------------------------------------------------------------

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
  const bool wrong = c.caps.per_record_completions
                         ? (closed.obs->ok ? !all_ok || aborted : all_ok && !failure_allowed)
                         : closed.obs->ok != !failure_allowed;
  if (wrong) {
    return violation("C1", std::string("close reported ") + (closed.obs->ok ? "success" : "failure") +
                               " but the records say otherwise",
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
    if (bd == nullptr || bd->seq > closed.seq) {
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

// ---- E: errors ------------------------------------------------------------------------------

Result check_e1(const Checked& c) {
  const auto& x = c.index;
  const auto& p = c.prediction;
  std::optional<ErrorCode> first;
  std::size_t first_step = 0;
  auto see = [&](const Error& e, std::size_t step) -> Result {
    if (!first) {
      first = e.code;
      first_step = step;
      return std::nullopt;
    }
    if (e.code != *first) {
      return violation("E1", std::string("failure ") + std::string(to_string(e.code)) + " after the sticky " +
                                 std::string(to_string(*first)),
                       {first_step, step});
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    for (const auto& o : x.trace.steps[i].observed) {
      if ((o.kind == Observation::Kind::done || o.kind == Observation::Kind::barrier ||
           o.kind == Observation::Kind::closed) && !o.ok) {
        if (auto v = see(o.error, i)) return v;
      }
    }
    const auto& r = x.trace.steps[i].result;
    if (r.kind == SyncResult::Kind::rejected && r.reason == RejectReason::failed && r.error) {
      if (auto v = see(*r.error, i)) return v;
    }
  }
  if (p.terminal) {
    for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions == 0 && p.tickets[k] == Outcome::failed) {
        return violation("E1", t(k) + " never failed although the terminal error " +
                                   std::string(to_string(*p.terminal)) + " happened",
                         {tk.submit_step, p.terminal_step});
      }
      if (tk.completions == 0) continue;
      if (p.tickets[k] == Outcome::ok && !tk.ok) {
        return violation("E1", t(k) + " was acknowledged before the terminal error but reported failed",
                         {p.terminal_step, tk.done_step});
      }
      if (p.tickets[k] == Outcome::failed && tk.ok) {
        return violation("E1", t(k) + " reported success without a valid acknowledgement before the terminal error",
                         {p.terminal_step, tk.done_step});
      }
      if (p.tickets[k] == Outcome::failed && tk.error.code != *p.terminal) {
        return violation("E1", t(k) + " failed with " + std::string(to_string(tk.error.code)) +
                                   "; the first terminal error was " + std::string(to_string(*p.terminal)),
                         {p.terminal_step, tk.done_step});
      }
    }
    // Nothing is sent after the terminal error; later submits and flushes are refused.
    for (std::size_t i = p.terminal_step + 1; i < x.trace.steps.size(); ++i) {
      const Step& s = x.trace.steps[i];
      for (const auto& o : s.observed) {
        if (o.kind == Observation::Kind::send) {
          return violation("E1", "a batch was sent after the terminal error", {p.terminal_step, i});
        }
      }
      if ((s.input.kind == Input::Kind::submit || s.input.kind == Input::Kind::flush) &&
          s.result.kind != SyncResult::Kind::rejected) {
        return violation("E1", "a submit or flush was accepted after the terminal error", {p.terminal_step, i});
      }
    }
  } else {
    for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
      if (x.tickets[k].completions > 0 && !x.tickets[k].ok) {
        return violation("E1", t(k) + " failed although no terminal error happened (every failure was retryable)",
                         {x.tickets[k].done_step});
      }
    }
  }
  return std::nullopt;
}

Result check_e2(const Checked& c) {
  const auto& x = c.index;
  for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
    const auto& tk = x.tickets[k];
    if (tk.completions == 0 || tk.ok) continue;
    if (!tk.batch && tk.error.certainty != Certainty::definite) {
      return violation("E2", t(k) + " was never sent but its failure is indefinite", {tk.done_step});
    }
    if (tk.error.certainty != c.prediction.certainty[k]) {
      return violation("E2", t(k) + " failed " + std::string(to_string(tk.error.certainty)) + "; expected " +
                                 std::string(to_string(c.prediction.certainty[k])),
                       {tk.done_step});
    }
  }
  return std::nullopt;
}

bool is_condition(ErrorCode code) {
  return code == ErrorCode::condition_failed || code == ErrorCode::conflict || code == ErrorCode::stream_closed;
}

/// The step of the first send of a batch made in or after `step` (observations of a step
/// follow its input, so a send in the answering step is a reaction to the answer).
std::optional<std::size_t> resend_after(const detail::TraceIndex& x, const detail::BatchInfo& b, std::size_t step) {
  for (std::size_t s : b.sends) {
    if (x.sends[s].step >= step) return x.sends[s].step;
  }
  return std::nullopt;
}

Result check_e3(const Checked& c) {
  const auto& x = c.index;
  for (const auto& [id, b] : x.batches) {
    for (std::size_t s : b.sends) {
      const auto& send = x.sends[s];
      if (!send.response || send.response->kind != Response::Kind::fail || !is_condition(send.response->error.code) ||
          !c.prediction.effective_answer[*send.response_step]) {
        continue;
      }
      if (auto again = resend_after(x, b, *send.response_step)) {
        return violation("E3", "batch " + std::to_string(id) + " was resent after a condition failure",
                         {*send.response_step, *again});
      }
    }
  }
  return std::nullopt;
}

Result check_e4(const Checked& c) {
  const auto& x = c.index;
  const bool safe = x.config.retry_indefinite && x.config.resend_is_safe();
  for (const auto& [id, b] : x.batches) {
    for (std::size_t s : b.sends) {
      const auto& send = x.sends[s];
      if (!send.response || send.response->kind != Response::Kind::fail ||
          send.response->error.certainty != Certainty::indefinite || !c.prediction.effective_answer[*send.response_step]) {
        continue;
      }
      if (!safe) {
        if (auto again = resend_after(x, b, *send.response_step)) {
          return violation("E4", "batch " + std::to_string(id) +
                                     " was resent after an indefinite failure without safe sequencing",
                           {*send.response_step, *again});
        }
      }
    }
  }
  return std::nullopt;
}

Result check_e5(const Checked& c) {
  const auto& x = c.index;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if (s.input.kind != Input::Kind::respond || !s.input.response.invalid) continue;
    if (c.prediction.terminal && c.prediction.terminal_step < i) continue;  // already failed
    if (c.prediction.terminal_step != i || *c.prediction.terminal != ErrorCode::invalid_ack) continue;
    for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      // A ticket the target had already resolved before the invalid ack is E1's business.
      if (c.prediction.tickets[k] == Outcome::failed && tk.completions > 0 && tk.done_step >= i &&
          tk.error.code != ErrorCode::invalid_ack) {
        return violation("E5", "an invalid acknowledgement did not fail the producer with invalid_ack (" + t(k) +
                                   " failed with " + std::string(to_string(tk.error.code)) + ")",
                         {i, tk.done_step});
      }
    }
    if (s.input.send_index < x.sends.size()) {
      const auto batch = x.sends[s.input.send_index].obs->batch;
      const auto& b = x.batches.at(batch);
      if (b.completed && b.completed_ok) {
        return violation("E5", "a batch answered with an invalid acknowledgement was reported successful", {i, b.completed_step});
      }
    }
  }
  return std::nullopt;
}

Result check_e6(const Checked& c) {
  const auto& x = c.index;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if (s.input.kind != Input::Kind::advance) continue;
    for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      if (tk.submit_step > i) break;
      if (s.input.at < saturating_add(tk.at, x.config.delivery_timeout_ns)) continue;
      if (tk.completions == 0 || tk.done_step > i) {
        return violation("E6", t(k) + " was still unresolved at its delivery deadline", {tk.submit_step, i});
      }
    }
  }
  return std::nullopt;
}

// ---- R: capacity ---------------------------------------------------------------------------

Result check_r1(const Checked& c) {
  const auto& x = c.index;
  std::uint64_t unacked = 0;
  std::uint64_t ticket = 0;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    while (ticket < x.tickets.size() && x.tickets[ticket].submit_step == i) unacked += x.tickets[ticket++].meter;
    for (const auto& o : x.trace.steps[i].observed) {
      if (o.kind != Observation::Kind::done) continue;
      for (std::uint64_t k = o.first_ticket; k <= o.last_ticket && k < x.tickets.size(); ++k) unacked -= x.tickets[k].meter;
    }
    if (unacked > x.config.max_unacked_bytes) {
      return violation("R1", "unacknowledged bytes " + std::to_string(unacked) + " exceed max_unacked_bytes", {i});
    }
    if (in_flight_after(x, i) > x.config.max_in_flight) {
      return violation("R1", "more batches in flight than max_in_flight", {i});
    }
  }
  for (std::size_t w : x.would_block_steps) {
    for (std::size_t i = w + 1; i < x.trace.steps.size(); ++i) {
      const auto& obs = x.trace.steps[i].observed;
      const auto done = std::find_if(obs.begin(), obs.end(), [](const Observation& o) { return o.kind == Observation::Kind::done; });
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
      return violation("R3", "batch " + std::to_string(id) + " was sent " + std::to_string(b.sends.size()) +
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

// ---- S: sequencing ---------------------------------------------------------------------------

Result check_s1(const Checked& c) {
  const auto& x = c.index;
  if (x.config.protocol != Protocol::s2) return std::nullopt;
  for (const auto& [id, b] : x.batches) {
    const auto& first = x.sends[b.sends.front()];
    if (x.config.initial_match_seq_num) {
      const std::uint64_t expected = *x.config.initial_match_seq_num + b.first;
      if (first.obs->stamp.match_seq_num != expected) {
        return violation("S1", "batch " + std::to_string(id) + " carries match_seq_num " +
                                   (first.obs->stamp.match_seq_num ? std::to_string(*first.obs->stamp.match_seq_num) : "none") +
                                   ", expected " + std::to_string(expected),
                         {first.step});
      }
    }
    for (std::size_t s : b.sends) {
      const auto& send = x.sends[s];
      if (send.obs->stamp.fencing_token != x.config.fencing_token) {
        return violation("S1", "a batch carries another fencing token", {send.step});
      }
      if (!(send.obs->stamp == first.obs->stamp)) {
        return violation("S1", "a resend changed its stamps", {first.step, send.step});
      }
    }
  }
  return std::nullopt;
}

Result check_s2(const Checked& c) {
  const auto& x = c.index;
  if (x.config.protocol != Protocol::durable_streams) return std::nullopt;
  for (const auto& [id, b] : x.batches) {
    const auto& first = x.sends[b.sends.front()];
    for (std::size_t s : b.sends) {
      const auto& send = x.sends[s];
      if (send.obs->body != first.obs->body) {
        return violation("S2", "a resend of batch " + std::to_string(id) + " is not byte-identical", {first.step, send.step});
      }
      if (send.obs->stamp.sequenced != (x.config.sequencing == Sequencing::ds_idempotent)) {
        return violation("S2", "producer headers present when they should not be, or missing", {send.step});
      }
    }
  }
  if (x.config.sequencing != Sequencing::ds_idempotent) return std::nullopt;
  // Within one epoch, each batch sent for the first time in that epoch carries the next
  // seq (batches acknowledged in an earlier epoch are not renumbered, S5); resends within
  // the epoch keep their seq.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> seq_of;  // batch -> (epoch, seq)
  std::optional<std::pair<std::uint64_t, std::uint64_t>> previous;        // (batch, seq) in current epoch
  std::optional<std::uint64_t> epoch;
  for (const auto& s : x.sends) {
    if (!s.obs) continue;
    const auto& st = s.obs->stamp;
    if (epoch && st.epoch != *epoch) previous.reset();
    epoch = st.epoch;
    auto known = seq_of.find(s.obs->batch);
    if (known != seq_of.end() && known->second.first == st.epoch) {
      if (known->second.second != st.seq) {
        return violation("S2", "a resend of batch " + std::to_string(s.obs->batch) + " changed its seq", {s.step});
      }
      continue;
    }
    seq_of[s.obs->batch] = {st.epoch, st.seq};
    if (previous && previous->first < s.obs->batch && st.seq != previous->second + 1) {
      return violation("S2", "seq does not advance by one per batch (batch " + std::to_string(s.obs->batch) +
                                 " has seq " + std::to_string(st.seq) + ")",
                       {s.step});
    }
    if (!previous || previous->first < s.obs->batch) previous = std::make_pair(s.obs->batch, st.seq);
  }
  return std::nullopt;
}

Result check_s3(const Checked& c) {
  const auto& x = c.index;
  for (const auto& s : x.sends) {
    if (!s.response || s.response->kind != Response::Kind::ack || !s.response->ack.duplicate ||
        !c.prediction.effective_answer[*s.response_step]) {
      continue;
    }
    const auto& b = x.batches.at(s.obs->batch);
    for (std::uint64_t k = b.first; k < b.first + b.count && k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions > 0 && tk.ok && !tk.ack.duplicate) {
        return violation("S3", t(k) + " was acknowledged as a duplicate but not reported as one",
                         {*s.response_step, tk.done_step});
      }
    }
  }
  return std::nullopt;
}

/// The step at which batch `b` got its first valid acknowledgement (if any): what a
/// producer can know about a lower seq, whether or not it reports per-record outcomes.
std::optional<std::size_t> acked_at(const detail::TraceIndex& x, const detail::BatchInfo& b) {
  std::optional<std::size_t> at;
  for (std::size_t s : b.sends) {
    const auto& send = x.sends[s];
    if (send.response && send.response->kind == Response::Kind::ack && !send.response->invalid &&
        (!at || *send.response_step < *at)) {
      at = send.response_step;
    }
  }
  return at;
}

Result check_s4(const Checked& c) {
  const auto& x = c.index;
  for (const auto& [id, b] : x.batches) {
    for (std::size_t s : b.sends) {
      const auto& send = x.sends[s];
      if (!send.response || send.response->kind != Response::Kind::fail ||
          send.response->error.code != ErrorCode::sequence_gap || !c.prediction.effective_answer[*send.response_step]) {
        continue;
      }
      auto again = resend_after(x, b, *send.response_step);
      if (!again) continue;
      // A resend under another epoch is a claim's renumbering, not a gap resend (S5's).
      const bool same_epoch = std::any_of(b.sends.begin(), b.sends.end(), [&](std::size_t r) {
        return x.sends[r].step == *again && x.sends[r].obs->stamp.epoch == send.obs->stamp.epoch;
      });
      if (!same_epoch) continue;
      // Not before every lower seq (earlier batch) was acknowledged.
      for (const auto& [other_id, other] : x.batches) {
        if (other_id >= id) break;
        const auto acked = acked_at(x, other);
        if (!acked || *acked > *again) {
          return violation("S4", "batch " + std::to_string(id) + " was resent after a gap before batch " +
                                     std::to_string(other_id) + " was acknowledged",
                           {*send.response_step, *again});
        }
      }
    }
  }
  return std::nullopt;
}

Result check_s5(const Checked& c) {
  const auto& x = c.index;
  if (x.config.sequencing != Sequencing::ds_idempotent) return std::nullopt;
  std::uint64_t epoch = x.config.initial_epoch;
  std::uint64_t max_server_epoch = 0;
  bool claimed = false;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& step = x.trace.steps[i];
    if (step.input.kind == Input::Kind::respond && step.input.response.kind == Response::Kind::fail &&
        step.input.response.error.code == ErrorCode::stale_epoch) {
      max_server_epoch = std::max(max_server_epoch, step.input.response.error.server_epoch);
    }
    for (const auto& o : step.observed) {
      if (o.kind != Observation::Kind::send || o.stamp.epoch == epoch) continue;
      if (!x.config.auto_claim) return violation("S5", "the epoch changed without auto-claim", {i});
      if (o.stamp.epoch < epoch) return violation("S5", "the epoch went backwards", {i});
      if (o.stamp.epoch != max_server_epoch + 1) {
        return violation("S5", "claimed epoch " + std::to_string(o.stamp.epoch) + ", expected server epoch + 1 = " +
                                   std::to_string(max_server_epoch + 1),
                         {i});
      }
      if (o.stamp.seq != 0) return violation("S5", "a new epoch did not start at seq 0", {i});
      epoch = o.stamp.epoch;
      claimed = true;
    }
  }
  if (!claimed) return std::nullopt;
  // One batch in flight per new epoch until its first ack.
  std::uint64_t current = x.config.initial_epoch;
  bool acked_in_epoch = true;
  std::uint32_t outstanding = 0;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& step = x.trace.steps[i];
    if (step.input.kind == Input::Kind::respond && step.input.send_index < x.sends.size()) {
      const auto& s = x.sends[step.input.send_index];
      if (s.obs->stamp.epoch == current && !acked_in_epoch) {
        if (outstanding > 0) --outstanding;
        if (step.input.response.kind == Response::Kind::ack && !step.input.response.invalid) acked_in_epoch = true;
      }
    }
    for (const auto& o : step.observed) {
      if (o.kind != Observation::Kind::send) continue;
      if (o.stamp.epoch != current) {
        current = o.stamp.epoch;
        acked_in_epoch = false;
        outstanding = 0;
      }
      if (!acked_in_epoch && ++outstanding > 1) {
        return violation("S5", "more than one batch in flight before the claim was acknowledged", {i});
      }
    }
  }
  return std::nullopt;
}

Result check_s6(const Checked& c) {
  const auto& x = c.index;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& s = x.trace.steps[i];
    if (s.input.kind != Input::Kind::respond || s.input.response.kind != Response::Kind::fail ||
        s.input.response.error.code != ErrorCode::stream_closed) {
      continue;
    }
    if (c.prediction.terminal_step != i) continue;  // stale answer, or after another terminal error
    for (std::size_t j = i; j < x.trace.steps.size(); ++j) {
      for (const auto& o : x.trace.steps[j].observed) {
        if (o.kind == Observation::Kind::send) {
          return violation("S6", "a batch was sent after the stream was closed", {i, j});
        }
        if (o.kind == Observation::Kind::done && !o.ok && o.error.code != ErrorCode::stream_closed) {
          return violation("S6", "records failed with " + std::string(to_string(o.error.code)) +
                                     " after the stream was closed",
                           {i, j});
        }
      }
    }
  }
  return std::nullopt;
}

// ---- D: determinism --------------------------------------------------------------------------

Result check_d3(const Checked& c) {
  const auto& x = c.index;
  // The first delivery_timeout failure is the expiry itself (later ones carry the sticky
  // error, E1): the oldest record it fails must have reached its deadline by then.
  for (const auto& d : x.dones) {
    if (d.obs->ok) continue;
    if (d.obs->error.code != ErrorCode::delivery_timeout) return std::nullopt;
    const Instant at = x.trace.steps[d.step].input.at;
    const auto& oldest = x.tickets[d.obs->first_ticket];
    if (at < saturating_add(oldest.at, x.config.delivery_timeout_ns)) {
      return violation("D3", "delivery timeout fired before the deadline", {oldest.submit_step, d.step});
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool always(const Capabilities&) { return true; }
bool needs_records(const Capabilities& c) { return c.per_record_completions; }
bool needs_flush(const Capabilities& c) { return c.flush_barrier; }
bool needs_abort(const Capabilities& c) { return c.abort; }
bool needs_sync(const Capabilities& c) { return c.synchronous_rejection; }
bool needs_time(const Capabilities& c) { return c.virtual_time; }
bool needs_records_time(const Capabilities& c) { return c.per_record_completions && c.virtual_time; }
bool needs_certainty(const Capabilities& c) { return c.per_record_completions && c.classifies_certainty; }

struct Entry {
  Clause clause;
  Result (*run)(const Checked&);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"P1", "submit, flush and close are linearized in call order", Coverage::trace, needs_flush}, check_p1},
      {{"P2", "exactly one completion per accepted submit, none for a refused one", Coverage::trace, needs_records}, check_p2},
      {{"P3", "completions in submission order, errors and close included", Coverage::trace, needs_records}, check_p3},
      {{"P4", "a success carries the batch ack and the record's index", Coverage::trace, needs_records}, check_p4},
      {{"B1", "when a batch is sealed", Coverage::trace, always}, check_b1},
      {{"B2", "linger: default 5 ms, 0 = no delay, disabled = no timer", Coverage::trace, needs_time}, check_b2},
      {{"B3", "limits are validated and errors name the field", Coverage::config, always}, nullptr},
      {{"B4", "an oversized record is refused at submit", Coverage::trace, needs_sync}, check_b4},
      {{"B5", "no empty batch, no batch across a barrier", Coverage::trace, always}, check_b5},
      {{"F1", "flush seals at once and waits for the prefix", Coverage::trace, needs_flush}, check_f1},
      {{"F2", "flush does not wait for later records", Coverage::trace, needs_flush}, check_f2},
      {{"F3", "an empty flush completes at once and sends nothing", Coverage::trace, needs_flush}, check_f3},
      {{"F4", "the producer stays open after flush", Coverage::trace, needs_flush}, check_f4},
      {{"F5", "flush fails iff a covered record failed, with the sticky error", Coverage::trace, needs_flush}, check_f5},
      {{"C1", "close = flush + drain; a second close returns the same result", Coverage::trace, always}, check_c1},
      {{"C2", "submit or flush after close is refused with closed", Coverage::trace, needs_sync}, check_c2},
      {{"C3", "close racing a barrier stays consistent", Coverage::trace, needs_flush}, check_c3},
      {{"C4", "owned sessions closed, attached left open", Coverage::adapter, always}, nullptr},
      {{"C5", "abort fails the unresolved, definite or indefinite", Coverage::trace, needs_abort}, check_c5},
      {{"E1", "terminal errors are sticky", Coverage::trace, needs_records}, check_e1},
      {{"E2", "failures are classified definite/indefinite", Coverage::trace, needs_certainty}, check_e2},
      {{"E3", "condition failures are terminal", Coverage::trace, always}, check_e3},
      {{"E4", "indefinite failures are retried only when safe", Coverage::trace, always}, check_e4},
      {{"E5", "an invalid acknowledgement is a terminal protocol error", Coverage::trace, needs_records}, check_e5},
      {{"E6", "every record completes within the delivery deadline", Coverage::trace, needs_records_time}, check_e6},
      {{"R1", "unacked bytes and in-flight batches stay within their limits", Coverage::trace, always}, check_r1},
      {{"R2", "a would-block seals the partial batch", Coverage::trace, needs_sync}, check_r2},
      {{"R3", "every queue and retry count is bounded", Coverage::trace, always}, check_r3},
      {{"S1", "S2 match_seq_num advances by the record count; one fencing token", Coverage::trace, always}, check_s1},
      {{"S2", "Durable Streams seq +1 per batch; resends byte-identical", Coverage::trace, always}, check_s2},
      {{"S3", "a duplicate is a successful ack flagged duplicate", Coverage::trace, needs_records}, check_s3},
      {{"S4", "a sequence gap waits for the lower seqs, then resends", Coverage::trace, always}, check_s4},
      {{"S5", "stale epoch: terminal, or one claim of server epoch + 1 from seq 0", Coverage::trace, always}, check_s5},
      {{"S6", "stream closed is terminal, never a gap", Coverage::trace, always}, check_s6},
      {{"S7", "responses classified by status and headers", Coverage::structural, always}, nullptr},
      {{"D1", "no I/O, no clock, no thread, no user code in the core", Coverage::structural, always}, nullptr},
      {{"D2", "the same inputs give the same outputs", Coverage::replay, always}, nullptr},
      {{"D3", "deadlines never fire early; spurious timers are no-ops", Coverage::trace, needs_time}, check_d3},
      {{"D4", "no exception crosses the core API", Coverage::structural, always}, nullptr},
      {{"A1", "callbacks in ticket order from one FIFO dispatcher", Coverage::adapter, always}, nullptr},
      {{"A2", "flush and close return after the covered callbacks ran", Coverage::adapter, always}, nullptr},
      {{"A3", "callback exceptions are caught and reported", Coverage::adapter, always}, nullptr},
      {{"A4", "submit accepts or rejects synchronously", Coverage::adapter, always}, nullptr},
  };
  return all;
}

}  // namespace

const std::vector<Clause>& clauses() {
  static const std::vector<Clause> all = [] {
    std::vector<Clause> out;
    for (const auto& e : entries()) out.push_back(e.clause);
    return out;
  }();
  return all;
}

std::vector<Violation> check_trace(const Trace& trace, const Capabilities& capabilities) {
  const Checked checked(trace, capabilities);
  std::vector<Violation> out;
  for (const auto& e : entries()) {
    if (e.run == nullptr || !e.clause.applies(capabilities)) continue;
    if (auto v = e.run(checked)) out.push_back(std::move(*v));
  }
  return out;
}

namespace {
std::string observation_text(const Observation& o) {
  std::ostringstream s;
  switch (o.kind) {
    case Observation::Kind::send:
      s << "send#" << o.send_index << " batch " << o.batch << " attempt " << o.attempt << " tickets "
        << o.first_ticket << "+" << o.count;
      if (o.stamp.sequenced) {
        if (o.stamp.match_seq_num) {
          s << " match_seq_num " << *o.stamp.match_seq_num;
        } else {
          s << " epoch " << o.stamp.epoch << " seq " << o.stamp.seq;
        }
      }
      break;
    case Observation::Kind::done:
      s << "done tickets " << o.first_ticket << ".." << o.last_ticket << " "
        << (o.ok ? (o.ack.duplicate ? std::string("ok(duplicate)") : std::string("ok"))
                 : o.error.describe());
      break;
    case Observation::Kind::barrier:
      s << "barrier " << o.barrier << " " << (o.ok ? std::string("ok") : o.error.describe());
      break;
    case Observation::Kind::closed:
      s << "closed " << (o.ok ? std::string("ok") : o.error.describe());
      break;
    case Observation::Kind::capacity:
      s << "capacity available";
      break;
  }
  return s.str();
}
}  // namespace

std::string describe(const Step& step, std::size_t index) {
  std::ostringstream s;
  s << "#" << index << " @"
    << std::chrono::duration<double, std::milli>(step.input.at.time_since_epoch()).count() << "ms ";
  switch (step.input.kind) {
    case Input::Kind::submit: s << "submit(" << step.input.record.size() << "B)"; break;
    case Input::Kind::flush: s << "flush"; break;
    case Input::Kind::close: s << "close"; break;
    case Input::Kind::abort: s << "abort"; break;
    case Input::Kind::advance: s << "timer"; break;
    case Input::Kind::respond:
      s << "answer send#" << (step.input.send_index == SIZE_MAX ? std::string("?") : std::to_string(step.input.send_index))
        << " with "
        << (step.input.response.kind == Response::Kind::ack
                ? (step.input.response.invalid ? std::string("an invalid ack")
                                               : (step.input.response.ack.duplicate ? std::string("duplicate") : std::string("ack")))
                : std::string(to_string(step.input.response.error.code)));
      break;
  }
  switch (step.result.kind) {
    case SyncResult::Kind::ticket: s << " -> ticket " << step.result.value; break;
    case SyncResult::Kind::barrier: s << " -> barrier " << step.result.value; break;
    case SyncResult::Kind::rejected: s << " -> refused " << to_string(step.result.reason); break;
    case SyncResult::Kind::closed_result: s << " -> " << (step.result.ok ? "closed ok" : "closed failed"); break;
    case SyncResult::Kind::none: break;
  }
  for (const auto& o : step.observed) s << "\n      " << observation_text(o);
  return s.str();
}

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
    }
  }
  if (first.steps.size() != second.steps.size()) {
    return Violation{"D2", "replaying the same inputs took another number of steps", {n}};
  }
  return std::nullopt;
}

std::string render_evidence(const Trace& trace, const Violation& v) {
  std::ostringstream s;
  s << v.clause << ": " << v.message << "\n";
  for (std::size_t i : v.evidence) {
    if (i < trace.steps.size()) s << "    " << describe(trace.steps[i], i) << "\n";
  }
  return s.str();
}

}  // namespace prodsm::conformance
