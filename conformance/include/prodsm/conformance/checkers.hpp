// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file checkers.hpp
/// Trace checkers: one per clause of the producer contract (docs/contract.md). Each
/// reads a Trace and returns the violated clause with the shortest evidence it can
/// name (the steps that show the violation), or nothing. A reference model
/// (model.hpp) predicts every record's, barrier's and close's outcome from the server's
/// answers; the outcome clauses (P2, E1, F5, C1, C5, E3, E5, S6) compare against it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prodsm/conformance/driver.hpp"
#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance {

/// A clause the trace violates.
struct Violation {
  std::string clause;                 ///< e.g. "F5"
  std::string message;                ///< what is wrong, in one sentence
  std::vector<std::size_t> evidence;  ///< the steps that show it (indices into the trace)
};

/// How a clause is checked.
enum class Coverage : std::uint8_t {
  trace,       ///< by a trace checker on every run
  replay,      ///< by replaying the inputs (D2)
  structural,  ///< outside traces (D1, D4: the build and the API; S7: the codec tests)
  config,      ///< by configuration vectors (B3)
  adapter,     ///< an adapter's clause (A1–A4, C4)
};

/// One clause: its ID, title, how it is covered, and whether a target with the given
/// capabilities can express it (else "not applicable").
struct Clause {
  std::string_view id;     ///< stable clause ID, e.g. "F5" (docs/contract.md)
  std::string_view title;  ///< one-line summary of the clause
  Coverage coverage;       ///< how the clause is checked
  /// True when a target with these capabilities can express the clause; false: "not applicable".
  bool (*applies)(const Capabilities&);
};

/// Every clause of the contract, in document order (P, B, F, C, E, R, S, D, A).
const std::vector<Clause>& clauses();

/// Runs every trace checker that applies to `capabilities`; returns the violations.
std::vector<Violation> check_trace(const Trace& trace, const Capabilities& capabilities);

/// D2: the two runs of the same inputs observed the same things, byte for byte.
std::optional<Violation> check_replay(const Trace& first, const Trace& second);

/// The evidence of a violation rendered as text: the named steps, one per line.
std::string render_evidence(const Trace& trace, const Violation& violation);

}  // namespace prodsm::conformance
