// SPDX-License-Identifier: Apache-2.0
// `prodsm conform --matrix` (conform_matrix.hpp): one child `prodsm conform` per target,
// so every target is judged by exactly the code `--target` runs, then one table.
#include "conform_matrix.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "commands.hpp"
#include "interrupt.hpp"
#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/json_limits.hpp"

extern char** environ;

namespace prodsm::tools {
namespace {

namespace fs = std::filesystem;
namespace cf = prodsm::conformance;

/// One target's outcome: its clause verdicts, or why it could not run.
struct Column {
  std::string target;
  std::map<std::string, std::string> verdicts;  ///< clause id -> "pass", "FAIL", "n/a"
  std::string unavailable;                      ///< empty when it ran
  std::string refusal;  ///< the child's messages when it refused the options (exit 2): the caller's mistake
};

/// A matrix column's `--target` and whether it is served ("ds-ts-served": ds-ts --serve).
std::pair<std::string, bool> target_of(const std::string& column) {
  constexpr std::string_view served = "-served";
  if (column.size() > served.size() && column.compare(column.size() - served.size(), served.size(), served) == 0) {
    return {column.substr(0, column.size() - served.size()), true};
  }
  return {column, false};
}

/// True for the columns that run on real time (their properties are fewer, see child_args).
bool real_time(const std::string& column) {
  return column == "prodsm-asio" || column == "prodsm-blocking" || column == "librdkafka" || target_of(column).second;
}

/// The child's argument list for `column`.
std::vector<std::string> child_args(const MatrixOptions& o, const std::string& column, const fs::path& verdicts) {
  const auto [target, served] = target_of(column);
  std::vector<std::string> args{o.self, "conform", "--target", target, "--write-expected", verdicts.string()};
  if (served) args.push_back("--serve");
  std::vector<std::string> dirs = o.vectors;
  if (dirs.empty()) {  // the contract's vectors, then the findings that pin this target's divergences
    const fs::path findings = fs::path(o.source_dir) / "conformance" / "findings";
    dirs.push_back((fs::path(o.source_dir) / "conformance" / "vectors").string());
    for (const auto& t : matrix_targets()) {
      // core passes every SDK's findings (Conform.CorePassesEverySdkFinding); an SDK runs its own.
      if ((target == "core" || t == target) && fs::is_directory(findings / t)) dirs.push_back((findings / t).string());
    }
  }
  for (const auto& d : dirs) {
    args.push_back("--vectors");
    args.push_back(d);
  }
  args.push_back("--tests");
  // A real-time target spends real time on every step: a tenth of the sequences (at
  // least one), so the matrix stays minutes long; more with `--target T --tests N`.
  args.push_back(std::to_string(real_time(column) ? std::max(1, o.tests / 10) : o.tests));
  args.push_back("--max-size");
  args.push_back(std::to_string(o.max_size));
  if (o.seed) {
    args.push_back("--seed");
    args.push_back(std::to_string(*o.seed));
  }
  if (o.skip_properties) args.push_back("--skip-properties");
  if (real_time(column)) args.push_back("--no-shrink");  // each shrinking step replays on the clock
  return args;
}

/// Runs `args` with stdout discarded and stderr into `err`; the exit status, or -1 when
/// it could not be started or did not exit normally. A SIGINT or SIGTERM to this process
/// (interrupted()) is passed on to the child, which is still waited for.
int run_child(const std::vector<std::string>& args, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  // Polled, not a blocking waitpid: a signal that lands between the spawn and the wait
  // (or that a sanitizer's runtime defers past the wait's EINTR) would otherwise leave
  // this process waiting for a child that was never told to stop. 10 ms of latency.
  int status = 0;
  bool forwarded = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return -1;
    if (interrupted() && !std::exchange(forwarded, true)) ::kill(pid, SIGTERM);
    const struct timespec pause { 0, 10'000'000 };
    ::nanosleep(&pause, nullptr);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The first line of `file` (the child's message), or `fallback`.
std::string first_line(const fs::path& file, const std::string& fallback) {
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return unavailable_reason(text, fallback);
}

Column judge(const MatrixOptions& o, const std::string& target, const fs::path& scratch) {
  Column c{target, {}, {}, {}};
  const fs::path verdicts = scratch / (target + ".verdicts.json");
  const fs::path err = scratch / (target + ".stderr");
  const int status = run_child(child_args(o, target, verdicts), err);
  if (status == kExitOk || status == kExitFailure) {  // judged: some clauses may have failed
    auto parsed = cf::read_json_file(verdicts.string());
    if (parsed && parsed->is_object() && parsed->contains("clauses") && parsed->at("clauses").is_object()) {
      for (const auto& [id, v] : parsed->at("clauses").items()) {
        if (v.is_string()) c.verdicts[id] = v.get<std::string>();
      }
      return c;
    }
    c.unavailable = "its run wrote no verdicts";
  } else if (status == kExitServerError) {
    c.unavailable = first_line(err, "its driver could not start");
  } else if (status == kExitBadInput) {
    std::ifstream in(err);
    c.refusal.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (c.refusal.empty()) c.refusal = "prodsm conform: the options were refused\n";
  } else {
    c.unavailable = first_line(err, "its run ended with status " + std::to_string(status));
  }
  return c;
}

}  // namespace

const std::vector<std::string>& matrix_targets() {
  static const std::vector<std::string> targets{"core",  "prodsm-asio",  "prodsm-blocking", "s2-ts",
                                                "ds-ts", "ds-ts-served", "librdkafka"};
  return targets;
}

int run_conform_matrix(const MatrixOptions& o) {
  for (const auto& dir : o.vectors) {  // the caller's mistake: refused before any target runs
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "prodsm conform: --vectors: '%s' is not a directory\n", dir.c_str());
      return kExitBadInput;
    }
  }
  set_interrupt_message(
      "prodsm conform --matrix: interrupted: stopping the target being judged; interrupt again to abort at once\n");
  route_interrupts_here(true);  // one thread: the handler, then the signals unblocked
  route_interrupts_here(false);
  std::error_code ec;
  const fs::path scratch = fs::temp_directory_path(ec) / ("prodsm-conform-matrix-" + std::to_string(::getpid()));
  fs::create_directories(scratch, ec);
  if (ec) {
    std::fprintf(stderr, "prodsm conform: --matrix: cannot create %s: %s\n", scratch.c_str(), ec.message().c_str());
    return kExitOutputFailed;
  }
  std::vector<Column> columns;
  for (const auto& t : matrix_targets()) {
    if (!o.json) std::fprintf(stderr, "prodsm conform --matrix: judging %s\n", t.c_str());
    columns.push_back(judge(o, t, scratch));
    if (interrupted() || !columns.back().refusal.empty()) break;
  }
  fs::remove_all(scratch, ec);
  if (interrupted()) return kExitInterrupted;  // no table: not every target was judged
  if (!columns.back().refusal.empty()) {       // e.g. a malformed vector: every target would refuse it
    std::fprintf(stderr, "%s", columns.back().refusal.c_str());
    return kExitBadInput;
  }

