// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file vectors.hpp
/// Scenario vectors: language-neutral JSON files (conformance/vectors/*.json) of timed
/// harness commands and expected observations. Format (docs/conformance.md):
///
///   { "name": "...", "source": "...", "clauses": ["F1"], "protocol": "s2",
///     "config": { "linger_ms": 3600000, "max_batch_records": 1000, ... },
///     "steps": [ {"do": "submit", "record": "a", "expect": "ticket"},
///                {"do": "flush", "expect_sends": 1}, {"do": "ack"}, ... ],
///     "expect": { "outcomes": ["ok"], "barriers": ["ok"], "closed": "ok",
///                 "sends": 1, "order": ["t0-0", "b0"], "config_error": "max_batch_bytes" } }
///
/// Running a vector: its config builds a target's driver, every step runs as a harness
/// Command, every per-step and final expectation is compared, and every trace checker
/// runs on the resulting trace.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/command.hpp"
#include "prodsm/conformance/driver.hpp"

namespace prodsm::conformance {

/// Builds a driver for a vector's (protocol, config); nullptr with `error` set when the
/// target refuses the config (a config vector expects exactly that, B3).
using DriverFactory =
    std::function<std::unique_ptr<Driver>(Protocol, const nlohmann::json& config, std::string* error)>;

/// The built-in target: prodsm's core.
DriverFactory core_driver_factory();

/// A core configuration from a vector's config object (unset fields keep the contract's
/// defaults). Unknown keys or wrong types are an error naming the key.
std::optional<CoreConfig> core_config_from_json(Protocol protocol, const nlohmann::json& config, std::string* error);

/// Parses one command object ({"do": ...}); error names the bad key.
std::optional<Command> command_from_json(const nlohmann::json& step, std::string* error);
/// The JSON form of a command (what vectors hold; inverse of command_from_json).
nlohmann::json command_to_json(const Command& command);
/// The JSON form of a core configuration (inverse of core_config_from_json).
nlohmann::json core_config_to_json(const CoreConfig& config);

/// The outcome of one vector on one target.
struct VectorResult {
  std::string name;                  ///< the vector's "name", else its file
  std::string file;                  ///< the vector's file path
  std::vector<std::string> clauses;  ///< the clauses the vector is about
  /// The vector's protocol: `prodsm conform` tells a vector the target was offered (one of
  /// its protocols) and refused from one in a protocol it does not speak.
  Protocol protocol = Protocol::durable_streams;
  /// No expectation mismatch and no trace-checker violation (config vector: the config was refused as expected).
  bool passed = false;
  /// The target cannot express something the vector needs (a protocol, a config key, an
  /// operation); `not_applicable_reason` says what. Neither passed nor failed.
  bool not_applicable = false;
  std::string not_applicable_reason;  ///< with not_applicable: what the target cannot express
  std::vector<std::string> failures;  ///< expectation mismatches, one sentence each
  /// The clause each failure is charged to: the step's "clause", else the vector's first.
  std::vector<std::string> failed_clauses;
  std::vector<Violation> violations;  ///< trace-checker violations
  std::string evidence;               ///< rendered counterexample (first failure)
  Trace trace;                        ///< the recorded run; empty when no producer ran (e.g. a config vector)
  /// Non-empty when the vector file itself is invalid (not JSON, wrong shape, unknown
  /// clause, command or key, or nothing to check): the vector did not run, and its
  /// result is neither a pass nor a failure of the target. `prodsm conform` exits 2.
  std::string malformed;
  /// Non-empty when the target itself failed while running the vector (its driver died,
  /// hung past the reply timeout, or answered garbage or an error): the vector was not
  /// judged, and `prodsm conform` exits 3 — never a pass, never n/a.
  std::string target_failure;
  /// How many times the vector ran: 1, or up to kRealTimeAttempts on a real-time target
  /// (TraceConfig::measured_time) whose earlier runs failed; the verdict is the last run's.
  std::size_t attempts = 1;
  /// What the failed earlier runs found, one sentence each (empty after a first-run verdict).
  std::vector<std::string> earlier_failures;
};

/// Runs of a vector on a real-time target before its failure stands: a step delayed by the
/// machine past a timer moves a send into another step than the vector's (docs/conformance.md).
inline constexpr std::size_t kRealTimeAttempts = 3;

/// Why `vector` is not a well-formed scenario vector (docs/conformance.md, "Vector
/// format"), or nullopt: an object with known keys of the right types, known clause IDs,
/// every step a known command, and something to check (steps or an expected config error).
std::optional<std::string> check_vector_shape(const nlohmann::json& vector);

/// Runs the vector in `json` (file name for messages). A malformed vector (see
/// check_vector_shape) is not run: the result carries `malformed`.
VectorResult run_vector(const nlohmann::json& vector, const std::string& file, const DriverFactory& factory);

/// Runs every *.json under `directory` and its subdirectories (sorted by path). Once a
/// vector ends with `target_failure` the rest are checked (check_vector_shape) but not
/// run: results for the malformed ones only.
std::vector<VectorResult> run_vectors(const std::string& directory, const DriverFactory& factory);

}  // namespace prodsm::conformance
