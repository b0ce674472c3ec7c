// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm conform --matrix`: every conformance target that can run on this machine,
// judged one after the other, as one clause × target table (docs/conformance.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prodsm::tools {

/// What `--matrix` passes on to each target's run.
struct MatrixOptions {
  std::string self;                   ///< this executable, run once per target
  std::string source_dir;             ///< the checkout: conformance/vectors and conformance/findings
  std::vector<std::string> vectors;   ///< --vectors given explicitly; empty: vectors + the target's findings
  int tests = 300;                    ///< --tests
  int max_size = 100;                 ///< --max-size
  std::optional<std::uint64_t> seed;  ///< --seed
  bool skip_properties = false;       ///< --skip-properties
  bool json = false;                  ///< --json: one JSON object instead of markdown
};

/// How a run's progress lines on stderr begin ("prodsm conform: property NAME: up to N
/// sequences on real time"): the matrix does not take one for the reason a target was
/// unavailable.
inline constexpr std::string_view kPropertyProgressPrefix = "prodsm conform: property ";

/// Why a target's child run judged nothing, from its stderr: its first own message
/// ("prodsm conform: X" gives X), not a progress line nor another library's line
/// (RapidCheck's "Using configuration: seed=1" comes first), else its first non-empty
/// line, else `fallback`.
inline std::string unavailable_reason(std::string_view stderr_text, const std::string& fallback) {
  constexpr std::string_view prefix = "prodsm conform: ";
  std::string_view first;
  while (!stderr_text.empty()) {
    const auto nl = stderr_text.find('\n');
    const std::string_view line = stderr_text.substr(0, nl);
    stderr_text.remove_prefix(nl == std::string_view::npos ? stderr_text.size() : nl + 1);
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (line.rfind(prefix, 0) == 0 && line.rfind(kPropertyProgressPrefix, 0) != 0) {
      return std::string(line.substr(prefix.size()));
    }
  }
  return first.empty() ? fallback : std::string(first);
}

/// The targets `--matrix` tries, in column order.
const std::vector<std::string>& matrix_targets();

/// Runs `prodsm conform --target T --write-expected FILE` for every matrix target in a
/// child process (its own table discarded) and prints the clause × target table: markdown,
/// or with `json` {"targets": [...], "unavailable": {target: why}, "clauses": {id:
/// {target: verdict}}}. A target whose driver cannot start here (exit 3: no node, no SDK
/// package) is listed as unavailable with its message, never as passing. Returns 0 when
/// every available target ran (whatever its verdicts), 3 when none could, 2 when the
/// options were refused (a --vectors that is not a directory, before anything runs; a
/// malformed vector, with the child's message naming every one, and no table), 130 when
/// SIGINT or SIGTERM stopped it (passed on to the running child; no table; the scratch
/// directory removed).
int run_conform_matrix(const MatrixOptions& o);

}  // namespace prodsm::tools