  std::size_t ran = 0;
  for (const auto& c : columns) ran += c.unavailable.empty() ? 1 : 0;
  if (o.json) {
    nlohmann::json out = {{"targets", nlohmann::json::array()},
                          {"unavailable", nlohmann::json::object()},
                          {"clauses", nlohmann::json::object()}};
    for (const auto& c : columns) {
      if (!c.unavailable.empty()) {
        out["unavailable"][c.target] = c.unavailable;
        continue;
      }
      out["targets"].push_back(c.target);
    }
    for (const auto& clause : cf::clauses()) {
      const std::string id(clause.id);
      auto& row = out["clauses"][id];
      row = nlohmann::json::object();
      for (const auto& c : columns) {
        if (!c.unavailable.empty()) continue;
        const auto v = c.verdicts.find(id);
        row[c.target] = v == c.verdicts.end() ? "absent" : v->second;
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::ostringstream table;
    table << "| clause |";
    for (const auto& c : columns) table << " " << c.target << " |";
    table << "\n|---|";
    for (std::size_t i = 0; i < columns.size(); ++i) table << "---|";
    table << "\n";
    for (const auto& clause : cf::clauses()) {
      const std::string id(clause.id);
      table << "| " << id << " |";
      for (const auto& c : columns) {
        const auto v = c.verdicts.find(id);
        table << " " << (!c.unavailable.empty() ? "unavailable" : v == c.verdicts.end() ? "absent" : v->second) << " |";
      }
      table << "\n";
    }
    std::printf("%s", table.str().c_str());
    for (const auto& c : columns) {
      if (!c.unavailable.empty()) std::printf("\n%s unavailable: %s\n", c.target.c_str(), c.unavailable.c_str());
    }
    std::printf("\n%zu of %zu targets judged%s\n", ran, columns.size(),
                o.skip_properties ? " (vectors only)" : " (vectors and properties)");
  }
  return ran == 0 ? kExitServerError : kExitOk;
}

}  // namespace prodsm::tools
