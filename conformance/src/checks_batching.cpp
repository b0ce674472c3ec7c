// SPDX-License-Identifier: Apache-2.0
// Batching: B1, B2, B4, B5 (B3 is checked on configurations) — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "checker_support.hpp"
#include "prodsm/durable_streams_policy.hpp"

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

/// B2, the other side: once time has moved past a record's linger (an `advance`, which
/// fires every due timer), its batch has gone out — judged only where nothing may hold it
/// back: virtual time, no send in flight (R1), no failure answered yet (a backoff, E4,
/// holds later batches), no would-block, close or abort so far. A producer that waited
/// ten lingers passed before.
Result check_b2_late(const Checked& c) {
  const auto& x = c.index;
  const auto& cfg = x.config;
  if (!cfg.linger_ns || c.caps.measured_time || !c.caps.virtual_time) return std::nullopt;
  std::uint64_t next_unsent = 0;  // the oldest ticket no send carried yet
  std::vector<bool> sent(x.tickets.size(), false);
  for (std::size_t s = 0; s < x.trace.steps.size(); ++s) {
    const Input& in = x.trace.steps[s].input;
    if (in.kind == Input::Kind::close || in.kind == Input::Kind::abort || in.kind == Input::Kind::close_stream) break;
    if (std::find(x.would_block_steps.begin(), x.would_block_steps.end(), s) != x.would_block_steps.end()) break;
    // Any answer but a plain valid ack (a failure, an invalid ack: E5 fails the producer),
    // and any failed outcome, may stop or hold back what follows: judged no further.
    if (in.kind == Input::Kind::respond && (in.response.kind != Response::Kind::ack || in.response.invalid)) break;
    if (in.kind == Input::Kind::respond_stream_close) break;
    bool any_failure = false;
    for (const auto& o : x.trace.steps[s].observed) {
      const bool outcome = o.kind == Observation::Kind::done || o.kind == Observation::Kind::barrier ||
                           o.kind == Observation::Kind::closed;
      any_failure = any_failure || (outcome && !o.ok);
    }
    if (any_failure) break;
    std::size_t outstanding = 0;
    bool failed = false;
    for (const auto& send : x.sends) {
      if (send.step > s) continue;
      if (send.obs != nullptr && send.obs->count > 0 && send.obs->first_ticket + send.obs->count <= sent.size()) {
        const std::uint64_t end = send.obs->first_ticket + send.obs->count;
        for (std::uint64_t k = send.obs->first_ticket; k < end; ++k) sent[k] = true;
      }
      if (!send.response_step || *send.response_step > s) ++outstanding;
      if (send.response != nullptr && send.response_step && *send.response_step <= s &&
          send.response->kind == Response::Kind::fail) {
        failed = true;
      }
    }
    if (failed) break;
    while (next_unsent < sent.size() && sent[next_unsent]) ++next_unsent;
    if (in.kind != Input::Kind::advance || outstanding > 0 || next_unsent >= x.tickets.size()) continue;
    const auto& tk = x.tickets[next_unsent];
    if (tk.submit_step >= s) continue;
    const Instant due = saturating_add(tk.at, *cfg.linger_ns);
    if (in.at >= due) {
      std::ostringstream linger_ms;
      linger_ms << std::chrono::duration<double, std::milli>(due - tk.at).count();
      // A timer event at the very instant the linger ends (linger 0, `advance 0`) is as
      // much a deadline reached as one after it: the producer must send then (D3).
      return violation("B2",
                       t(next_unsent) + "'s linger of " + linger_ms.str() + " ms ended " +
                           (in.at == due ? "at this timer event" : "before this timer event") +
                           ", with nothing in flight, and its batch was not sent",
                       {tk.submit_step, s});
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
  return check_b2_late(c);
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
  // The refusal half: a record the protocol cannot carry is refused at submit. Durable
  // Streams cannot carry an empty record, nor in JSON mode one that is not exactly one
  // JSON value (judged as prodsm's policy judges it); S2 carries any record, empty too.
  if (x.config.protocol == Protocol::durable_streams) {
    DurableStreamsOptions options;
    options.body_format = x.config.json ? DurableStreamsBodyFormat::json : DurableStreamsBodyFormat::bytes;
    const DurableStreamsPolicy policy(options);
    for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
      const Step& step = x.trace.steps[i];
      if (step.input.kind != Input::Kind::submit || step.result.kind != SyncResult::Kind::ticket) continue;
      const auto& record = step.input.record;
      if (auto why = policy.check_record(std::as_bytes(std::span(record.data(), record.size())))) {
        return violation("B5",
                         t(step.result.value) + " was accepted although Durable Streams cannot carry it (" +
                             std::string(*why) + "): it must be refused with invalid_record",
                         {i});
      }
    }
  }
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
