// SPDX-License-Identifier: Apache-2.0
// `prodsm conform`: runs the scenario vectors and the generated properties against a
// target and prints the clause × verdict table (docs/conformance.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "conform_matrix.hpp"
#include "numeric_flags.hpp"
#include "prodsm/conformance/adapter_targets.hpp"
#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/json_limits.hpp"
#include "prodsm/conformance/properties.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::tools {
namespace {

namespace cf = prodsm::conformance;

/// Where the conformance data (conformance/vectors, conformance/findings) is: installed
/// beside this executable (<prefix>/share/prodsm, for <prefix>/bin/prodsm), else the
/// source tree it was built from — so an installed prodsm does not depend on that tree.
std::string conformance_data_root() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path prefix = exe.parent_path();
    for (const auto& part : std::filesystem::path(PRODSM_INSTALL_BINDIR)) {
      (void)part;
      prefix = prefix.parent_path();
    }
    const std::filesystem::path installed = prefix / PRODSM_INSTALL_DATADIR / "prodsm";
    if (std::filesystem::is_directory(installed / "conformance" / "vectors", ec)) return installed.string();
  }
  return PRODSM_SOURCE_DIR;
}

struct ConformOptions {
  std::string target = "core";
  std::vector<std::string> vectors{conformance_data_root() + "/conformance/vectors"};
  int tests = 300;
  int max_size = 100;
  std::optional<std::uint64_t> seed;
  std::string save_findings;
  std::string expect;          ///< compare the verdicts with this committed file
  std::string write_expected;  ///< write the verdicts to this file
  bool skip_properties = false;
  bool verbose = false;
  bool matrix = false;                      ///< --matrix: every available target, one table
  bool json = false;                        ///< --json (with --matrix)
  bool vectors_given = false;               ///< --vectors was given
  std::optional<std::uint64_t> time_scale;  ///< --time-scale: real time per unit of trace time (wire targets)
  bool serve = false;                       ///< --serve: the SDK over its own HTTP client, against our server
  bool no_shrink = false;                   ///< --no-shrink: report property failures unshrunk
  std::string driver;                       ///< --driver: a driver command line of one's own
  bool driver_given = false;                ///< --driver was given (possibly empty)
  bool target_given = false;                ///< --target was given
};

/// The words of a --driver command line (split on spaces and tabs; no quoting).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string word;
  for (const char ch : line + " ") {
    if (ch == ' ' || ch == '\t') {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
    } else {
      word += ch;
    }
  }
  return out;
}

struct Verdict {
  enum class Kind { pass, fail, not_applicable } kind = Kind::pass;
  std::vector<std::string> failures;  // counterexamples
  std::vector<std::string> notes;     // why vectors about it could not run
  bool exercised = false;
  /// A vector's own expectation failed it (an expected refusal, outcome or barrier): that is
  /// evidence whatever the target's capabilities, so the FAIL stands where the trace
  /// checker does not apply.
  bool failed_by_expectation = false;
};

/// Why `clause` cannot be checked on a target with `caps`: each capability the clause
/// needs and the target lacks, with the driver's note when it gave one.
std::string capability_reason(const cf::Clause& clause, const cf::Capabilities& caps,
                              const std::map<std::string, std::string>& notes) {
  struct Need {
    bool cf::Capabilities::*flag;
    const char* key;
    const char* text;
  };
  static const Need needs[] = {
      {&cf::Capabilities::per_record_completions, "per_record_completions", "the SDK has no per-record completion"},
      {&cf::Capabilities::flush_barrier, "flush_barrier", "the SDK has no non-terminal flush"},
      {&cf::Capabilities::abort, "abort", "the SDK has no abort"},
      {&cf::Capabilities::synchronous_rejection, "synchronous_rejection",
       "the SDK does not refuse submits synchronously"},
      {&cf::Capabilities::virtual_time, "virtual_time", "the SDK cannot run on harness time"},
      {&cf::Capabilities::classifies_certainty, "classifies_certainty", "the SDK does not say definite or indefinite"},
      {&cf::Capabilities::stream_close, "stream_close",
       "the driver protocol has no stream close (C4 runs on the core target's stream-close vectors)"},
  };
  std::string out;
  for (const auto& n : needs) {
    if (caps.*n.flag) continue;
    cf::Capabilities all_but;  // every capability except this one
    all_but.*n.flag = false;
    if (clause.applies(all_but)) continue;  // the clause does not need it
    const auto note = notes.find(n.key);
    out += (out.empty() ? "" : "; ") + std::string(n.text) + (note != notes.end() ? " (" + note->second + ")" : "");
  }
  return out.empty() ? "not expressible by this target" : out;
}

