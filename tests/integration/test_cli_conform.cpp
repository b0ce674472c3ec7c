// SPDX-License-Identifier: Apache-2.0
// `prodsm conform --matrix` (tools/src/conform_matrix.cpp, issue 18 item 4): one column per
// target, each exactly the verdicts `--target` gives. The SDK columns must be the verdicts
// the test command pins for them (conformance/findings/<sdk>.verdicts.json); the core and
// prodsm's adapters (prodsm-asio, prodsm-blocking, over loopback) must fail nothing, and the
// adapters judge A1–A4 and C4; the TypeScript client served over its real fetch
// (ds-ts-served) agrees with its injected run wherever both judge a clause.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli_support.hpp"

namespace prodsm::test {
namespace {

using nlohmann::json;

TEST(ConformMatrix, EveryColumnIsWhatTargetGives) {
  const CliRun r = prodsm("conform --matrix --skip-properties --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json m = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(m.is_object()) << r.out;
  ASSERT_EQ(m.at("targets"),
            json({"core", "prodsm-asio", "prodsm-blocking", "s2-ts", "ds-ts", "ds-ts-served", "librdkafka"}))
      << "unavailable: " << m.at("unavailable").dump();
  const json& clauses = m.at("clauses");
  // Other SDKs: exactly their pinned verdicts (conformance/findings/<column>.verdicts.json).
  for (const char* sdk : {"s2-ts", "ds-ts", "ds-ts-served", "librdkafka"}) {
    const json pinned =
        json::parse(slurp(std::string(PRODSM_SOURCE_DIR) + "/conformance/findings/" + sdk + ".verdicts.json"));
    ASSERT_TRUE(pinned.contains("clauses")) << sdk;
    int compared = 0;
    for (const auto& [id, verdict] : pinned.at("clauses").items()) {
      EXPECT_EQ(clauses.at(id).at(sdk), verdict) << sdk << " " << id;
      ++compared;
    }
    EXPECT_EQ(compared, static_cast<int>(clauses.size())) << sdk << ": every clause has a pinned verdict";
  }
  // The core and prodsm's adapters fail nothing; the adapters judge A1–A4 and C4.
  int core_passes = 0;
  for (const auto& [id, row] : clauses.items()) {
    for (const char* own : {"core", "prodsm-asio", "prodsm-blocking"}) {
      EXPECT_NE(row.at(own), "FAIL") << own << " " << id;
    }
    core_passes += row.at("core") == "pass" ? 1 : 0;
  }
  EXPECT_GE(core_passes, 30) << "the core column judged the clauses, not only n/a";
  for (const char* adapter : {"prodsm-asio", "prodsm-blocking"}) {
    for (const char* id : {"A1", "A2", "A3", "A4", "C4", "E6", "D3"}) {
      EXPECT_EQ(clauses.at(id).at(adapter), "pass") << adapter << " " << id;
    }
  }
  // The TypeScript client over its real fetch agrees with its injected run on every clause
  // both observe (docs/conformance-findings.md: served runs judge no clause the injected
  // run cannot).
  for (const auto& [id, row] : clauses.items()) {
    const std::string injected = row.at("ds-ts");
    const std::string served = row.at("ds-ts-served");
    if (injected != "n/a" && served != "n/a") {
      EXPECT_EQ(served, injected) << id;
    }
  }
}

TEST(ConformMatrix, MarkdownHasOneRowPerClauseAndAColumnPerTarget) {
  // The S2 TypeScript SDK's findings only: the Durable Streams columns find nothing to run.
  const CliRun r = prodsm("conform --matrix --skip-properties --vectors " + std::string(PRODSM_SOURCE_DIR) +
                          "/conformance/findings/s2-ts");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| clause | core | prodsm-asio | prodsm-blocking | s2-ts | ds-ts | ds-ts-served | librdkafka |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| E1 | pass | n/a | n/a | FAIL |"), std::string::npos) << r.out;  // s2-ts's E1 finding
  EXPECT_NE(r.out.find("7 of 7 targets judged (vectors only)"), std::string::npos) << r.out;
}

TEST(ConformMatrix, RefusesOptionsThatNameOneTarget) {  // exit 2: bad usage, nothing run
  EXPECT_EQ(prodsm("conform --matrix --target core").status, 2);
  EXPECT_EQ(prodsm("conform --matrix --expect /dev/null").status, 2);
  const CliRun json_alone = prodsm("conform --json");
  EXPECT_EQ(json_alone.status, 2);
  EXPECT_NE(json_alone.err.find("--matrix"), std::string::npos) << json_alone.err;
}

TEST(ConformMatrix, ABadVectorsDirectoryIsBadUsageBeforeAnythingRuns) {
  const CliRun r = prodsm("conform --matrix --skip-properties --vectors /nonexistent-vectors");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("'/nonexistent-vectors' is not a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("judging"), std::string::npos) << "no target was started: " << r.err;
}

TEST(ConformMatrix, AMalformedVectorIsBadUsageNotAnUnavailableTarget) {
  const std::string dir = temp_path("matrix-malformed");
  std::filesystem::create_directories(dir);
  write_file(dir + "/a.json", "[1");
  write_file(dir + "/b.json", "{}");
  const CliRun r = prodsm("conform --matrix --skip-properties --vectors " + dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty()) << "no table: " << r.out;
  EXPECT_NE(r.err.find("2 malformed vector file(s)"), std::string::npos) << "every one named: " << r.err;
  EXPECT_EQ(r.err.find("unavailable"), std::string::npos) << r.err;
}

// SIGTERM to the matrix alone (not its process group) stops the target being judged,
// leaves no child running and no scratch directory, and exits 130 without a table.
TEST(ConformMatrix, ASignalStopsTheRunningTargetAndCleansUp) {
  const std::string out = temp_path("matrix-signal-out");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDOUT_FILENO);
    ::execl(PRODSM_CLI, PRODSM_CLI, "conform", "--matrix", "--tests", "1000000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("prodsm-conform-matrix-" + std::to_string(pid));
  // The first target's run has started once its stderr file exists (no fixed sleep).
  for (int i = 0; i < 3000 && !std::filesystem::exists(scratch / "core.stderr"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  ASSERT_TRUE(std::filesystem::exists(scratch / "core.stderr"));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(std::filesystem::exists(scratch)) << "scratch directory left behind";
  EXPECT_TRUE(slurp(out).empty()) << "no table after an interrupt";
  std::remove(out.c_str());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {  // no child left running
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    EXPECT_EQ(args.find(scratch.string()), std::string::npos) << "still running: " << entry.path();
  }
}

}  // namespace
}  // namespace prodsm::test
