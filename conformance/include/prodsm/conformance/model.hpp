// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file model.hpp
/// The reference model of the contract: small and record-level, with no batching of its
/// own. It reads a trace's inputs and the batches the producer actually sent, applies
/// the contract's decision rules to every server answer (E3, E4, E5, E6, S4, S5, S6, C5)
/// and predicts each record's, barrier's and the close's outcome:
///  - a record whose batch was validly acknowledged before the first terminal error is
///    a success (E1: acks already received are applied first);
///  - once a terminal error happened, every other accepted record fails with it;
///  - a barrier succeeds iff every record it covers succeeds (F5); close likewise (C1);
///  - a stream close (close_stream, C4) changes no record's outcome: its inputs and its
///    request's answers are not the producer's (check_c4 judges them from the trace).

#include <cstdint>
#include <optional>
#include <vector>

#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance {

/// The model's prediction for a trace.
struct Prediction {
  /// A prediction: not yet decided, succeeds, or fails with the terminal error.
  enum class Outcome : std::uint8_t { pending, ok, failed };
  /// Per accepted ticket.
  std::vector<Outcome> tickets;
  /// Per accepted ticket: indefinite when the record may have been appended (C5, E2);
  /// meaningful for failed tickets.
  std::vector<Certainty> certainty;
  /// The first terminal error and the step it happened at.
  std::optional<ErrorCode> terminal;
  std::size_t terminal_step = 0;  ///< index into trace.steps; meaningful only when `terminal` is set
  /// Per batch id: acknowledged (validly) before the terminal error.
  std::vector<std::uint64_t> acked_batches;
  /// Per step: true when the step answered a send and the contract says the producer
  /// must act on that answer (false for answers to superseded attempts, to completed
  /// batches, and after the terminal error).
  std::vector<bool> effective_answer;
};

/// Runs the model over `trace`.
Prediction predict(const Trace& trace);

}  // namespace prodsm::conformance
