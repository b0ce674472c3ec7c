// SPDX-License-Identifier: Apache-2.0
// Adapters and callbacks: A1–A4 — docs/contract.md. Judged on targets that report how
// each completion callback ran (Capabilities::adapter_callbacks: prodsm's Asio and
// blocking producers as wire targets); each checker reads Observation::callback.
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {
namespace {

/// Every observation with callback facts, in the order the callbacks ran (trace order),
/// with its step.
std::vector<std::pair<std::size_t, const Observation*>> callbacks(const TraceIndex& x) {
  std::vector<std::pair<std::size_t, const Observation*>> out;
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    for (const auto& o : x.trace.steps[i].observed) {
      if (o.callback) out.emplace_back(i, &o);
    }
  }
  return out;
}

std::string what(const Observation& o) {
  switch (o.kind) {
    case Observation::Kind::done: return t(o.first_ticket) + "'s callback";
    case Observation::Kind::barrier: return "flush " + std::to_string(o.barrier) + "'s completion";
    case Observation::Kind::closed: return "close's completion";
    case Observation::Kind::stream_closed: return "stream close " + std::to_string(o.op) + "'s completion";
    default: return "a completion";
  }
}

}  // namespace

// A1: one FIFO dispatcher — every callback on one thread other than the caller's, never
// two at once, never under the producer's lock, records in ticket order.
Result check_a1(const Checked& c) {
  const auto all = callbacks(c.index);
  std::optional<std::pair<std::size_t, std::uint32_t>> first_thread;  // (step, thread)
  std::optional<std::pair<std::size_t, std::uint64_t>> last_ticket;   // (step, ticket)
  for (const auto& [step, o] : all) {
    const CallbackFacts& f = *o->callback;
    if (f.thread == 0)
      return violation("A1", what(*o) + " ran inside the caller's call, not on the dispatcher", {step});
    if (f.under_lock) return violation("A1", what(*o) + " ran under the producer's lock", {step});
    if (f.overlapped) return violation("A1", what(*o) + " ran while another callback was running", {step});
    if (!first_thread) {
      first_thread = {step, f.thread};
    } else if (first_thread->second != f.thread) {
      return violation("A1",
                       what(*o) + " ran on dispatcher thread " + std::to_string(f.thread) + ", earlier callbacks on " +
                           std::to_string(first_thread->second) + ": not one FIFO dispatcher",
                       {first_thread->first, step});
    }
    if (o->kind == Observation::Kind::done) {
      if (last_ticket && o->first_ticket <= last_ticket->second) {
        return violation("A1", what(*o) + " ran after " + t(last_ticket->second) + "'s: not in ticket order",
                         {last_ticket->first, step});
      }
      last_ticket = {step, o->last_ticket};
    }
  }
  return std::nullopt;
}

// A2: a flush or close completes only after the callbacks of the records it covers ran.
Result check_a2(const Checked& c) {
  const auto& x = c.index;
  auto covered_done_before = [&](std::uint64_t cutoff, std::size_t seq, std::size_t step) -> Result {
    for (std::uint64_t k = 0; k < cutoff && k < x.tickets.size(); ++k) {
      const auto& tk = x.tickets[k];
      if (tk.completions == 0 || tk.done_seq > seq) {
        return violation("A2", "a completion came before the callback of " + t(k) + ", which it covers",
                         {tk.submit_step, step});
      }
    }
    return std::nullopt;
  };
  // A barrier or close reported without callback facts is a blocking call returning:
  // judged the same (the call returns only after the covered callbacks ran).
  for (const auto& bd : x.barrier_dones) {
    const auto f = x.flush_by_barrier.find(bd.obs->barrier);
    if (f == x.flush_by_barrier.end()) continue;
    if (auto v = covered_done_before(x.flushes[f->second].cutoff, bd.seq, bd.step)) return v;
  }
  for (const auto& cd : x.closeds) {
    if (auto v = covered_done_before(x.tickets.size(), cd.seq, cd.step)) return v;
  }
  return std::nullopt;
}

// A3: a callback's exception is caught and reported (on_callback_exception), never
// unwinds into the adapter: the callbacks after it still run (P2 judges that each does).
Result check_a3(const Checked& c) {
  for (const auto& [step, o] : callbacks(c.index)) {
    if (o->callback->threw && !o->callback->reported) {
      return violation("A3", what(*o) + " threw, and the exception was not reported to on_callback_exception", {step});
    }
  }
  return std::nullopt;
}

// A4: submit says accepted or refused at the call; a refused submit's callback never runs.
Result check_a4(const Checked& c) {
  const auto& steps = c.index.trace.steps;
  for (const auto& [step, o] : callbacks(c.index)) {
    const auto& submit = o->callback->submit_step;
    if (!submit || *submit >= steps.size()) continue;
    const SyncResult& r = steps[*submit].result;
    if (r.kind != SyncResult::Kind::ticket) {
      return violation("A4", "the callback of a refused submit ran", {*submit, step});
    }
    if (o->kind == Observation::Kind::done && r.value != o->first_ticket) {
      return violation("A4", "the callback registered with " + t(r.value) + " reported " + t(o->first_ticket),
                       {*submit, step});
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
