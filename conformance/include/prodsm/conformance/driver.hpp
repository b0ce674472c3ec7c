// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file driver.hpp
/// A Driver runs one producer under the harness's control — client commands, time,
/// and a simulated server that answers sends — and records the Trace. The built-in
/// core driver runs prodsm's Producer<Policy>; external drivers (other SDKs) speak the
/// JSON-lines driver protocol of docs/conformance.md.

#include <memory>
#include <string>

#include "prodsm/conformance/command.hpp"
#include "prodsm/conformance/trace.hpp"
#include "prodsm/durable_streams.hpp"
#include "prodsm/s2.hpp"

namespace prodsm::conformance {

/// What a target can express; clauses needing more are reported "not applicable".
struct Capabilities {
  bool per_record_completions = true;  ///< every submit gets its own completion (P2)
  bool flush_barrier = true;           ///< non-terminal flush (F)
  bool abort = true;                   ///< abort without close (C5)
  bool synchronous_rejection = true;   ///< submit refuses synchronously (A4, B4, R1)
  bool virtual_time = true;            ///< the harness controls time (B2, D3, E6)
  bool classifies_certainty = true;    ///< failures say definite or indefinite (E2, C5)
  /// closes the stream apart from the producer, and reports the stream-close requests (C4)
  bool stream_close = true;
  /// Runs on real time that the harness measures (a wire target): the time clauses (B2,
  /// D3, E6) are judged on measured instants, with TraceConfig::time_tolerance_ns; a
  /// replay cannot be the same step for step, so D2 is not judged.
  bool measured_time = false;
  /// Reports how every completion callback ran (Observation::callback): the adapter
  /// clauses A1–A4 are judged on the trace.
  bool adapter_callbacks = false;
  /// Flush and close outcomes are blocking calls returning, each on a thread of its own
  /// (the blocking adapter), not callbacks on the dispatcher: which of several such
  /// threads the scheduler runs first, and when against the dispatcher's callbacks, is no
  /// order the producer gives, so P3 orders records only (A2 still judges that each call
  /// returned after the callbacks it covers).
  bool blocking_outcomes = false;
  /// Announces freed capacity after a would-block as an observation (R1's announcement).
  /// False for the adapters, which hand freed capacity to waiting submits
  /// (submit_blocking, async_submit, a blocking submit with submit_timeout_ns) instead.
  bool capacity_signal = true;
};

/// One producer under test, run command by command on virtual time against the
/// simulated server (the built-in core driver, or an external SDK's driver process).
class Driver {
 public:
  virtual ~Driver() = default;
  /// Runs one command; returns false when the command does not apply now (e.g. ack
  /// with nothing unanswered) — nothing is recorded then.
  virtual bool run(const Command& command) = 0;
  /// The trace so far.
  [[nodiscard]] virtual const Trace& trace() const = 0;
  /// What the target can express (core: everything; external: as its hello said).
  [[nodiscard]] virtual Capabilities capabilities() const = 0;
  /// Sends not yet answered.
  [[nodiscard]] virtual std::size_t unanswered_sends() const = 0;
  /// The run is over (no more commands): a target on real time records what it still did
  /// on its own (a late send, a late completion) as a last timer step, so nothing it did
  /// escapes the checkers. Nothing to do on virtual time.
  virtual void finish() {}
  /// Why the last run() returned false because the target cannot express the command
  /// (e.g. "flush: the SDK has no non-terminal flush"); empty when it simply had nothing
  /// to do.
  [[nodiscard]] virtual std::string unsupported_reason() const { return {}; }
  /// Why the last run() returned false because the target itself failed (an external
  /// driver died, hung past the reply timeout, or answered garbage or an error instead
  /// of "unsupported"): nothing it did from then on can be judged, and the run must not
  /// report a pass or n/a. Empty otherwise.
  [[nodiscard]] virtual std::string target_failure() const { return {}; }
};

/// The configuration of a conformance run for prodsm's core, either protocol.
struct CoreConfig {
  Protocol protocol = Protocol::durable_streams;  ///< which protocol's producer runs
  DurableStreamsConfig durable_streams{};         ///< used when protocol == durable_streams
  S2Config s2{};                                  ///< used when protocol == s2
  /// Durable Streams: the run uses stream operations (close_stream, C4). The bare core
  /// has no stream, so the core target then runs prodsm's Durable Streams producer
  /// client (ds::ProducerClient: the core with its request encoding and response
  /// classification) against the simulated server rendered as HTTP responses.
  bool stream_operations = false;
};

/// The TraceConfig of a core configuration.
TraceConfig trace_config(const CoreConfig& config);

/// A driver over prodsm's own core; nullptr (and `error`) when the config is invalid.
/// With `stream_operations` (Durable Streams) it is make_client_driver's.
std::unique_ptr<Driver> make_core_driver(const CoreConfig& config, std::string* error = nullptr);

/// A driver over prodsm's Durable Streams producer client (ds::ProducerClient: the core
/// with request encoding and response classification, the object both adapters run),
/// answered by the simulated server in HTTP responses; it also runs close_stream (C4).
/// Everything but invalid_ack(unknown_batch), which no HTTP response can express.
/// Nullptr (and `error`, naming the field) when the config is invalid.
std::unique_ptr<Driver> make_client_driver(const CoreConfig& config, std::string* error = nullptr);

}  // namespace prodsm::conformance
