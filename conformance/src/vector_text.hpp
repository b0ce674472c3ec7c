// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the texts a vector's expectations are compared with (docs/conformance.md,
// "Adding a vector"): a ticket's outcome, a step's synchronous result, a completion.

#include <cstdint>
#include <string>
#include <vector>

#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance::detail {

/// "ok", "ok:duplicate", "failed:<code>:<certainty>" or "pending": ticket `ticket` in `trace`.
std::string outcome_of(const Trace& trace, std::uint64_t ticket);
/// Per-ticket form of completion texts: "0-1:ok" -> "0-0:ok", "1-1:ok" (an SDK with a
/// promise per record reports what prodsm's core reports per batch).
std::vector<std::string> per_ticket(const std::vector<std::string>& ranges);
/// Drops a ":definite" / ":indefinite" suffix (targets that do not classify certainty).
std::string without_certainty(std::string s);
/// `expected` matches `actual` when equal, or when `expected` is a prefix that stops at a
/// ':' boundary ("failed:stream_closed" matches "failed:stream_closed:indefinite").
bool matches(const std::string& expected, const std::string& actual);
/// "ticket", "barrier", "refused:<reason>", "closed:ok", "closed:<code>", "stream_close", "none".
std::string result_text(const SyncResult& r);
/// "<first>-<last>:ok" or "<first>-<last>:failed:<code>".
std::string completion_text(const Observation& o);
/// Whether `expected` can match (matches()) some text result_text() gives: a step's
/// "expect" that cannot ("tickt", "refused:banana") is a malformed vector, not a failure
/// of whatever target runs it.
bool is_result_text(const std::string& expected);
/// Whether `expected` can match some text outcome_of() gives ("okay" cannot).
bool is_outcome_text(const std::string& expected);

}  // namespace prodsm::conformance::detail
