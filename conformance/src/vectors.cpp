// SPDX-License-Identifier: Apache-2.0
// Scenario vectors: JSON in, expectations and trace checkers out.
#include "prodsm/conformance/vectors.hpp"

#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/json_limits.hpp"
#include "vector_text.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace prodsm::conformance {

using nlohmann::json;
using namespace detail;  // the texts expectations compare (vector_text.hpp)

DriverFactory core_driver_factory() {
  return [](Protocol protocol, const json& config, std::string* error) -> std::unique_ptr<Driver> {
    auto core = core_config_from_json(protocol, config, error);
    if (!core) return nullptr;
    return make_core_driver(*core, error);
  };
}

namespace {
VectorResult run_checked_vector(const json& v, const std::string& file, const DriverFactory& factory);
}  // namespace

std::optional<std::string> check_vector_shape(const json& v) {
  if (!v.is_object()) return "a vector must be a JSON object";
  static const std::set<std::string> top = {"name",   "source", "clauses", "protocol",
                                            "config", "steps",  "expect",  "virtual_time_only"};
  static const std::set<std::string> step_keys = {
      "do",    "record", "ms",           "which",       "code",           "kind", "clause", "retry_after_ms",
      "state", "expect", "expect_sends", "expect_done", "expect_barriers"};
  static const std::set<std::string> expect_keys = {"outcomes", "closed",    "config_error",  "sends",
                                                    "barriers", "bodies",    "order",         "stamps",
                                                    "clauses",  "positions", "stream_closes", "stream_close_requests"};
  std::set<std::string> clause_ids;
  for (const auto& c : clauses()) clause_ids.insert(std::string(c.id));
  auto known_clause = [&](const json& id) { return id.is_string() && clause_ids.count(id.get<std::string>()) > 0; };
  auto string_array = [](const json& a) {
    return a.is_array() && std::all_of(a.begin(), a.end(), [](const json& e) { return e.is_string(); });
  };
  for (const auto& item : v.items()) {
    if (top.count(item.key()) == 0) return "unknown key '" + item.key() + "'";
  }
  for (const char* key : {"name", "source", "virtual_time_only"}) {
    if (v.contains(key) && !v.at(key).is_string()) return std::string(key) + ": must be a string";
  }
  if (v.contains("protocol") && v.at("protocol") != "s2" && v.at("protocol") != "durable_streams") {
    return "protocol: must be \"s2\" or \"durable_streams\"";
  }
  if (v.contains("config") && !v.at("config").is_object() && !v.at("config").is_null()) {
    return "config: must be an object";
  }
  if (v.contains("config") && v.at("config").is_object()) {
    // An unknown key is the vector's mistake (a typo would otherwise run on a default and
    // be charged to a clause); a bad value may be what a config vector is about (B3).
    std::string why;
    const Protocol p = v.value("protocol", "durable_streams") == "s2" ? Protocol::s2 : Protocol::durable_streams;
    constexpr std::string_view kUnknown = ": unknown key";
    if (!core_config_from_json(p, v.at("config"), &why) && why.size() >= kUnknown.size() &&
        why.compare(why.size() - kUnknown.size(), kUnknown.size(), kUnknown) == 0) {
      return why;
    }
    // A config the contract itself refuses (B3) can only be what the vector is about: it
    // says so with expect.config_error. Otherwise every target would be charged with the
    // vector's mistake (the reference core as a B1 failure).
    const bool expects_refusal =
        v.contains("expect") && v.at("expect").is_object() && v.at("expect").contains("config_error");
    if (!expects_refusal && !core_driver_factory()(p, v.at("config"), &why) && why.rfind(kUnsupportedPrefix, 0) != 0 &&
        why.rfind(kTargetFailedPrefix, 0) != 0) {
      return "config: the contract refuses it (" + why +
             "); a vector about that refusal says so with expect.config_error";
    }
  }
  if (v.contains("clauses")) {
    const json& c = v.at("clauses");
    if (!c.is_array()) return "clauses: must be an array of clause IDs";
    for (const auto& id : c) {
      if (!known_clause(id)) return "clauses: unknown clause " + id.dump();
    }
  }
  const json expect = v.value("expect", json::object());
  if (!expect.is_object()) return "expect: must be an object";
  for (const auto& item : expect.items()) {
    const std::string& k = item.key();
    const json& e = item.value();
    if (expect_keys.count(k) == 0) return "expect." + k + ": unknown key";
    const bool ok =
        k == "config_error" || k == "closed"           ? e.is_string()
        : k == "sends" || k == "stream_close_requests" ? e.is_number_unsigned()
        : k == "stamps"                                ? e.is_array()
        : k == "positions"
            ? e.is_array() && std::all_of(e.begin(), e.end(), [](const json& p) { return p.is_number_integer(); })
        : k == "clauses" ? e.is_object() && std::all_of(e.begin(), e.end(), known_clause)
                         : string_array(e);
    if (!ok) return "expect." + k + ": wrong type";
    if (k == "config_error" && e.get<std::string>().empty()) {  // "" would be found in every refusal
      return "expect.config_error: must name the field the refusal names (linger, max_in_flight, ...), not \"\"";
    }
    if (k == "outcomes") {
      for (const auto& o : e) {
        if (!is_outcome_text(o.get<std::string>())) {
          return "expect.outcomes: " + o.dump() +
                 " is no outcome a record can have (ok, ok:duplicate, "
                 "failed:<code>[:<certainty>], pending)";
        }
      }
    }
  }
  const json steps = v.value("steps", json::array());
  if (!steps.is_array()) return "steps: must be an array";
  if (steps.empty() && !expect.contains("config_error")) {
    return "no steps and no expect.config_error: the vector checks nothing";
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const json& s = steps[i];
    const std::string where = "steps[" + std::to_string(i) + "]";
    if (!s.is_object()) return where + ": must be an object";
    for (const auto& item : s.items()) {
      if (step_keys.count(item.key()) == 0) return where + "." + item.key() + ": unknown key";
    }
    std::string error;
    if (!command_from_json(s, &error)) return where + ": " + error;
    if (s.contains("clause") && !known_clause(s.at("clause"))) return where + ".clause: unknown clause";
    if (s.at("do") == "close_stream" &&
        !(v.contains("config") && v.at("config").is_object() && v.at("config").contains("stream_operations") &&
          v.at("config").at("stream_operations") == true)) {
      return where + ": close_stream needs config \"stream_operations\": true (a Durable Streams stream operation)";
    }
    if (v.value("protocol", "durable_streams") == "s2" && s.value("which", "oldest") == "newest") {
      return where + ".which: an S2 append session answers in order; \"newest\" is for durable_streams only";
    }
    if (s.contains("expect") && !s.at("expect").is_string()) return where + ".expect: must be a string";
    if (s.contains("expect") && !is_result_text(s.at("expect").get<std::string>())) {
      return where + ".expect: " + s.at("expect").dump() +
             " is no result a step can have (ticket, barrier, refused:<reason>, closed:<ok or code>, stream_close, "
             "none)";
    }
    if (s.contains("expect_sends") && !s.at("expect_sends").is_number_unsigned()) {
      return where + ".expect_sends: must be a count";
    }
    for (const char* key : {"expect_done", "expect_barriers"}) {
      if (s.contains(key) && !string_array(s.at(key))) return where + "." + key + ": must be an array of strings";
    }
  }
  return std::nullopt;
}

