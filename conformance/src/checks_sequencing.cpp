// SPDX-License-Identifier: Apache-2.0
// Sequencing: S1–S6 — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

Result check_s1(const Checked& c) {
  const auto& x = c.index;
  if (x.config.protocol != Protocol::s2) return std::nullopt;
  for (const auto& [id, b] : x.batches) {
    const auto& first = x.sends[b.sends.front()];
    if (x.config.initial_match_seq_num) {
      const std::uint64_t expected = *x.config.initial_match_seq_num + b.first;
      if (first.obs->stamp.match_seq_num != expected) {
        return violation(
            "S1",
            "batch " + std::to_string(id) + " carries match_seq_num " +
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
        return violation("S2", "a resend of batch " + std::to_string(id) + " is not byte-identical",
                         {first.step, send.step});
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
  std::optional<std::pair<std::uint64_t, std::uint64_t>> previous;          // (batch, seq) in current epoch
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
    if (!previous) {  // an epoch's first batch: the configured first seq, or 0 after a claim (S5)
      const std::uint64_t first_seq = st.epoch == x.config.initial_epoch ? x.config.initial_seq : 0;
      if (st.seq != first_seq) {
        return violation("S2",
                         "the first batch of epoch " + std::to_string(st.epoch) + " has seq " + std::to_string(st.seq) +
                             ", expected " + std::to_string(first_seq),
                         {s.step});
      }
    }
    if (previous && previous->first < s.obs->batch && st.seq != previous->second + 1) {
      return violation("S2",
                       "seq does not advance by one per batch (batch " + std::to_string(s.obs->batch) + " has seq " +
                           std::to_string(st.seq) + ")",
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
      // Not before the batch just before it was acknowledged, or sent again after the
      // gap was reported (ahead of this resend): a gap resend always follows a new ack or
      // a new send of its predecessor, which is what bounds it (never a hot loop).
      auto pred = x.batches.find(id);
      if (pred == x.batches.begin()) continue;  // nothing below it: a terminal gap, not a resend
      --pred;
      const auto& before = pred->second;
      const auto acked = acked_at(x, before);
      if (acked && *acked <= *again) continue;
      const std::size_t resend_index =
          *std::find_if(b.sends.begin(), b.sends.end(), [&](std::size_t r) { return x.sends[r].step == *again; });
      const bool sent_again = std::any_of(before.sends.begin(), before.sends.end(), [&](std::size_t p) {
        return x.sends[p].step >= *send.response_step && x.sends[p].seq < x.sends[resend_index].seq;
      });
      if (!sent_again) {
        return violation("S4",
                         "batch " + std::to_string(id) + " was resent after a gap before batch " +
                             std::to_string(pred->first) + " was acknowledged or sent again",
                         {*send.response_step, *again});
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
        return violation("S5",
                         "claimed epoch " + std::to_string(o.stamp.epoch) +
                             ", expected server epoch + 1 = " + std::to_string(max_server_epoch + 1),
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
          return violation(
              "S6", "records failed with " + std::string(to_string(o.error.code)) + " after the stream was closed",
              {i, j});
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
