// SPDX-License-Identifier: Apache-2.0
// The texts a vector's expectations are compared with (vector_text.hpp).
#include "vector_text.hpp"

namespace prodsm::conformance::detail {

std::string outcome_of(const Trace& trace, std::uint64_t ticket) {
  for (const auto& step : trace.steps) {
    for (const auto& o : step.observed) {
      if (o.kind != Observation::Kind::done || ticket < o.first_ticket || ticket > o.last_ticket) continue;
      if (o.ok) return o.ack.duplicate ? "ok:duplicate" : "ok";
      return "failed:" + std::string(to_string(o.error.code)) + ":" + std::string(to_string(o.error.certainty));
    }
  }
  return "pending";
}

/// Per-ticket form of completion texts: "0-1:ok" -> "0-0:ok", "1-1:ok" (an SDK with a
/// promise per record reports what prodsm's core reports per batch).
std::vector<std::string> per_ticket(const std::vector<std::string>& ranges) {
  std::vector<std::string> out;
  for (const auto& r : ranges) {
    const auto dash = r.find('-');
    const auto colon = r.find(':');
    if (dash == std::string::npos || colon == std::string::npos || dash > colon) {
      out.push_back(r);
      continue;
    }
    const std::uint64_t first = std::stoull(r.substr(0, dash));
    const std::uint64_t last = std::stoull(r.substr(dash + 1, colon - dash - 1));
    for (std::uint64_t t = first; t <= last && t - first < 100000; ++t) {
      out.push_back(std::to_string(t) + "-" + std::to_string(t) + r.substr(colon));
    }
  }
  return out;
}

/// Drops a ":definite" / ":indefinite" suffix (targets that do not classify certainty).
std::string without_certainty(std::string s) {
  for (const char* suffix : {":definite", ":indefinite"}) {
    const std::string x = suffix;
    if (s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) s.erase(s.size() - x.size());
  }
  return s;
}

/// `expected` matches `actual` when equal, or when `expected` is a prefix that stops at a
/// ':' boundary ("failed:stream_closed" matches "failed:stream_closed:indefinite").
bool matches(const std::string& expected, const std::string& actual) {
  if (expected == actual) return true;
  return actual.size() > expected.size() && actual.compare(0, expected.size(), expected) == 0 &&
         actual[expected.size()] == ':';
}

std::string result_text(const SyncResult& r) {
  switch (r.kind) {
    case SyncResult::Kind::ticket: return "ticket";
    case SyncResult::Kind::barrier: return "barrier";
    case SyncResult::Kind::rejected: return "refused:" + std::string(to_string(r.reason));
    case SyncResult::Kind::closed_result:
      return r.ok ? "closed:ok" : "closed:" + std::string(r.error ? to_string(r.error->code) : "error");
    case SyncResult::Kind::stream_close:
      return r.ok ? "stream_close" : "refused:" + std::string(r.error ? to_string(r.error->code) : "error");
    case SyncResult::Kind::none: return "none";
  }
  return "none";
}

namespace {

/// Every ErrorCode's name.
std::vector<std::string> code_names() {
  std::vector<std::string> out;
  for (int c = 0; c <= static_cast<int>(kLastErrorCode); ++c) out.emplace_back(to_string(static_cast<ErrorCode>(c)));
  return out;
}

bool matches_any(const std::string& expected, const std::vector<std::string>& texts) {
  for (const auto& t : texts) {
    if (matches(expected, t)) return true;
  }
  return false;
}

}  // namespace

bool is_result_text(const std::string& expected) {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> t{"ticket",    "barrier",      "none",         "stream_close",
                               "closed:ok", "closed:error", "refused:error"};
    for (const auto& code : code_names()) {
      t.push_back("closed:" + code);
      t.push_back("refused:" + code);
    }
    for (int r = 0; r <= static_cast<int>(RejectReason::sequence_exhausted); ++r) {
      t.push_back("refused:" + std::string(to_string(static_cast<RejectReason>(r))));
    }
    return t;
  }();
  return matches_any(expected, texts);
}

bool is_outcome_text(const std::string& expected) {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> t{"ok", "ok:duplicate", "pending"};
    for (const auto& code : code_names()) {
      for (const char* certainty : {"definite", "indefinite"}) t.push_back("failed:" + code + ":" + certainty);
    }
    return t;
  }();
  return matches_any(expected, texts);
}

std::string completion_text(const Observation& o) {
  return std::to_string(o.first_ticket) + "-" + std::to_string(o.last_ticket) + ":" +
         (o.ok ? std::string("ok") : "failed:" + std::string(to_string(o.error.code)));
}

}  // namespace prodsm::conformance::detail