VectorResult run_vector(const json& v, const std::string& file, const DriverFactory& factory) {
  VectorResult r;
  r.file = file;
  if (auto why = check_vector_shape(v)) {
    r.name = std::filesystem::path(file).filename().string();
    r.malformed = *why;
    return r;
  }
  try {
    // Real time (a wire target): a step the machine delays past a short timer moves a send
    // into an earlier step than the vector expects, so a failed run is run again, up to
    // kRealTimeAttempts in all, and the verdict is the first passing run's (a defect in the
    // target fails every run; docs/conformance.md, "Real-time tolerances").
    VectorResult result = run_checked_vector(v, file, factory);
    while (!result.passed && !result.not_applicable && result.trace.config.measured_time &&
           result.attempts < kRealTimeAttempts) {
      const std::size_t attempts = result.attempts + 1;
      std::vector<std::string> earlier = std::move(result.earlier_failures);
      earlier.insert(earlier.end(), result.failures.begin(), result.failures.end());
      for (const auto& violation : result.violations) earlier.push_back(violation.clause + ": " + violation.message);
      result = run_checked_vector(v, file, factory);
      result.attempts = attempts;
      result.earlier_failures = std::move(earlier);
    }
    return result;
  } catch (const std::exception& e) {  // a value the shape check let through but the run cannot use
    r.name = std::filesystem::path(file).filename().string();
    r.malformed = std::string("cannot be run: ") + e.what();
    return r;
  }
}

