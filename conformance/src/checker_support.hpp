// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: what every clause checker shares — the trace index with the model's
// prediction, the violation record, small trace queries — and the checkers themselves,
// one function per clause, in checks_<family>.cpp (grep `check_<id>`).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/model.hpp"
#include "trace_index.hpp"

namespace prodsm::conformance::detail {

/// The index plus the model's prediction, built once per check.
struct Checked {
  Checked(const Trace& t, const Capabilities& c) : index{t}, prediction{predict(t)}, caps{c} {}
  TraceIndex index;
  Prediction prediction;
  Capabilities caps;
};

using Outcome = Prediction::Outcome;
using Result = std::optional<Violation>;

/// A violation of `clause`, with the evidence steps sorted and deduplicated.
Violation violation(std::string clause, std::string message, std::vector<std::size_t> evidence);
/// "ticket <n>", for messages.
std::string t(std::uint64_t ticket);

std::uint64_t batch_bytes(const detail::TraceIndex& x, std::uint64_t first, std::uint32_t count);
std::uint64_t min_meter(const TraceConfig& c);
bool full(const detail::TraceIndex& x, const detail::BatchInfo& b);
std::uint32_t in_flight_after(const detail::TraceIndex& x, std::size_t step);
bool some_batch_waiting(const detail::TraceIndex& x, std::size_t step);
bool epoch_changed(const detail::TraceIndex& x);
std::optional<std::size_t> first_step_of_kind(const detail::TraceIndex& x, Input::Kind kind);
std::optional<std::size_t> close_or_abort_step(const detail::TraceIndex& x);
const detail::BarrierDoneInfo* barrier_done(const detail::TraceIndex& x, std::uint64_t id);
bool is_condition(ErrorCode code);
std::optional<std::size_t> resend_after(const detail::TraceIndex& x, const detail::BatchInfo& b, std::size_t step);
std::optional<std::size_t> acked_at(const detail::TraceIndex& x, const detail::BatchInfo& b);

Result check_p1(const Checked& c);
Result check_p2(const Checked& c);
Result check_p3(const Checked& c);
Result check_p4(const Checked& c);
Result check_b1(const Checked& c);
Result check_b2(const Checked& c);
Result check_b4(const Checked& c);
Result check_b5(const Checked& c);
Result check_f1(const Checked& c);
Result check_f2(const Checked& c);
Result check_f3(const Checked& c);
Result check_f4(const Checked& c);
Result check_f5(const Checked& c);
Result check_c1(const Checked& c);
Result check_c2(const Checked& c);
Result check_c3(const Checked& c);
Result check_c4(const Checked& c);
Result check_c5(const Checked& c);
Result check_e1(const Checked& c);
Result check_e2(const Checked& c);
Result check_e3(const Checked& c);
Result check_e4(const Checked& c);
Result check_e5(const Checked& c);
Result check_e6(const Checked& c);
Result check_r1(const Checked& c);
Result check_r2(const Checked& c);
Result check_r3(const Checked& c);
Result check_s1(const Checked& c);
Result check_s2(const Checked& c);
Result check_s3(const Checked& c);
Result check_s4(const Checked& c);
Result check_s5(const Checked& c);
Result check_s6(const Checked& c);
Result check_s8(const Checked& c);
Result check_d3(const Checked& c);
Result check_a1(const Checked& c);
Result check_a2(const Checked& c);
Result check_a3(const Checked& c);
Result check_a4(const Checked& c);

}  // namespace prodsm::conformance::detail