/// Why the output paths or the --expect file cannot be used, checked before anything runs.
std::optional<std::string> check_files(const ConformOptions& o, nlohmann::json* expected) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!o.expect.empty()) {
    auto parsed = conformance::read_json_file(o.expect);  // bounded size and nesting (R3)
    if (!parsed) return "--expect: '" + o.expect + "': " + parsed.error();
    *expected = std::move(*parsed);
    if (!expected->is_object()) return "--expect: '" + o.expect + "' is not a verdict file (a JSON object)";
    for (const char* part : {"clauses", "vectors"}) {
      if (!expected->contains(part)) continue;
      const auto& p = expected->at(part);
      if (!p.is_object() || !std::all_of(p.begin(), p.end(), [](const nlohmann::json& v) { return v.is_string(); })) {
        return "--expect: '" + o.expect + "': \"" + part + "\" must map names to verdict strings";
      }
    }
  }
  if (!o.write_expected.empty() && fs::is_directory(o.write_expected, ec)) {
    return "--write-expected: '" + o.write_expected + "' is a directory";
  }
  if (!o.save_findings.empty() && fs::exists(o.save_findings, ec) && !fs::is_directory(o.save_findings, ec)) {
    return "--save-findings: '" + o.save_findings + "' exists and is not a directory";
  }
  return std::nullopt;
}

/// Why --target and --driver do not name a target together, or nullopt: a driver command
/// is a target of its own, named by --target (never core or an adapter, whose producers
/// are built in), and an empty one names nothing (it used to judge the core silently).
std::optional<std::string> check_target(const ConformOptions& o) {
  if (o.target_given && o.target.find_first_not_of(" \t\n\r\v\f") == std::string::npos) return "--target is empty";
  if (!o.driver_given) return std::nullopt;
  if (o.driver.find_first_not_of(" \t\n\r\v\f") == std::string::npos) {
    return "--driver is empty (give the driver's command line, e.g. --driver 'python3 my_driver.py')";
  }
  if (!o.target_given) return "--driver needs --target NAME for the driver's SDK";
  if (o.target == "core" || cf::adapter_target(o.target)) {
    return "--driver needs --target NAME for the driver's SDK: '" + o.target +
           "' is one of prodsm's own targets, which run without a driver";
  }
  return std::nullopt;
}

