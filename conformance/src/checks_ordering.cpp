// SPDX-License-Identifier: Apache-2.0
// Ordering and tickets: P1–P4 — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <optional>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

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
        return violation("P1",
                         "barrier " + std::to_string(f.barrier) + " completed before " + t(k) +
                             ", submitted before the flush, completed",
                         {tk.submit_step, f.step, bd.step});
      }
    }
  }
  // Submits take effect in call order on the wire too: each batch carries exactly its
  // records in ticket order (bytes as submitted: Durable Streams bytes mode, S2; the JSON
  // framing is the SDK's), and unsequenced batches — whose order at the server is their
  // send order — go out first in ticket order (sequenced ones are put in order by the
  // server: S2, S4, and may cross on pooled connections). A driver that sent a later
  // plain batch first, or left a record out of a body and reported it ok, passed before.
  std::optional<std::size_t> previous;  // the send index of the last unsequenced first attempt
  for (std::size_t i = 0; i < x.sends.size(); ++i) {
    const Observation* o = x.sends[i].obs;
    if (o == nullptr || o->attempt != 1 || o->count == 0 || o->first_ticket + o->count > x.tickets.size()) continue;
    const bool sequenced = o->stamp.sequenced || o->stamp.match_seq_num.has_value();
    if (!sequenced && previous && o->first_ticket < x.sends[*previous].obs->first_ticket) {
      return violation("P1",
                       "the batch of " + t(o->first_ticket) + " was first sent after the batch of " +
                           t(x.sends[*previous].obs->first_ticket) + ", which follows it: its records would reach " +
                           "the stream out of submission order",
                       {x.sends[*previous].step, x.sends[i].step});
    }
    if (!sequenced) previous = i;
    if (x.config.protocol == Protocol::durable_streams && x.config.json) continue;
    std::string records;
    for (std::uint64_t k = o->first_ticket; k < o->first_ticket + o->count; ++k) {
      records += x.trace.steps[x.tickets[k].submit_step].input.record;
    }
    if (o->body != records) {
      return violation("P1",
                       "the send of " + t(o->first_ticket) + ".." + std::to_string(o->first_ticket + o->count - 1) +
                           " does not carry exactly those records, in ticket order (" + std::to_string(o->body.size()) +
                           " body bytes for " + std::to_string(records.size()) + " record bytes)",
                       {x.sends[i].step});
    }
  }
  return std::nullopt;
}

Result check_p2(const Checked& c) {
  const auto& x = c.index;
  for (std::uint64_t k = 0; k < x.tickets.size(); ++k) {
    const auto& tk = x.tickets[k];
    if (tk.completions > 1) {
      return violation("P2", t(k) + " completed " + std::to_string(tk.completions) + " times",
                       {tk.submit_step, tk.done_step});
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
      return violation("P3",
                       "completion of tickets " + std::to_string(d.obs->first_ticket) + ".." +
                           std::to_string(d.obs->last_ticket) + " is out of submission order (expected " + t(next) +
                           " next)",
                       {d.step});
    }
    next = d.obs->last_ticket + 1;
  }
  if (c.caps.blocking_outcomes) return std::nullopt;  // barriers and close: threads returning (A2 judges them)
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
        return violation(
            "P3",
            "a record submitted after flush " + std::to_string(bd.obs->barrier) + " completed before that barrier",
            {x.flushes[it->second].step, d.step, bd.step});
      }
    }
  }
  if (!x.closeds.empty() && x.closeds.front().seq + 1 != x.producer_observations_end) {  // C4: stream closes aside
    // The evidence shows the step of the last thing observed too (the flush or record
    // reported after Closed), not only the Closed.
    const std::size_t last_seq = x.producer_observations_end - 1;
    std::size_t last_step = x.closeds.front().step;
    for (std::size_t s = 0; s < x.trace.steps.size(); ++s) {
      if (x.step_first_seq[s] <= last_seq) last_step = s;
    }
    return violation("P3", "something was observed after Closed (Closed must be last)",
                     {x.closeds.front().step, last_step});
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
    // What the server acknowledged for the batch (its last valid ack): the completion must
    // carry that, not a position of the SDK's own making.
    const TraceAck* server = nullptr;
    for (const std::size_t i : batch->sends) {
      const Response* r = x.sends[i].response;
      if (r != nullptr && r->kind == Response::Kind::ack && !r->invalid) server = &r->ack;
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
      if (server != nullptr && span == batch->count && (a.start != server->start || a.end != server->end)) {
        return violation("P4",
                         t(d.obs->first_ticket) + " completed with positions [" + std::to_string(a.start) + ", " +
                             std::to_string(a.end) + "), but the server acknowledged [" +
                             std::to_string(server->start) + ", " + std::to_string(server->end) + ")",
                         {d.step});
      }
      if (a.seq_num && span == batch->count && *a.seq_num != a.start + (d.obs->first_ticket - batch->first)) {
        return violation(
            "P4",
            t(d.obs->first_ticket) + " was given position " + std::to_string(*a.seq_num) + ", not batch start + index",
            {d.step});
      }
    } else if (d.obs->ack.next_offset.empty() && !d.obs->ack.duplicate) {
      return violation("P4", "Durable Streams success without next offset or duplicate flag", {d.step});
    } else if (server != nullptr && !server->next_offset.empty() && !d.obs->ack.next_offset.empty() &&
               d.obs->ack.next_offset != server->next_offset) {
      return violation("P4",
                       t(d.obs->first_ticket) + " completed with next offset '" + d.obs->ack.next_offset +
                           "', but the server answered '" + server->next_offset + "'",
                       {d.step});
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
