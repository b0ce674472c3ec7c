// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file properties.hpp
/// Property-based conformance (RapidCheck, rc::state): generated configurations and
/// generated command sequences — submits with sizes around every limit, flushes,
/// closes, aborts, time, and server answers (acks, duplicates, every failure kind,
/// invalid acks) — run on a target through its Driver. After every command every trace
/// checker runs; after the sequence the inputs are replayed on a fresh producer and the
/// two traces must match byte for byte (D2). A failure is shrunk by RapidCheck and its
/// failing prefix is returned as a scenario vector, ready to save as a regression test.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {

/// One property: a protocol and a sequencing mode; everything else is generated.
struct PropertySpec {
  std::string name;                               ///< e.g. "durable_streams/idempotent"
  Protocol protocol = Protocol::durable_streams;  ///< the protocol of the generated configs
  Sequencing sequencing = Sequencing::none;       ///< the sequencing of the generated configs
  bool auto_claim = false;                        ///< ds_idempotent: claim a stale epoch (S5)
  /// Durable Streams: generated runs also close the stream (close_stream, C4), so the core
  /// target runs prodsm's producer client (CoreConfig::stream_operations).
  bool stream_operations = false;
};

/// The properties run by default: Durable Streams plain / idempotent / idempotent with
/// auto-claim, S2 plain / match_seq_num.
const std::vector<PropertySpec>& default_properties();

/// How many sequences, how long, which seed.
struct PropertyOptions {
  int tests = 300;                    ///< sequences (RapidCheck max_success)
  int max_size = 60;                  ///< RapidCheck max_size, in commands: a sequence has at most max_size + 1
  std::optional<std::uint64_t> seed;  ///< default: RC_PARAMS, else random
  /// Another SDK's target: a generated config key it refuses or cannot express is left at
  /// the SDK's default instead of failing the property (the refusal itself is a config
  /// divergence the vectors report). Never for prodsm's core.
  bool lenient_config = false;
  /// Clauses already known to fail on this target: their violations do not fail the
  /// property, so a run can go on to find the next divergence.
  std::set<std::string> known_failures;
  /// Shrink a failing sequence (RapidCheck) before reporting it. Off for a quick verdict
  /// on a real-time target, where each shrinking step replays the sequence on the clock.
  bool shrink = true;
};

/// The outcome of run_property.
struct PropertyResult {
  std::string name;         ///< the PropertySpec's name
  bool passed = false;      ///< every sequence passed (`tests` of them)
  int tests = 0;            ///< sequences that passed
  std::string description;  ///< RapidCheck's failure text
  /// The clause the shrunk counterexample violates; nullopt when it passed or failed for another reason.
  std::optional<Violation> violation;
  std::string evidence;           ///< rendered failing prefix
  std::string reproduce;          ///< RC_PARAMS value reproducing it
  nlohmann::json counterexample;  ///< the shrunk failing prefix as a vector
  /// The target cannot run this property at all (every generated case was discarded:
  /// e.g. an SDK without plain appends); `description` says why.
  bool not_applicable = false;
  /// Non-empty when the target itself failed (Driver::target_failure: its driver died,
  /// hung or answered garbage): the property was not judged; `prodsm conform` exits 3.
  std::string target_failure;
};

/// True when runs of `spec` can break `clause`: a clause about one protocol's sequencing
/// holds vacuously on another's traces (S1 on Durable Streams, S2–S5 without the
/// Durable Streams idempotent producer, S6 on S2, S8 without sequencing), and B3 is
/// judged by config vectors only. A clause no vector and no such property exercised is
/// reported n/a, never pass.
bool property_exercises(const PropertySpec& spec, std::string_view clause);

/// Runs one property against a target. Not thread-safe (RapidCheck's global state).
PropertyResult run_property(const PropertySpec& spec, const DriverFactory& factory, const PropertyOptions& options);

/// The property body, for RC_GTEST_PROP: generates, runs, checks; RC_FAILs on a
/// violation.
void conformance_property(const PropertySpec& spec, const DriverFactory& factory);

}  // namespace prodsm::conformance