int run_conform(const ConformOptions& o) {
  if (auto why = check_target(o)) {
    std::fprintf(stderr, "prodsm conform: %s\n", why->c_str());
    return kExitBadInput;
  }
  nlohmann::json expected;
  if (auto why = check_files(o, &expected)) {
    std::fprintf(stderr, "prodsm conform: %s\n", why->c_str());
    return kExitBadInput;
  }
  cf::DriverFactory factory;
  cf::TargetInfo info;
  std::string error;
  if (o.target == "core") {
    factory = cf::core_driver_factory();
    info.driver = "core";
    info.sdk = "prodsm core";
    info.protocols = {cf::Protocol::durable_streams, cf::Protocol::s2};
  } else if (auto adapter = cf::adapter_target(o.target); adapter && !o.serve) {
    cf::RealTimeOptions rt;
    rt.time_scale = static_cast<std::uint32_t>(o.time_scale.value_or(rt.time_scale));
    factory = cf::adapter_driver_factory(*adapter, rt, &info);
  } else if (auto target = !o.driver.empty()
                               ? std::optional<cf::ExternalTarget>{cf::ExternalTarget{o.target, words(o.driver)}}
                               : cf::builtin_target(o.target, PRODSM_SOURCE_DIR);
             target && !adapter) {
    target->show_driver_log = o.verbose;
    if (o.serve) {
      // Served: the SDK's own HTTP client and clock; its promise settlements need a longer
      // quiet period than an in-process callback, and its timers a coarser scale.
      cf::RealTimeOptions rt;
      rt.time_scale = static_cast<std::uint32_t>(o.time_scale.value_or(20));
      rt.quiet_real_ns = std::chrono::milliseconds{30};
      factory = cf::served_driver_factory(*target, rt, &info, &error);
    } else {
      factory = cf::external_driver_factory(*target, &info, &error);
    }
    if (!factory) {
      std::fprintf(stderr, "prodsm conform: target %s: %s\n", o.target.c_str(), error.c_str());
      return kExitServerError;
    }
  } else if (o.serve && adapter) {
    std::fprintf(stderr, "prodsm conform: --serve: %s is already a wire target (drop --serve)\n", o.target.c_str());
    return kExitBadInput;
  } else {
    std::fprintf(stderr,
                 "prodsm conform: --target: unknown target '%s' (available: core, prodsm-asio, prodsm-blocking, "
                 "s2-ts, ds-ts, librdkafka; another SDK's needs --driver CMD)\n",
                 o.target.c_str());
    return kExitBadInput;
  }
  const cf::Capabilities caps = o.target == "core" ? cf::Capabilities{} : info.capabilities;

  std::map<std::string, Verdict> verdicts;
  for (const auto& clause : cf::clauses()) verdicts[std::string(clause.id)];

  // ---- vectors ---------------------------------------------------------------------------
  std::vector<cf::VectorResult> results;
  for (const auto& dir : o.vectors) {
    if (!std::filesystem::is_directory(dir)) {
      std::fprintf(stderr, "prodsm conform: --vectors: '%s' is not a directory\n", dir.c_str());
      return kExitBadInput;
    }
    auto more = cf::run_vectors(dir, factory);
    for (auto& r : more) results.push_back(std::move(r));
  }
  // A vector file that is not a valid vector is the caller's mistake, not the target's:
  // report it and run nothing more (a skipped vector must never look like a pass).
  int malformed = 0;
  for (const auto& r : results) {
    if (r.malformed.empty()) continue;
    std::fprintf(stderr, "prodsm conform: %s: malformed vector: %s\n", r.file.c_str(), r.malformed.c_str());
    ++malformed;
  }
  if (malformed > 0) {
    std::fprintf(stderr, "prodsm conform: %d malformed vector file(s); nothing was judged\n", malformed);
    return kExitBadInput;
  }
  // A target whose driver died, hung or answered garbage was not judged: that is neither a
  // pass nor n/a (exit 3, as a driver that cannot start).
  for (const auto& r : results) {
    if (r.target_failure.empty()) continue;
    std::fprintf(stderr, "prodsm conform: target %s failed running vector %s: %s\n", o.target.c_str(), r.name.c_str(),
                 r.target_failure.c_str());
    std::fprintf(stderr, "prodsm conform: nothing was judged\n");
    return kExitServerError;
  }
  if (results.empty() && o.skip_properties) {
    std::fprintf(stderr, "prodsm conform: nothing to check: no *.json vectors found and --skip-properties given\n");
    return kExitBadInput;
  }
  std::size_t vectors_passed = 0;
  std::size_t vectors_na = 0;
  nlohmann::json vector_verdicts = nlohmann::json::object();
  for (const auto& r : results) {
    // "fail B1 B4": the clauses a vector fails, so a finding that moves to another clause
    // shows up as a changed verdict.
    std::set<std::string> failed(r.failed_clauses.begin(), r.failed_clauses.end());
    for (const auto& v : r.violations) failed.insert(std::string(v.clause));
    // A vector that turned out not applicable part-way is n/a, whatever its earlier steps
    // failed (those failures are not the target's: the vector could not be run through).
    std::string verdict = r.not_applicable ? "n/a" : r.passed ? "pass" : "fail";
    if (!r.not_applicable) {
      for (const auto& c : failed) verdict += " " + c;
    }
    vector_verdicts[r.name] = verdict;
    if (r.not_applicable) {
      ++vectors_na;
      for (const auto& c : r.clauses) {
        if (verdicts.count(c)) verdicts[c].notes.push_back("vector " + r.name + " n/a: " + r.not_applicable_reason);
      }
      if (o.verbose) std::printf("vector %-48s n/a (%s)\n", r.name.c_str(), r.not_applicable_reason.c_str());
      continue;
    }
    if (r.passed) ++vectors_passed;
    for (const auto& c : r.clauses) {
      if (verdicts.count(c)) verdicts[c].exercised = true;
    }
    for (std::size_t i = 0; i < r.failures.size(); ++i) {
      const std::string& c = i < r.failed_clauses.size() ? r.failed_clauses[i] : std::string{};
      if (!verdicts.count(c)) continue;
      verdicts[c].kind = Verdict::Kind::fail;
      verdicts[c].failed_by_expectation = true;
      verdicts[c].failures.push_back("vector " + r.name + ": " + r.failures[i]);
    }
    for (const auto& v : r.violations) {
      verdicts[v.clause].kind = Verdict::Kind::fail;
      verdicts[v.clause].failures.push_back("vector " + r.name + ":\n" + cf::render_evidence(r.trace, v));
    }
    if (o.verbose) std::printf("vector %-48s %s\n", r.name.c_str(), r.passed ? "pass" : "FAIL");
  }

  // ---- properties ------------------------------------------------------------------------
  std::vector<cf::PropertyResult> properties;
  std::vector<const cf::PropertySpec*> judged;  // properties that ran sequences (passed or failed)
  std::size_t properties_offered = 0;           // properties in a protocol the target speaks
  bool findings_unsaved = false;                // a --save-findings file could not be written
  if (!o.skip_properties) {
    cf::PropertyOptions po;
    po.tests = o.tests;
    po.max_size = o.max_size;
    po.seed = o.seed;
    po.lenient_config = o.target != "core";
    po.shrink = !o.no_shrink;
    for (const auto& spec : cf::default_properties()) {
      if (std::find(info.protocols.begin(), info.protocols.end(), spec.protocol) == info.protocols.end()) continue;
      ++properties_offered;
      // Each failure is shrunk, reported and saved; its clause is then set aside and the
      // property runs again, so one run lists every divergence it can reach (up to 12).
      cf::PropertyOptions each = po;
      for (int round = 0; round < 12; ++round) {
        // On real time a property takes minutes (each sequence waits for its timers): say
        // what is running, so a long run is seen to progress.
        if (caps.measured_time) {
          std::fprintf(stderr, "%s%s%s: up to %d sequences on real time\n",
                       std::string(kPropertyProgressPrefix).c_str(), spec.name.c_str(),
                       round > 0 ? " (again, with the clauses it failed set aside)" : "", each.tests);
        }
        auto r = cf::run_property(spec, factory, each);
        if (!r.target_failure.empty()) {
          std::fprintf(stderr, "prodsm conform: target %s failed running property %s: %s\n", o.target.c_str(),
                       spec.name.c_str(), r.target_failure.c_str());
          std::fprintf(stderr, "prodsm conform: nothing more was judged\n");
          return kExitServerError;
        }
        if (r.not_applicable) {
          if (o.verbose) std::printf("property %-40s n/a (%s)\n", spec.name.c_str(), r.description.c_str());
          break;
        }
        if (judged.empty() || judged.back() != &spec) judged.push_back(&spec);
        if (o.verbose) {
          std::printf("property %-40s %s (%d sequences)\n", spec.name.c_str(),
                      r.passed ? "pass" : ("FAIL " + (r.violation ? r.violation->clause : std::string("?"))).c_str(),
                      r.tests);
        }
        if (r.passed) {
          properties.push_back(std::move(r));
          break;
        }
        const std::string clause = r.violation ? r.violation->clause : "D2";
        auto& v = verdicts[clause];
        v.kind = Verdict::Kind::fail;
        std::string note = "property " + spec.name + " (after " + std::to_string(r.tests) + " passing sequences):\n" +
                           (r.evidence.empty() ? r.description : r.evidence) + "    reproduce with RC_PARAMS=\"" +
                           r.reproduce + "\"";
        if (!o.save_findings.empty() && !r.counterexample.is_null()) {
          std::filesystem::path dir = std::filesystem::path(o.save_findings) / o.target;
          std::error_code ec;
          std::filesystem::create_directories(dir, ec);
          std::string file = spec.name + "-" + clause + ".json";
          for (char& ch : file) {
            if (ch == '/') ch = '-';
          }
          std::ofstream out(dir / file);
          out << r.counterexample.dump(2) << "\n";
          out.close();
          if (ec || !out) {
            const std::string why = "cannot save " + (dir / file).string() + (ec ? ": " + ec.message() : "");
            std::fprintf(stderr, "prodsm conform: --save-findings: %s\n", why.c_str());
            note += "\n    " + why;
            findings_unsaved = true;
          } else {
            note += "\n    saved as vector " + (dir / file).string();
            // The raw sequence answers the SDK's sends: the core may send at other steps,
            // and then cannot replay it. Said here, so it is reduced by hand before it
            // goes into conformance/findings/<sdk>/, where it must pass on the core.
            if (o.target != "core") {
              const auto on_core = cf::run_vector(r.counterexample, (dir / file).string(), cf::core_driver_factory());
              if (!on_core.passed && !on_core.not_applicable) {
                const std::string why = !on_core.malformed.empty()    ? on_core.malformed
                                        : !on_core.failures.empty()   ? on_core.failures.front()
                                        : !on_core.violations.empty() ? on_core.violations.front().clause + ": " +
                                                                            on_core.violations.front().message
                                                                      : std::string("it fails");
                note += " (as saved it does not pass on the core: " + why +
                        "; reduce it by hand and add the contract's expectations, docs/conformance.md)";
              }
            }
          }
        }
        v.failures.push_back(note);
        const bool found_clause = r.violation.has_value();
        properties.push_back(std::move(r));
        if (!found_clause || !each.known_failures.insert(clause).second) break;
      }
    }
  }

  // Nothing judged: every vector in a protocol the target speaks was n/a and no property
  // ran a sequence, although some were offered (a driver that answers `unsupported` to
  // everything). That is no verdict on the target (exit 3), never "conformant". Vectors
  // only in protocols the target does not speak offer it nothing: their n/a stands.
  const std::size_t vectors_offered =
      static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [&](const cf::VectorResult& r) {
        return std::find(info.protocols.begin(), info.protocols.end(), r.protocol) != info.protocols.end();
      }));
  const bool nothing_judged =
      results.size() == vectors_na && judged.empty() && vectors_offered + properties_offered > 0;

  // ---- table -----------------------------------------------------------------------------
  int failures = 0;
  nlohmann::json clause_verdicts = nlohmann::json::object();
  std::printf("\nprodsm conform --target %s (%s): %zu/%zu vectors passed, %zu not applicable", o.target.c_str(),
              info.sdk.c_str(), vectors_passed, results.size() - vectors_na, vectors_na);
  if (!o.skip_properties) {
    // A property that failed runs again with its clause set aside: its runs count once
    // as a property, every run's sequences count.
    int sequences = 0;
    for (const auto& p : properties) sequences += p.tests;
    std::printf(", %zu properties", judged.size());
    if (properties.size() != judged.size()) std::printf(" (%zu runs)", properties.size());
    std::printf(", %d generated sequences", sequences);
  }
  std::printf("\n\n| clause | verdict | how |\n|---|---|---|\n");
  for (const auto& clause : cf::clauses()) {
    auto& v = verdicts[std::string(clause.id)];
    std::string verdict;
    std::string how;
    switch (clause.coverage) {
      case cf::Coverage::trace:
        how = "trace checker";
        if (!clause.applies(caps) && v.failed_by_expectation) {  // the vectors' evidence stands
          how =
              "vector expectations (the trace checker does not apply: " + capability_reason(clause, caps, info.notes) +
              ")";
        } else if (!clause.applies(caps)) {
          v.kind = Verdict::Kind::not_applicable;
          how = capability_reason(clause, caps, info.notes);
        }
        break;
      case cf::Coverage::config: how = "config vectors"; break;
      case cf::Coverage::replay:
        how = o.skip_properties ? "replay (properties skipped)" : "replay of every generated run";
        if (o.skip_properties) v.kind = Verdict::Kind::not_applicable;
        if (caps.measured_time || !caps.virtual_time) {
          v.kind = Verdict::Kind::not_applicable;
          how =
              "the target runs on real time: a replay cannot interleave its timers the same way step for step "
              "(D2 is the core's, judged on the core target)";
        }
        break;
      case cf::Coverage::structural:
        v.kind = Verdict::Kind::not_applicable;
        how = "structural: checked by prodsm's own test suite, not by traces";
        break;
      case cf::Coverage::adapter:
        how = "trace checker on every completion callback";
        if (!clause.applies(caps)) {
          v.kind = Verdict::Kind::not_applicable;
          how = "adapter clause: judged on the adapter targets (prodsm-asio, prodsm-blocking)";
        }
        break;
    }
    // A pass needs something that exercised the clause: a vector about it that ran, or a
    // property whose runs can break it (S1 holds vacuously on Durable Streams traces).
    const bool by_property = std::any_of(judged.begin(), judged.end(), [&](const cf::PropertySpec* spec) {
      return cf::property_exercises(*spec, clause.id);
    });
    if (v.kind == Verdict::Kind::pass &&
        (clause.coverage == cf::Coverage::trace || clause.coverage == cf::Coverage::config) && !v.exercised &&
        !by_property) {
      v.kind = Verdict::Kind::not_applicable;
      const std::string no_property = o.skip_properties ? "properties were skipped"
                                      : judged.empty()  ? "no property could run"
                                                        : "no property that exercises it could run";
      how = v.notes.empty() ? "no vector exercises it and " + no_property
                            : "no vector about it could run (" + v.notes.front() + ") and " + no_property;
    }
    switch (v.kind) {
      case Verdict::Kind::pass: verdict = "pass"; break;
      case Verdict::Kind::fail:
        verdict = "FAIL";
        ++failures;
        break;
      case Verdict::Kind::not_applicable: verdict = "n/a"; break;
    }
    clause_verdicts[std::string(clause.id)] = verdict;
    std::printf("| %s | %s | %s — %s |\n", std::string(clause.id).c_str(), verdict.c_str(),
                std::string(clause.title).c_str(), how.c_str());
  }
  if (failures > 0) {
    std::printf("\nCounterexamples:\n");
    for (const auto& clause : cf::clauses()) {
      const auto& v = verdicts[std::string(clause.id)];
      if (v.kind != Verdict::Kind::fail) continue;
      for (const auto& n : v.failures) std::printf("\n[%s] %s\n", std::string(clause.id).c_str(), n.c_str());
    }
  }
  // Real time: every vector that ran more than once (a rerun that passed: the machine delayed
  // a step past a timer; every run failed: a divergence), so a target that needs reruns more
  // and more often shows it.
  bool rerun_header = false;
  for (const auto& r : results) {
    if (r.attempts <= 1 || r.earlier_failures.empty()) continue;
    if (!rerun_header) std::printf("\nReal-time reruns (docs/conformance.md, \"Real-time tolerances\"):\n");
    rerun_header = true;
    std::printf("  vector %s: %s on run %zu of %zu; run 1 found: %s\n", r.name.c_str(), r.passed ? "passed" : "failed",
                r.attempts, cf::kRealTimeAttempts, r.earlier_failures.front().c_str());
  }
  if (nothing_judged) {
    const std::string what = std::string("nothing was judged: the ") +
                             (o.target == "core" || cf::adapter_target(o.target) ? "target" : "driver") +
                             " refused every vector and property (" + std::to_string(vectors_offered) +
                             " vector(s) and " + std::to_string(properties_offered) +
                             " property(ies) offered, every one n/a: see the table)";
    std::printf("\n%s\n", what.c_str());
    std::fprintf(stderr, "prodsm conform: target %s: %s\n", o.target.c_str(), what.c_str());
    return kExitServerError;
  }
  std::printf("\n%s\n", failures == 0 ? "conformant: no clause failed"
                                      : (std::to_string(failures) + " clause(s) failed").c_str());

  // ---- expected findings --------------------------------------------------------------
  const nlohmann::json verdict_file = {
      {"target", o.target}, {"sdk", info.sdk}, {"clauses", clause_verdicts}, {"vectors", vector_verdicts}};
  if (!o.write_expected.empty()) {
    std::ofstream out(o.write_expected);
    out << verdict_file.dump(2) << "\n";
    out.close();
    if (!out) {  // the table is printed: only the file is missing (exit 4, as any output)
      std::fprintf(stderr, "prodsm conform: --write-expected: cannot write '%s'\n", o.write_expected.c_str());
      return kExitOutputFailed;
    }
    std::printf("wrote the verdicts to %s\n", o.write_expected.c_str());
  }
  if (!o.expect.empty()) {
    int differences = 0;
    for (const char* part : {"clauses", "vectors"}) {
      const auto want = expected.value(part, nlohmann::json::object());
      const auto& got = verdict_file.at(part);
      for (const auto& [key, value] : got.items()) {
        if (!want.contains(key) || want.at(key) != value) {
          std::printf("changed: %s %s: expected %s, now %s\n", part, key.c_str(),
                      want.contains(key) ? want.at(key).dump().c_str() : "(absent)", value.dump().c_str());
          ++differences;
        }
      }
      for (const auto& [key, value] : want.items()) {
        if (!got.contains(key)) {
          std::printf("changed: %s %s: expected %s, now absent\n", part, key.c_str(), value.dump().c_str());
          ++differences;
        }
      }
    }
    if (differences > 0) {
      std::printf("%d verdict(s) differ from %s (a changed SDK or checker: review, then --write-expected)\n",
                  differences, o.expect.c_str());
      return findings_unsaved ? kExitOutputFailed : kExitFailure;
    }
    std::printf("verdicts match %s\n", o.expect.c_str());
    return findings_unsaved ? kExitOutputFailed : kExitOk;
  }
  if (findings_unsaved) return kExitOutputFailed;  // said on stderr as each failed
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void add_conform_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ConformOptions>();
  CLI::App* cmd = app.add_subcommand("conform", "Check a producer against the contract: vectors + properties");
  cmd->add_option("--target", o->target,
                  "Producer under test: core (prodsm's own core), prodsm-asio / prodsm-blocking (prodsm's adapters "
                  "over loopback, real time), s2-ts (@s2-dev/streamstore Producer), ds-ts "
                  "(@durable-streams/client IdempotentProducer), librdkafka (its idempotent producer against its mock "
                  "cluster)")
      ->capture_default_str();
  add_decimal_option(*cmd, "--time-scale", o->time_scale, 1, 1000,
                     "Wire targets (prodsm-asio, prodsm-blocking, --serve): real ms per ms of trace time, 1..1000 "
                     "(default 10; 20 with --serve)");
  cmd->add_flag("--serve", o->serve,
                "Run the target's SDK over its own HTTP client and clock against prodsm's simulated Durable Streams "
                "server on a loopback port (the driver only submits, flushes, closes and reports outcomes)");
  cmd->add_option("--driver", o->driver,
                  "Run this driver command as the target, named by --target NAME (required); its words are split on "
                  "spaces and tabs, with no quoting; it speaks the JSON-lines driver protocol (docs/conformance.md)");
  cmd->add_option("--vectors", o->vectors, "Directory of scenario vectors (*.json); repeat for more directories")
      ->capture_default_str();
  add_decimal_option(*cmd, "--tests", o->tests, 1, 1'000'000, "Generated sequences per property, 1..1000000");
  add_decimal_option(*cmd, "--max-size", o->max_size, 1, 10'000, "Largest generated sequence size, 1..10000");
  add_decimal_option(*cmd, "--seed", o->seed, 0, UINT64_MAX, "Generator seed (default: RC_PARAMS or random)");
  cmd->add_option("--save-findings", o->save_findings,
                  "Write each shrunk property failure as a vector under DIR/<target>/");
  cmd->add_flag("--skip-properties", o->skip_properties, "Run only the vectors");
  cmd->add_flag("--no-shrink", o->no_shrink,
                "Report a failing generated sequence as found, without shrinking it (each shrinking step replays "
                "the sequence: slow on real-time targets; --matrix uses it for them)");
  cmd->add_option("--expect", o->expect,
                  "Compare the verdicts with this file (exit 0 iff they match, whatever they are)");
  cmd->add_option("--write-expected", o->write_expected, "Write the verdicts to this file");
  CLI::Option* verbose =
      cmd->add_flag("-v,--verbose", o->verbose, "One line per vector and property; show the driver's log");
  CLI::Option* matrix =
      cmd->add_flag("--matrix", o->matrix,
                    "Judge every target that can run here (core, prodsm-asio, prodsm-blocking, s2-ts, "
                    "ds-ts, ds-ts served, librdkafka) and print one clause x target table; "
                    "vectors default to conformance/vectors plus each target's findings");
  cmd->add_flag("--json", o->json, "With --matrix: print the table as one JSON object")->needs(matrix);
  for (const char* other : {"--target", "--expect", "--write-expected", "--save-findings", "--serve", "--driver"}) {
    matrix->excludes(cmd->get_option(other));
  }
  matrix->excludes(verbose);
  cmd->footer(
      "Exit status: 0 every clause passed or is not applicable (with --expect: the verdicts match the file; with "
      "--matrix: every target that can run here was judged, whatever its verdicts); 1 a clause failed (with "
      "--expect: a verdict changed); 2 bad usage; 3 the target's driver failed, or refused every vector and property "
      "offered (nothing was judged; with --matrix: no target could run); 4 the --write-expected file or a "
      "--save-findings vector could not be written; 130 --matrix interrupted (SIGINT or SIGTERM, passed on to the "
      "target being judged).");
  cmd->callback([o, cmd, &run] {
    o->vectors_given = cmd->count("--vectors") > 0;
    o->driver_given = cmd->count("--driver") > 0;
    o->target_given = cmd->count("--target") > 0;
    if (!o->matrix) {
      run = [o] { return run_conform(*o); };
      return;
    }
    run = [o] {
      MatrixOptions m;
      std::error_code ec;
      m.self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
      if (ec) {
        std::fprintf(stderr, "prodsm conform: --matrix: cannot find this executable: %s\n", ec.message().c_str());
        return static_cast<int>(kExitBadInput);
      }
      m.source_dir = conformance_data_root();  // its conformance/vectors and conformance/findings
      if (o->vectors_given) m.vectors = o->vectors;
      m.tests = o->tests;
      m.max_size = o->max_size;
      m.seed = o->seed;
      m.skip_properties = o->skip_properties;
      m.json = o->json;
      return run_conform_matrix(m);
    };
  });
}

}  // namespace prodsm::tools
