// SPDX-License-Identifier: Apache-2.0
// The clause registry (docs/contract.md order): what each clause needs from a target
// and which checker reads it; check_trace runs them all. The checkers are in
// checks_<family>.cpp; trace rendering for evidence is in evidence.cpp.
#include "prodsm/conformance/checkers.hpp"

#include "checker_support.hpp"

namespace prodsm::conformance {

namespace {

using namespace detail;  // Checked, Result, check_<id>

bool always(const Capabilities&) {
  return true;
}
bool needs_records(const Capabilities& c) {
  return c.per_record_completions;
}
bool needs_flush(const Capabilities& c) {
  return c.flush_barrier;
}
bool needs_abort(const Capabilities& c) {
  return c.abort;
}
/// F2: when every record before a flush was durable is known from per-record outcomes, or
/// on virtual time from the step its send was acknowledged in (a target without
/// per-record outcomes on real time could report the barrier a step later: not judged).
bool needs_flush_durability(const Capabilities& c) {
  return c.flush_barrier && (c.per_record_completions || c.virtual_time);
}
bool needs_sync(const Capabilities& c) {
  return c.synchronous_rejection;
}
bool needs_time(const Capabilities& c) {
  return c.virtual_time || c.measured_time;
}
bool needs_records_time(const Capabilities& c) {
  return c.per_record_completions && needs_time(c);
}
bool needs_certainty(const Capabilities& c) {
  return c.per_record_completions && c.classifies_certainty;
}
bool needs_stream_close(const Capabilities& c) {
  return c.stream_close && c.per_record_completions;
}
bool needs_callbacks(const Capabilities& c) {
  return c.adapter_callbacks;
}

struct Entry {
  Clause clause;
  Result (*run)(const Checked&);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"P1", "submit, flush and close are linearized in call order", Coverage::trace, needs_flush}, check_p1},
      {{"P2", "exactly one completion per accepted submit, none for a refused one", Coverage::trace, needs_records},
       check_p2},
      {{"P3", "completions in submission order, errors and close included", Coverage::trace, needs_records}, check_p3},
      {{"P4", "a success carries the batch ack and the record's index", Coverage::trace, needs_records}, check_p4},
      {{"B1", "when a batch is sealed", Coverage::trace, always}, check_b1},
      {{"B2", "linger: default 5 ms, 0 = no delay, disabled = no timer", Coverage::trace, needs_time}, check_b2},
      {{"B3", "limits are validated and errors name the field", Coverage::config, always}, nullptr},
      {{"B4", "an oversized record is refused at submit", Coverage::trace, needs_sync}, check_b4},
      {{"B5", "no empty batch, no batch across a barrier", Coverage::trace, always}, check_b5},
      {{"F1", "flush seals at once and waits for the prefix", Coverage::trace, needs_flush}, check_f1},
      {{"F2", "flush does not wait for later records", Coverage::trace, needs_flush_durability}, check_f2},
      {{"F3", "an empty flush completes at once and sends nothing", Coverage::trace, needs_flush}, check_f3},
      {{"F4", "the producer stays open after flush", Coverage::trace, needs_flush}, check_f4},
      {{"F5", "flush fails iff a covered record failed, with the sticky error", Coverage::trace, needs_flush},
       check_f5},
      {{"C1", "close = flush + drain; a second close returns the same result", Coverage::trace, always}, check_c1},
      {{"C2", "submit or flush after close is refused with closed", Coverage::trace, needs_sync}, check_c2},
      {{"C3", "close racing a barrier stays consistent", Coverage::trace, needs_flush}, check_c3},
      {{"C4", "closing the stream is apart from closing the producer, after its records", Coverage::trace,
        needs_stream_close},
       check_c4},
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
      {{"S8", "protocol numbers stay in range; exhaustion refuses, never wraps", Coverage::trace, always}, check_s8},
      {{"D1", "no I/O, no clock, no thread, no user code in the core", Coverage::structural, always}, nullptr},
      {{"D2", "the same inputs give the same outputs", Coverage::replay, always}, nullptr},
      {{"D3", "deadlines never fire early; spurious timers are no-ops", Coverage::trace, needs_time}, check_d3},
      {{"D4", "no exception crosses the core API", Coverage::structural, always}, nullptr},
      {{"A1", "callbacks in ticket order from one FIFO dispatcher", Coverage::adapter, needs_callbacks}, check_a1},
      {{"A2", "flush and close return after the covered callbacks ran", Coverage::adapter, needs_callbacks}, check_a2},
      {{"A3", "callback exceptions are caught and reported", Coverage::adapter, needs_callbacks}, check_a3},
      {{"A4", "submit accepts or rejects synchronously", Coverage::adapter, needs_callbacks}, check_a4},
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

}  // namespace prodsm::conformance
