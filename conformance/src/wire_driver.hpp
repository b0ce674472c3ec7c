// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: what every wire target's driver shares (docs/conformance.md, "Wire
// targets") — the target talks real HTTP to the harness's receiving server
// (wire_server.hpp) on real time, and the harness:
//  - reads its sends off the wire (wire_sends.hpp) into the simulated server;
//  - writes the simulated server's answers on the wire (ds_wire.hpp: a response, a reset
//    connection, a 408, bytes that are not HTTP), restarts included;
//  - runs advances as real sleeps (trace time × time_scale), within a budget;
//  - records every instant as measured (trace time = the clock / time_scale), and what
//    the target did while the harness was between commands as a timer step of its own;
//  - ends each step at quiescence: the derived driver's own condition (quiescent()) and
//    nothing new for quiet_real_ns.
// Derived drivers run the client commands and say where outcomes come from: prodsm's
// adapters in process (adapter_driver.cpp), another SDK's driver process serving over
// its own HTTP client (served_driver.cpp).

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ds_wire.hpp"
#include "prodsm/conformance/driver.hpp"
#include "prodsm/conformance/real_time.hpp"
#include "sim_server.hpp"
#include "wire_sends.hpp"
#include "wire_server.hpp"

namespace prodsm::conformance::detail {

/// An outcome a derived driver reports in its own terms and turns into an observation
/// only when its step is finalized (a flush's refusal is the flush step's result, not an
/// observation; a second close's outcome is its step's result).
struct Completion {
  /// What completed.
  enum class Kind : std::uint8_t { record, flush, close, stream_close };
  Kind kind = Kind::record;
  std::chrono::steady_clock::time_point at;  ///< when it happened
  std::uint64_t call = 0;                    ///< record: the ticket; otherwise the driver's call number
  bool ok = false;                           ///< success
  Error error;                               ///< !ok
  TraceAck ack;                              ///< record, ok
  std::string final_offset;                  ///< stream_close, ok
  std::optional<CallbackFacts> facts;        ///< how its callback ran (A1–A4)
};

class WireDriver : public Driver {
 public:
  using Clock = std::chrono::steady_clock;

  bool run(const Command& c) final;
  [[nodiscard]] const Trace& trace() const final { return trace_; }
  [[nodiscard]] Capabilities capabilities() const final { return caps_; }
  [[nodiscard]] std::size_t unanswered_sends() const final { return server_.unanswered(); }
  [[nodiscard]] std::string unsupported_reason() const final { return unsupported_; }
  [[nodiscard]] std::string target_failure() const final { return target_failure_; }
  /// Waits a last quiet period (five times quiet_real_ns, at least 50 ms) and records what
  /// the target did in it as a timer step.
  void finish() final;

 protected:
  /// `pipelined`: the target sends every request on one pipelined connection (answers go
  /// in request order, so the newest send cannot be answered first).
  WireDriver(const TraceConfig& config, RealTimeOptions rt, Capabilities caps, std::unique_ptr<WireServer> wire,
             bool pipelined);

  /// Something observed during a step, with when it happened.
  struct Pending {
    Clock::time_point at;
    std::optional<Observation> observation;  ///< ready as it is
    std::optional<Completion> completion;    ///< or for convert()
  };

  // ---- what a derived driver provides ----------------------------------------------------
  /// Runs a client command (submit, flush, close, close_stream, abort): begin() its step,
  /// call the target, settle(), finalize(). False with unsupported_ set when the target
  /// cannot express it.
  virtual bool client_command(const Command& c) = 0;
  /// Moves the target's outcomes reported since the last call into pending_; true if any.
  virtual bool collect_outcomes() = 0;
  /// The target's own part of quiescence (its counters agree); `step_start` is when the
  /// step began.
  virtual bool quiescent(Clock::time_point step_start) = 0;
  /// Which part of quiescent() did not hold the last time it was false (diagnostics).
  [[nodiscard]] virtual std::string unsettled() const { return {}; }
  /// A Completion as the observation it is in `step` (nullopt: none, e.g. a flush's
  /// refusal); may set the step's result. `close_call`: a second close this step made (its
  /// completion is the step's result, C1).
  virtual std::optional<Observation> convert(Completion& c, Step& step, std::optional<std::uint64_t> close_call);

  // ---- services ----------------------------------------------------------------------------
  /// A new step for `kind`, at the measured instant; its index.
  std::size_t begin(Input::Kind kind);
  /// Waits for quiescence (see the file comment), collecting what happens.
  void settle();
  /// Moves what was observed into step `i`, in the order it happened.
  void finalize(std::size_t i, std::optional<std::uint64_t> close_call = std::nullopt);
  /// The trace instant of a clock reading.
  [[nodiscard]] Instant trace_time(Clock::time_point t) const;
  /// The completion of `kind` for `call` among what is pending, if it came.
  Completion* pending_completion(Completion::Kind kind, std::uint64_t call);

  const RealTimeOptions rt_;
  const Capabilities caps_;
  const bool pipelined_;
  const Clock::time_point start_ = Clock::now();
  std::unique_ptr<WireServer> wire_;
  WireSends sends_;
  SimServer server_;
  Trace trace_;
  std::string unsupported_;
  std::string target_failure_;  ///< the target itself failed (Driver::target_failure), with kTargetFailedPrefix
  std::vector<Pending> pending_;

 private:
  bool advance(Duration d);
  std::size_t deliver(const PendingSend& sent, const Response& response, const WireAnswer& answer);
  bool collect_wire();
  void answer_other(const WireRequest& r);
  void between_commands();

  std::map<std::pair<bool, std::size_t>, std::uint64_t> request_of_;  ///< (stream close?, index) -> wire request
  std::size_t sends_made_ = 0;
  std::size_t stream_close_requests_ = 0;
  Duration advanced_real_{};

 protected:
  std::uint64_t answers_written_ = 0;  ///< answers the harness wrote (or resets it made)
  [[nodiscard]] std::size_t sends_made() const noexcept { return sends_made_; }
  [[nodiscard]] std::size_t stream_close_requests() const noexcept { return stream_close_requests_; }
};

}  // namespace prodsm::conformance::detail