namespace {
VectorResult run_checked_vector(const json& v, const std::string& file, const DriverFactory& factory) {
  VectorResult r;
  r.file = file;
  r.name = v.value("name", file);
  if (v.contains("clauses")) r.clauses = v.at("clauses").get<std::vector<std::string>>();
  const std::string primary = r.clauses.empty() ? std::string{} : r.clauses.front();
  std::string step_clause = primary;  // the clause a failing expectation is charged to
  auto failure = [&](std::string message) {
    r.failures.push_back(std::move(message));
    r.failed_clauses.push_back(step_clause);
  };
  const std::string protocol_name = v.value("protocol", "durable_streams");
  const Protocol protocol = protocol_name == "s2" ? Protocol::s2 : Protocol::durable_streams;
  r.protocol = protocol;
  const json config = v.value("config", json::object());
  const json expect = v.value("expect", json::object());
  std::string error;
  auto driver = factory(protocol, config, &error);
  if (!driver && error.rfind(kTargetFailedPrefix, 0) == 0) {  // not the config's fault: nothing judged
    r.target_failure = error.substr(kTargetFailedPrefix.size());
    return r;
  }
  if (!driver && error.rfind(kUnsupportedPrefix, 0) == 0) {
    r.not_applicable = true;
    r.not_applicable_reason = error.substr(kUnsupportedPrefix.size());
    return r;
  }
  // A vector whose expectations hold only when the harness holds time still (two
  // submits at one instant): not applicable on a real-time target, with its reason.
  if (driver && driver->capabilities().measured_time && v.contains("virtual_time_only")) {
    r.not_applicable = true;
    r.not_applicable_reason = "needs virtual time: " + v.at("virtual_time_only").get<std::string>();
    return r;
  }
  if (expect.contains("config_error")) {  // B3: the config must be refused, naming the field
    const std::string field = expect.at("config_error").get<std::string>();
    if (driver) {
      failure("config accepted, expected it refused naming '" + field + "'");
    } else if (error.find(field) == std::string::npos) {
      failure("config refused with '" + error + "', which does not name '" + field + "'");
    }
    r.passed = r.failures.empty();
    return r;
  }
  if (!driver) {
    failure("the target refused the config: " + error);
    return r;
  }
  const json steps = v.value("steps", json::array());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const json& s = steps[i];
    step_clause = s.value("clause", primary);
    auto command = command_from_json(s, &error);
    if (!command) {
      failure("step " + std::to_string(i) + ": " + error);
      break;
    }
    const std::size_t before = driver->trace().steps.size();
    if (!driver->run(*command)) {
      if (const std::string why = driver->target_failure(); !why.empty()) {
        r.target_failure =
            "step " + std::to_string(i) + ": " + why.substr(std::min(why.size(), kTargetFailedPrefix.size()));
        r.trace = driver->trace();
        return r;
      }
      if (const std::string why = driver->unsupported_reason(); !why.empty()) {
        r.not_applicable = true;
        r.not_applicable_reason = "step " + std::to_string(i) + ": " + why;
        r.trace = driver->trace();
        return r;
      }
      failure("step " + std::to_string(i) + " (" + describe(*command) + ") could not run: nothing to answer");
      continue;
    }
    const auto& trace = driver->trace();
    std::size_t sends = 0;
    std::vector<std::string> done;
    std::vector<std::string> barriers;
    for (std::size_t k = before; k < trace.steps.size(); ++k) {
      for (const auto& o : trace.steps[k].observed) {
        if (o.kind == Observation::Kind::send) ++sends;
        if (o.kind == Observation::Kind::done) done.push_back(completion_text(o));
        if (o.kind == Observation::Kind::barrier) {
          barriers.push_back(std::to_string(o.barrier) + ":" +
                             (o.ok ? std::string("ok") : "failed:" + std::string(to_string(o.error.code))));
        }
      }
    }
    const std::string where = "step " + std::to_string(i) + " (" + describe(*command) + ")";
    if (s.contains("expect")) {
      const std::string want = s.at("expect").get<std::string>();
      // The command's own step is the last it added (a real-time target may first record
      // what happened while the harness was between commands, as a timer step).
      const std::string got = result_text(trace.steps.back().result);
      if (!matches(want, got)) failure(where + ": expected " + want + ", got " + got);
    }
    if (s.contains("expect_sends") && s.at("expect_sends").get<std::size_t>() != sends) {
      failure(where + ": expected " + s.at("expect_sends").dump() + " sends, got " + std::to_string(sends));
    }
    const bool records = driver->capabilities().per_record_completions;
    if (records && s.contains("expect_done") &&
        per_ticket(s.at("expect_done").get<std::vector<std::string>>()) != per_ticket(done)) {
      failure(where + ": expected completions " + s.at("expect_done").dump() + ", got " + json(done).dump());
    }
    if (s.contains("expect_barriers") && s.at("expect_barriers").get<std::vector<std::string>>() != barriers) {
      failure(where + ": expected barriers " + s.at("expect_barriers").dump() + ", got " + json(barriers).dump());
    }
  }
  // Final expectations are charged to the primary clause unless "expect": {"clauses":
  // {"barriers": "F5", ...}} names another for that key.
  const json final_clauses = expect.value("clauses", json::object());
  auto charge = [&](const char* key) {
    step_clause = final_clauses.contains(key) && final_clauses.at(key).is_string()
                      ? final_clauses.at(key).get<std::string>()
                      : primary;
  };
  step_clause = primary;
  driver->finish();  // a real-time target's late actions are part of the trace
  if (const std::string why = driver->target_failure(); !why.empty()) {  // e.g. an unreadable observation
    r.target_failure = why.substr(std::min(why.size(), kTargetFailedPrefix.size()));
    r.trace = driver->trace();
    return r;
  }
  r.trace = driver->trace();
  const Trace& trace = r.trace;
  std::uint64_t accepted = 0;
  std::size_t total_sends = 0;
  std::vector<std::string> order;
  std::map<std::uint64_t, std::string> barrier_results;
  std::optional<std::string> closed;
  std::vector<const Observation*> first_sends;
  std::set<std::uint64_t> seen_batches;
  std::size_t stream_close_requests = 0;  // C4
  std::vector<std::string> stream_closes;
  for (const auto& step : trace.steps) {
    if (step.input.kind == Input::Kind::submit && step.result.kind == SyncResult::Kind::ticket) ++accepted;
    for (const auto& o : step.observed) {
      switch (o.kind) {
        case Observation::Kind::send:
          ++total_sends;
          if (seen_batches.insert(o.batch).second) first_sends.push_back(&o);
          break;
        case Observation::Kind::done:
          order.push_back("t" + std::to_string(o.first_ticket) + "-" + std::to_string(o.last_ticket));
          break;
        case Observation::Kind::barrier:
          order.push_back("b" + std::to_string(o.barrier));
          barrier_results[o.barrier] = o.ok ? "ok" : "failed:" + std::string(to_string(o.error.code));
          break;
        case Observation::Kind::closed:
          order.push_back("closed");
          closed = o.ok ? "ok" : "failed:" + std::string(to_string(o.error.code));
          break;
        case Observation::Kind::capacity: break;
        case Observation::Kind::stream_close: ++stream_close_requests; break;
        case Observation::Kind::stream_closed:
          order.push_back("s" + std::to_string(o.op));
          stream_closes.push_back(o.ok ? "ok" : "failed:" + std::string(to_string(o.error.code)));
          break;
      }
    }
  }
  const bool records = driver->capabilities().per_record_completions;  // else: outcomes n/a
  charge("outcomes");
  if (records && expect.contains("outcomes")) {
    const auto want = expect.at("outcomes").get<std::vector<std::string>>();
    if (want.size() != accepted) {
      failure("expected " + std::to_string(want.size()) + " accepted records, got " + std::to_string(accepted));
    }
    const bool certainty = driver->capabilities().classifies_certainty;
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(want.size(), accepted); ++k) {
      const std::string got = certainty ? outcome_of(trace, k) : without_certainty(outcome_of(trace, k));
      const std::string wanted = certainty ? want[k] : without_certainty(want[k]);
      if (!matches(wanted, got)) failure("ticket " + std::to_string(k) + ": expected " + wanted + ", got " + got);
    }
  }
  charge("positions");
  if (records && expect.contains("positions")) {  // S2: record i of a batch sits at ack.start + i (P4)
    std::vector<std::int64_t> positions;
    for (std::uint64_t k = 0; k < accepted; ++k) {
      std::int64_t position = -1;
      for (const auto& step : trace.steps) {
        for (const auto& o : step.observed) {
          if (o.kind == Observation::Kind::done && o.ok && k >= o.first_ticket && k <= o.last_ticket) {
            position = static_cast<std::int64_t>(o.ack.seq_num ? *o.ack.seq_num : o.ack.start + (k - o.first_ticket));
          }
        }
      }
      positions.push_back(position);
    }
    if (expect.at("positions").get<std::vector<std::int64_t>>() != positions) {
      failure("expected positions " + expect.at("positions").dump() + ", got " + json(positions).dump());
    }
  }
  charge("barriers");
  if (expect.contains("barriers")) {
    const auto want = expect.at("barriers").get<std::vector<std::string>>();
    for (std::size_t b = 0; b < want.size(); ++b) {
      const std::string got = barrier_results.count(b) ? barrier_results[b] : "pending";
      if (!matches(want[b], got)) failure("barrier " + std::to_string(b) + ": expected " + want[b] + ", got " + got);
    }
  }
  charge("closed");
  if (expect.contains("closed")) {
    const std::string want = expect.at("closed").get<std::string>();
    const std::string got = closed.value_or("none");
    if (!matches(want, got)) failure("close: expected " + want + ", got " + got);
  }
  charge("stream_closes");
  if (expect.contains("stream_closes") &&
      !std::equal(stream_closes.begin(), stream_closes.end(), expect.at("stream_closes").begin(),
                  expect.at("stream_closes").end(),
                  [](const std::string& got, const json& want) { return matches(want.get<std::string>(), got); })) {
    failure("expected stream closes " + expect.at("stream_closes").dump() + ", got " + json(stream_closes).dump());
  }
  if (expect.contains("stream_close_requests") &&
      expect.at("stream_close_requests").get<std::size_t>() != stream_close_requests) {
    failure("expected " + expect.at("stream_close_requests").dump() + " stream-close requests, got " +
            std::to_string(stream_close_requests));
  }
  charge("sends");
  if (expect.contains("sends") && expect.at("sends").get<std::size_t>() != total_sends) {
    failure("expected " + expect.at("sends").dump() + " sends in all, got " + std::to_string(total_sends));
  }
  // On a target whose flush and close outcomes are blocking calls returning on their own
  // threads (Capabilities::blocking_outcomes), only the records' order is the producer's.
  const bool records_only = driver->capabilities().blocking_outcomes;
  auto order_per_ticket = [records_only](const std::vector<std::string>& o) {
    std::vector<std::string> out;
    for (const auto& e : o) {
      if (records_only && (e == "closed" || (!e.empty() && (e[0] == 'b' || e[0] == 's')))) continue;
      if (e.size() > 1 && e[0] == 't') {
        for (const auto& t : per_ticket({e.substr(1) + ":"})) out.push_back("t" + t.substr(0, t.size() - 1));
      } else {
        out.push_back(e);
      }
    }
    return out;
  };
  charge("order");
  if (records && expect.contains("order") &&
      order_per_ticket(expect.at("order").get<std::vector<std::string>>()) != order_per_ticket(order)) {
    failure("expected completion order " + expect.at("order").dump() + ", got " + json(order).dump());
  }
  charge("bodies");
  if (expect.contains("bodies")) {
    std::vector<std::string> bodies;
    for (const auto* o : first_sends) bodies.push_back(o->body);
    if (expect.at("bodies").get<std::vector<std::string>>() != bodies) {
      failure("expected batch bodies " + expect.at("bodies").dump() + ", got " + json(bodies).dump());
    }
  }
  charge("stamps");
  if (expect.contains("stamps")) {
    json stamps = json::array();
    for (const auto* o : first_sends) {
      if (o->stamp.match_seq_num) {
        stamps.push_back({{"match_seq_num", *o->stamp.match_seq_num}});
      } else if (o->stamp.sequenced) {
        stamps.push_back({{"epoch", o->stamp.epoch}, {"seq", o->stamp.seq}});
      } else {
        stamps.push_back(json::object());
      }
    }
    if (expect.at("stamps") != stamps)
      failure("expected stamps " + expect.at("stamps").dump() + ", got " + stamps.dump());
  }
  r.violations = check_trace(trace, driver->capabilities());
  r.passed = r.failures.empty() && r.violations.empty();
  if (!r.violations.empty()) r.evidence = render_evidence(trace, r.violations.front());
  if (!r.failures.empty()) {
    std::ostringstream s;
    s << r.failures.front() << "\n";
    for (std::size_t i = 0; i < trace.steps.size(); ++i) s << "    " << describe(trace.steps[i], i) << "\n";
    r.evidence = s.str() + r.evidence;
  }
  return r;
}

}  // namespace

std::vector<VectorResult> run_vectors(const std::string& directory, const DriverFactory& factory) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  // Subdirectories too (conformance/vectors/peers/); the order is the paths' (D2).
  for (auto it = std::filesystem::recursive_directory_iterator(directory, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".json") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::vector<VectorResult> out;
  bool target_failed = false;  // from then on the vectors are only checked, not run
  for (const auto& f : files) {
    auto v = read_json_file(f.string());  // bounded size and nesting (R3)
    std::optional<std::string> malformed;
    if (!v) {
      malformed = v.error();
    } else if (target_failed) {
      malformed = check_vector_shape(*v);
    }
    if (malformed) {
      VectorResult r;
      r.name = f.filename().string();
      r.file = f.string();
      r.malformed = std::move(*malformed);
      out.push_back(std::move(r));
      continue;
    }
    if (target_failed) continue;  // a driver that died or hung would only fail again (30 s each)
    out.push_back(run_vector(*v, f.string(), factory));
    target_failed = !out.back().target_failure.empty();
  }
  return out;
}

}  // namespace prodsm::conformance
