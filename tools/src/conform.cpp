// SPDX-License-Identifier: Apache-2.0
// `prodsm conform`: runs the scenario vectors and the generated properties against a
// target and prints the clause × verdict table (docs/conformance.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "commands.hpp"
#include "prodsm/conformance/properties.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::tools {
namespace {

namespace cf = prodsm::conformance;

struct ConformOptions {
  std::string target = "core";
  std::string vectors = PRODSM_DEFAULT_VECTORS_DIR;
  int tests = 300;
  int max_size = 100;
  std::optional<std::uint64_t> seed;
  std::string save_findings;
  bool skip_properties = false;
  bool verbose = false;
};

struct Verdict {
  enum class Kind { pass, fail, not_applicable } kind = Kind::pass;
  std::vector<std::string> notes;  // counterexamples or reasons
  bool exercised = false;
};

std::string capability_reason(const cf::Clause& clause, const cf::Capabilities& caps) {
  (void)clause;
  if (!caps.per_record_completions) return "the SDK has no per-record completion";
  if (!caps.flush_barrier) return "the SDK has no non-terminal flush";
  if (!caps.abort) return "the SDK has no abort";
  if (!caps.synchronous_rejection) return "the SDK does not refuse submits synchronously";
  if (!caps.virtual_time) return "the SDK cannot run on harness time";
  return "not expressible by this target";
}

int run_conform(const ConformOptions& o) {
  cf::DriverFactory factory;
  if (o.target == "core") {
    factory = cf::core_driver_factory();
  } else {
    std::fprintf(stderr, "prodsm conform: --target: unknown target '%s' (available: core)\n", o.target.c_str());
    return kExitBadInput;
  }
  std::string error;
  auto probe = factory(cf::Protocol::durable_streams, nlohmann::json::object(), &error);
  const cf::Capabilities caps = probe ? probe->capabilities() : cf::Capabilities{};

  std::map<std::string, Verdict> verdicts;
  for (const auto& clause : cf::clauses()) verdicts[std::string(clause.id)];

  // ---- vectors ---------------------------------------------------------------------------
  if (!std::filesystem::is_directory(o.vectors)) {
    std::fprintf(stderr, "prodsm conform: --vectors: '%s' is not a directory\n", o.vectors.c_str());
    return kExitBadInput;
  }
  const auto results = cf::run_vectors(o.vectors, factory);
  std::size_t vectors_passed = 0;
  for (const auto& r : results) {
    if (r.passed) ++vectors_passed;
    for (const auto& c : r.clauses) {
      if (!verdicts.count(c)) continue;
      verdicts[c].exercised = true;
      if (!r.failures.empty()) {
        verdicts[c].kind = Verdict::Kind::fail;
        verdicts[c].notes.push_back("vector " + r.name + ": " + r.failures.front());
      }
    }
    for (const auto& v : r.violations) {
      verdicts[v.clause].kind = Verdict::Kind::fail;
      verdicts[v.clause].notes.push_back("vector " + r.name + ":\n" + cf::render_evidence(r.trace, v));
    }
    if (o.verbose) std::printf("vector %-48s %s\n", r.name.c_str(), r.passed ? "pass" : "FAIL");
  }

  // ---- properties ------------------------------------------------------------------------
  std::vector<cf::PropertyResult> properties;
  if (!o.skip_properties) {
    cf::PropertyOptions po;
    po.tests = o.tests;
    po.max_size = o.max_size;
    po.seed = o.seed;
    for (const auto& spec : cf::default_properties()) {
      auto r = cf::run_property(spec, factory, po);
      if (o.verbose) std::printf("property %-40s %s (%d sequences)\n", spec.name.c_str(), r.passed ? "pass" : "FAIL", r.tests);
      if (!r.passed) {
        const std::string clause = r.violation ? r.violation->clause : "D2";
        auto& v = verdicts[clause];
        v.kind = Verdict::Kind::fail;
        std::string note = "property " + spec.name + " (after " + std::to_string(r.tests) + " passing sequences):\n" +
                           (r.evidence.empty() ? r.description : r.evidence) + "    reproduce with RC_PARAMS=\"" +
                           r.reproduce + "\"";
        if (!o.save_findings.empty() && !r.counterexample.is_null()) {
          std::filesystem::path dir = std::filesystem::path(o.save_findings) / o.target;
          std::filesystem::create_directories(dir);
          std::string file = spec.name + "-" + clause + ".json";
          for (char& ch : file) {
            if (ch == '/') ch = '-';
          }
          std::ofstream(dir / file) << r.counterexample.dump(2) << "\n";
          note += "\n    saved as vector " + (dir / file).string();
        }
        v.notes.push_back(note);
      }
      properties.push_back(std::move(r));
    }
  }

  // ---- table -----------------------------------------------------------------------------
  int failures = 0;
  std::printf("\nprodsm conform --target %s: %zu/%zu vectors passed", o.target.c_str(), vectors_passed, results.size());
  if (!o.skip_properties) {
    int sequences = 0;
    for (const auto& p : properties) sequences += p.tests;
    std::printf(", %zu properties, %d generated sequences", properties.size(), sequences);
  }
  std::printf("\n\n| clause | verdict | how |\n|---|---|---|\n");
  for (const auto& clause : cf::clauses()) {
    auto& v = verdicts[std::string(clause.id)];
    std::string verdict;
    std::string how;
    switch (clause.coverage) {
      case cf::Coverage::trace:
        how = "trace checker";
        if (!clause.applies(caps)) {
          v.kind = Verdict::Kind::not_applicable;
          how = capability_reason(clause, caps);
        }
        break;
      case cf::Coverage::config:
        how = "config vectors";
        break;
      case cf::Coverage::replay:
        how = o.skip_properties ? "replay (properties skipped)" : "replay of every generated run";
        if (o.skip_properties) v.kind = Verdict::Kind::not_applicable;
        break;
      case cf::Coverage::structural:
        v.kind = Verdict::Kind::not_applicable;
        how = "structural: checked by prodsm's own test suite, not by traces";
        break;
      case cf::Coverage::adapter:
        v.kind = Verdict::Kind::not_applicable;
        how = "adapter clause: tested with each adapter";
        break;
    }
    if (v.kind == Verdict::Kind::pass && clause.coverage == cf::Coverage::trace && !v.exercised && o.skip_properties) {
      v.kind = Verdict::Kind::not_applicable;
      how = "no vector exercises it and properties were skipped";
    }
    switch (v.kind) {
      case Verdict::Kind::pass: verdict = "pass"; break;
      case Verdict::Kind::fail: verdict = "FAIL"; ++failures; break;
      case Verdict::Kind::not_applicable: verdict = "n/a"; break;
    }
    std::printf("| %s | %s | %s — %s |\n", std::string(clause.id).c_str(), verdict.c_str(),
                std::string(clause.title).c_str(), how.c_str());
  }
  if (failures > 0) {
    std::printf("\nCounterexamples:\n");
    for (const auto& clause : cf::clauses()) {
      const auto& v = verdicts[std::string(clause.id)];
      if (v.kind != Verdict::Kind::fail) continue;
      for (const auto& n : v.notes) std::printf("\n[%s] %s\n", std::string(clause.id).c_str(), n.c_str());
    }
  }
  std::printf("\n%s\n", failures == 0 ? "conformant: no clause failed" : (std::to_string(failures) + " clause(s) failed").c_str());
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void add_conform_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ConformOptions>();
  CLI::App* cmd = app.add_subcommand("conform", "Check a producer against the contract: vectors + properties");
  cmd->add_option("--target", o->target, "Producer under test: core (prodsm's own core)")->capture_default_str();
  cmd->add_option("--vectors", o->vectors, "Directory of scenario vectors (*.json)")->capture_default_str();
  cmd->add_option("--tests", o->tests, "Generated sequences per property")->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-size", o->max_size, "Largest generated sequence size")->capture_default_str()->check(CLI::Range(1, 10000));
  cmd->add_option("--seed", o->seed, "Generator seed (default: RC_PARAMS or random)");
  cmd->add_option("--save-findings", o->save_findings,
                  "Write each shrunk property failure as a vector under DIR/<target>/");
  cmd->add_flag("--skip-properties", o->skip_properties, "Run only the vectors");
  cmd->add_flag("-v,--verbose", o->verbose, "One line per vector and property");
  cmd->footer("Exit status: 0 every clause passed or is not applicable; 1 a clause failed; 2 bad usage.");
  cmd->callback([o, &run] { run = [o] { return run_conform(*o); }; });
}

}  // namespace prodsm::tools
