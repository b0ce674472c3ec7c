// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: what the built-in drivers (core_driver.cpp, client_driver.cpp) share — the
// trace being recorded, virtual time, the simulated server, and the client commands
// whose shape is the same on the core's Producer and on ds::ProducerClient (submit,
// flush, abort, advance: submit(now, record), flush(now), abort(now), next_deadline(),
// handle_timeout(now)). Each driver adds close, the server's answers and its drain.

#include <algorithm>
#include <optional>
#include <string>

#include "prodsm/conformance/driver.hpp"
#include "sim_server.hpp"

namespace prodsm::conformance::detail {

/// CRTP base: `Derived` provides `producer()` (the object under test) and
/// `drain(Step&)` (records what it emitted in reaction to the step's input).
template <class Derived>
class TimedDriver : public Driver {
 public:
  [[nodiscard]] const Trace& trace() const override { return trace_; }
  [[nodiscard]] Capabilities capabilities() const override { return {}; }
  [[nodiscard]] std::size_t unanswered_sends() const override { return server_.unanswered(); }
  [[nodiscard]] std::string unsupported_reason() const override { return unsupported_; }

 protected:
  explicit TimedDriver(const TraceConfig& config) : server_{config} { trace_.config = config; }

  /// Runs submit, flush, abort or advance and returns true; nullopt for any other command.
  std::optional<bool> run_shared(const Command& c) {
    auto& p = static_cast<Derived&>(*this).producer();
    switch (c.kind) {
      case Command::Kind::submit: {
        Step& step = begin(Input::Kind::submit);
        step.input.record = c.record;
        record(step, p.submit(now_, std::string_view{c.record}), SyncResult::Kind::ticket);
        drain(step);
        return true;
      }
      case Command::Kind::flush: {
        Step& step = begin(Input::Kind::flush);
        record(step, p.flush(now_), SyncResult::Kind::barrier);
        drain(step);
        return true;
      }
      case Command::Kind::abort: {
        Step& step = begin(Input::Kind::abort);
        p.abort(now_);
        drain(step);
        return true;
      }
      case Command::Kind::advance: {
        // Every deadline on the way fires at its own instant (one timer step each); a
        // timer event with nothing due ends at the target instant (D3).
        const Instant target = saturating_add(now_, c.advance_ns);
        bool fired = false;
        while (auto deadline = p.next_deadline()) {
          if (*deadline > target) break;
          now_ = std::max(now_, *deadline);
          Step& step = begin(Input::Kind::advance);
          p.handle_timeout(now_);
          drain(step);
          fired = true;
        }
        if (!fired || now_ < target) {
          now_ = target;
          Step& step = begin(Input::Kind::advance);
          p.handle_timeout(now_);
          drain(step);
        }
        return true;
      }
      default: return std::nullopt;
    }
  }

  /// A new step for an input of `kind` at the current instant.
  Step& begin(Input::Kind kind) {
    trace_.steps.emplace_back();
    Step& step = trace_.steps.back();
    step.input.kind = kind;
    step.input.at = now_;
    return step;
  }

  void drain(Step& step) { static_cast<Derived&>(*this).drain(step); }

  /// A submit's ticket or a flush's barrier (`ok_kind`), or its refusal.
  template <class Result>
  static void record(Step& step, const Result& r, SyncResult::Kind ok_kind) {
    if (r) {
      step.result.kind = ok_kind;
      step.result.value = r->value;
    } else {
      step.result.kind = SyncResult::Kind::rejected;
      step.result.reason = r.error().reason;
      step.result.error = r.error().terminal;
    }
  }

  Trace trace_;
  Instant now_{};
  std::size_t sends_ = 0;    ///< sends made so far (Observation::send_index)
  std::string unsupported_;  ///< why the last command could not be expressed
  SimServer server_;
};

}  // namespace prodsm::conformance::detail
