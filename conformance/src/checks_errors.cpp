// SPDX-License-Identifier: Apache-2.0
// Errors: E1–E6 — docs/contract.md.
// Each checker reads the trace through the index and the reference model's prediction
// and names the steps that show a violation.
#include <algorithm>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {

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
      return violation("E1",
                       std::string("failure ") + std::string(to_string(e.code)) + " after the sticky " +
                           std::string(to_string(*first)),
                       {first_step, step});
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    for (const auto& o : x.trace.steps[i].observed) {
      if ((o.kind == Observation::Kind::done || o.kind == Observation::Kind::barrier ||
           o.kind == Observation::Kind::closed) &&
          !o.ok) {
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
        return violation(
            "E1",
            t(k) + " never failed although the terminal error " + std::string(to_string(*p.terminal)) + " happened",
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
        return violation("E1",
                         t(k) + " failed with " + std::string(to_string(tk.error.code)) +
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
      return violation("E2",
                       t(k) + " failed " + std::string(to_string(tk.error.certainty)) + "; expected " +
                           std::string(to_string(c.prediction.certainty[k])),
                       {tk.done_step});
    }
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
          send.response->error.certainty != Certainty::indefinite ||
          !c.prediction.effective_answer[*send.response_step]) {
        continue;
      }
      if (!safe) {
        if (auto again = resend_after(x, b, *send.response_step)) {
          return violation(
              "E4", "batch " + std::to_string(id) + " was resent after an indefinite failure without safe sequencing",
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
        return violation("E5",
                         "an invalid acknowledgement did not fail the producer with invalid_ack (" + t(k) +
                             " failed with " + std::string(to_string(tk.error.code)) + ")",
                         {i, tk.done_step});
      }
    }
    if (s.input.send_index < x.sends.size()) {
      const auto batch = x.sends[s.input.send_index].obs->batch;
      const auto& b = x.batches.at(batch);
      if (b.completed && b.completed_ok) {
        return violation("E5", "a batch answered with an invalid acknowledgement was reported successful",
                         {i, b.completed_step});
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
      // On real time (a wire target) the expiry's completion may be observed up to the
      // tolerance after the deadline.
      const Duration allowed = x.config.delivery_timeout_ns + x.config.time_tolerance_ns;
      if (s.input.at < saturating_add(tk.at, allowed)) continue;
      if (tk.completions == 0 || tk.done_step > i) {
        return violation("E6", t(k) + " was still unresolved at its delivery deadline", {tk.submit_step, i});
      }
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
