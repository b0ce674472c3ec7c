// SPDX-License-Identifier: Apache-2.0
// The reference model (model.hpp): the contract's decision rules, record by record.
#include "prodsm/conformance/model.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace prodsm::conformance {
namespace {

struct ModelBatch {
  std::uint64_t first = 0;
  std::uint32_t count = 0;
  std::uint32_t retries = 0;  ///< failure-driven resends and claims (E4, S5 budget)
  bool ambiguous = false;     ///< some attempt ended indefinite
  bool acked = false;
  std::size_t latest_send = 0;  ///< index of its newest send
  bool latest_answered = false;
  bool had_unacked_before_latest = false;  ///< S4: earlier batches unacked when it left
  bool parked_stale = false;               ///< S5: waiting to become the oldest
  std::uint64_t parked_server_epoch = 0;   ///< S5: the server epoch its 403 named
  std::size_t renumbered_after = 0;        ///< a claim superseded sends up to this index
};

/// S5, S8: the largest Producer-Epoch (PROTOCOL.md: 0..2^53-1). A claim of server epoch
/// + 1 past it is refused: the 403 is then terminal.
constexpr std::uint64_t kMaxEpoch = (1ULL << 53) - 1;

}  // namespace

Prediction predict(const Trace& trace) {
  const TraceConfig& cfg = trace.config;
  Prediction p;
  p.effective_answer.assign(trace.steps.size(), false);
  std::map<std::uint64_t, ModelBatch> batches;
  std::map<std::size_t, std::uint64_t> batch_of_send;
  std::map<std::size_t, std::uint64_t> seq_of_send;  // Producer-Seq (S2: match_seq_num) per send
  std::vector<Instant> submitted_at;
  std::size_t sends_seen = 0;
  bool closed = false;  // Closed was observed: the producer is finished (C1)

  auto terminal = [&](ErrorCode code, std::size_t step) {
    if (p.terminal) return;
    p.terminal = code;
    p.terminal_step = step;
  };
  // E6: the oldest record not yet acknowledged expires at submit + delivery timeout.
  auto expire_at = [&](Instant now, std::size_t step) {
    std::optional<std::uint64_t> oldest_ticket;
    for (std::uint64_t t = 0; t < submitted_at.size(); ++t) {
      bool acked = false;
      for (auto& [id, b] : batches) {
        if (t >= b.first && t < b.first + b.count) acked = b.acked;
      }
      if (!acked) {
        oldest_ticket = t;
        break;
      }
    }
    if (oldest_ticket && now >= saturating_add(submitted_at[*oldest_ticket], cfg.delivery_timeout_ns)) {
      terminal(ErrorCode::delivery_timeout, step);
    }
  };
  auto oldest_unacked = [&]() -> std::optional<std::uint64_t> {
    for (auto& [id, b] : batches) {
      if (!b.acked) return id;
    }
    return std::nullopt;
  };
  auto claim = [&](ModelBatch& trigger) {
    ++trigger.retries;
    for (auto& [id, b] : batches) {
      if (b.acked) continue;
      b.parked_stale = false;
      b.renumbered_after = sends_seen;
    }
  };

  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const Step& step = trace.steps[i];
    const Input& in = step.input;
    // Sends first: they were made in this step (the producer's reaction), but the
    // batch bookkeeping must know them before later steps answer them.
    auto record_sends = [&] {
      for (const Observation& o : step.observed) {
        if (o.kind != Observation::Kind::send) continue;
        ModelBatch& b = batches[o.batch];
        b.first = o.first_ticket;
        b.count = o.count;
        b.latest_send = o.send_index;
        b.latest_answered = false;
        b.had_unacked_before_latest = false;
        for (auto& [id, other] : batches) {
          if (id < o.batch && !other.acked) b.had_unacked_before_latest = true;
        }
        batch_of_send[o.send_index] = o.batch;
        seq_of_send[o.send_index] = o.stamp.match_seq_num.value_or(o.stamp.seq);  // S2: the batch's start
        sends_seen = o.send_index + 1;
      }
    };
    if (in.kind == Input::Kind::submit && step.result.kind == SyncResult::Kind::ticket) {
      submitted_at.push_back(in.at);
    }
    // On real time (measured instants) the clock also runs during every other input: a
    // deadline that passed before it is applied first. One that passes while the target
    // takes the input in (an answer read a moment after it was written) may come first or
    // second: the target's own report decides (a delivery_timeout in this step).
    if (cfg.measured_time && !p.terminal && !closed) {
      expire_at(in.at, i);
      bool timed_out = false;
      Instant last = in.at;
      for (const Observation& o : step.observed) {
        last = std::max(last, o.at.value_or(in.at));
        timed_out =
            timed_out || (!o.ok && o.kind != Observation::Kind::send && o.error.code == ErrorCode::delivery_timeout);
      }
      if (timed_out && !p.terminal) expire_at(last, i);
    }
    if (p.terminal || closed) {
      record_sends();
      continue;
    }
    switch (in.kind) {
      case Input::Kind::abort:
        terminal(ErrorCode::aborted, i);  // C5
        break;
      case Input::Kind::advance: expire_at(in.at, i); break;
      case Input::Kind::respond: {
        if (in.response.invalid && in.send_index == SIZE_MAX) {
          terminal(ErrorCode::invalid_ack, i);  // E5: an ack for a batch never sent
          break;
        }
        auto found = batch_of_send.find(in.send_index);
        if (found == batch_of_send.end()) break;
        ModelBatch& b = batches[found->second];
        const bool stale =
            b.acked || in.send_index != b.latest_send || b.latest_answered || in.send_index < b.renumbered_after;
        if (stale) break;  // superseded or already resolved: ignored
        p.effective_answer[i] = true;
        b.latest_answered = true;
        const Response& r = in.response;
        if (r.kind == Response::Kind::ack) {
          if (r.invalid) {
            b.ambiguous = true;                   // an answer we cannot read: the batch may have been appended
            terminal(ErrorCode::invalid_ack, i);  // E5
            break;
          }
          b.acked = true;
          // S5: a parked stale-epoch batch that is now the oldest claims (S8: if it can).
          if (auto head = oldest_unacked()) {
            ModelBatch& h = batches[*head];
            if (h.parked_stale) {
              h.parked_stale = false;
              if (h.parked_server_epoch >= kMaxEpoch) {
                terminal(ErrorCode::stale_epoch, i);
              } else {
                claim(h);
              }
            }
          }
          break;
        }
        const Error& e = r.error;
        if (e.certainty == Certainty::indefinite) b.ambiguous = true;
        const bool budget = b.retries + 1 < cfg.max_attempts;
        const bool oldest = oldest_unacked() == found->second;
        if (e.code == ErrorCode::sequence_gap) {  // S4
          // Durable Streams seqs, or S2 match_seq_nums (a tail below the append's start).
          const bool sequenced =
              cfg.sequencing == Sequencing::ds_idempotent || cfg.sequencing == Sequencing::s2_match_seq_num;
          const bool resolvable =
              sequenced && e.expected_seq < seq_of_send[in.send_index] && b.had_unacked_before_latest;
          if (!resolvable) terminal(e.code, i);
          break;
        }
        if (e.code == ErrorCode::stale_epoch) {  // S5
          if (cfg.sequencing == Sequencing::ds_idempotent && cfg.auto_claim && !b.ambiguous && budget) {
            if (!oldest) {
              b.parked_stale = true;
              b.parked_server_epoch = e.server_epoch;
            } else if (e.server_epoch >= kMaxEpoch) {
              terminal(e.code, i);  // S8: server epoch + 1 would pass 2^53-1
            } else {
              claim(b);
            }
          } else {
            terminal(e.code, i);
          }
          break;
        }
        const bool safe = e.certainty == Certainty::definite || (cfg.retry_indefinite && cfg.resend_is_safe());
        if (e.retryable && safe && budget) {  // E4
          ++b.retries;
          break;
        }
        terminal(e.code, i);  // E3, S6, rejections, protocol errors
        break;
      }
      default: break;
    }
    record_sends();
    // ... and while the producer reacted: up to the last thing observed in the step.
    if (cfg.measured_time && !p.terminal && !closed) {
      Instant last = in.at;
      for (const Observation& o : step.observed) last = std::max(last, o.at.value_or(in.at));
      expire_at(last, i);
    }
    for (const Observation& o : step.observed) {
      if (o.kind == Observation::Kind::closed) closed = true;
    }
  }

  // Predictions.
  const std::size_t accepted = submitted_at.size();
  p.tickets.assign(accepted, Prediction::Outcome::pending);
  p.certainty.assign(accepted, Certainty::definite);
  std::set<std::uint64_t> acked_ids;
  for (auto& [id, b] : batches) {
    if (b.acked) acked_ids.insert(id);
  }
  // Acked batches succeed once every earlier ticket is resolved (P3): with a terminal
  // error everything is resolved; without one, only an acked prefix completes.
  std::uint64_t prefix_end = 0;  // tickets < prefix_end are in acked batches
  for (auto& [id, b] : batches) {
    if (!b.acked || b.first != prefix_end) break;
    prefix_end = b.first + b.count;
  }
  for (std::uint64_t t = 0; t < accepted; ++t) {
    std::optional<std::uint64_t> batch;
    for (auto& [id, b] : batches) {
      if (t >= b.first && t < b.first + b.count) batch = id;
    }
    const bool acked = batch && acked_ids.count(*batch) > 0;
    if (acked && (p.terminal || t < prefix_end)) {
      p.tickets[t] = Prediction::Outcome::ok;
    } else if (p.terminal) {
      p.tickets[t] = Prediction::Outcome::failed;
      if (batch) {
        const ModelBatch& b = batches[*batch];
        const bool outstanding = !b.latest_answered && b.latest_send >= b.renumbered_after;
        if (b.ambiguous || outstanding) p.certainty[t] = Certainty::indefinite;
      }
    }
  }
  p.acked_batches.assign(acked_ids.begin(), acked_ids.end());
  return p;
}

}  // namespace prodsm::conformance
