// SPDX-License-Identifier: Apache-2.0
// Shared trace queries for the clause checkers (checker_support.hpp).
#include "checker_support.hpp"

#include <algorithm>

namespace prodsm::conformance::detail {

Violation violation(std::string clause, std::string message, std::vector<std::size_t> evidence) {
  std::sort(evidence.begin(), evidence.end());
  evidence.erase(std::unique(evidence.begin(), evidence.end()), evidence.end());
  return Violation{std::move(clause), std::move(message), std::move(evidence)};
}

std::string t(std::uint64_t ticket) {
  return "ticket " + std::to_string(ticket);
}

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
  // S8: an S2 batch whose end reaches 2^64-1 under match_seq_num can take no more records.
  const auto& m = x.config.initial_match_seq_num;
  if (x.config.protocol == Protocol::s2 && m && b.first + b.count >= UINT64_MAX - *m) return true;
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

const detail::BarrierDoneInfo* barrier_done(const detail::TraceIndex& x, std::uint64_t id) {
  for (const auto& bd : x.barrier_dones) {
    if (bd.obs->barrier == id) return &bd;
  }
  return nullptr;
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

}  // namespace prodsm::conformance::detail
