// SPDX-License-Identifier: Apache-2.0
// `prodsm conform --matrix` (tools/src/conform_matrix.cpp, issue 18 item 4): one column per
// target, each exactly the verdicts `--target` gives. The SDK columns must be the verdicts
// the test command pins for them (conformance/findings/<sdk>.verdicts.json); the core and
// prodsm's adapters (prodsm-asio, prodsm-blocking, over loopback) must fail nothing, and the
// adapters judge A1–A4 and C4; the TypeScript client served over its real fetch
// (ds-ts-served) agrees with its injected run wherever both judge a clause. And `--driver`
// as another SDK's engineer uses it, through a driver that misbehaves on purpose
// (tests/conformance/drivers/faulty_driver.mjs): bad usage, C1, nothing judged, numbers
// out of range, and the exit statuses of output that cannot be written.
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

// ---- `prodsm conform --driver` (a driver of one's own) ------------------------------------
// What another SDK's engineer meets with a driver of their own (a red team's toy SDK found
// each): each test says what it checks. The driver is
// tests/conformance/drivers/faulty_driver.mjs, in the mode named.

std::string faulty_driver(const std::string& mode) {
  return std::string(PRODSM_NODE) + " " + PRODSM_SOURCE_DIR + "/tests/conformance/drivers/faulty_driver.mjs " + mode;
}

/// A directory holding one vector, `vector` (JSON text), as v.json.
std::string vector_dir(const std::string& name, const std::string& vector) {
  const std::string dir = temp_path(name);
  std::filesystem::create_directories(dir);
  write_file(dir + "/v.json", vector);
  return dir;
}

// B3 (the harness's own options): a driver command without a driver target used to be ignored: the core was
// judged and reported "conformant". Each is bad usage naming what is wrong, before
// anything runs.
TEST(ConformDriver, ADriverWithoutItsOwnTargetIsBadUsage) {
  struct Case {
    std::string args;
    const char* gist;
  };
  const std::string driver = faulty_driver("closed-twice");
  for (const Case& c :
       {Case{"--driver '" + driver + "'", "--driver needs --target NAME for the driver's SDK"},
        Case{"--target core --driver '" + driver + "'", "'core' is one of prodsm's own targets"},
        Case{"--target prodsm-asio --driver '" + driver + "'", "'prodsm-asio' is one of prodsm's own"},
        Case{"--driver ''", "--driver is empty"}, Case{"--driver '  '", "--driver is empty"},
        Case{"--target toy --driver ''", "--driver is empty"},
        Case{"--target toy --driver ' \t '", "--driver is empty"},
        Case{"--target toy --driver '\n'", "--driver is empty"}, Case{"--target ''", "--target is empty"}}) {
    SCOPED_TRACE(c.args);
    const CliRun r = prodsm("conform --skip-properties " + c.args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.gist), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("conformant"), std::string::npos) << "nothing was judged: " << r.out;
  }
}

// C1: `Closed` is emitted exactly once. A driver reporting it twice in one reply
// used to pass: the harness dropped every `closed` after the first.
TEST(ConformDriver, ClosedReportedTwiceFailsC1) {
  const std::string dir = vector_dir("closed-twice", R"({"name": "close-at-once", "clauses": ["C1"],
    "protocol": "durable_streams", "steps": [{"do": "close"}], "expect": {"closed": "ok"}})");
  const CliRun r = prodsm("conform --skip-properties --target twice --driver '" + faulty_driver("closed-twice") +
                          "' --vectors " + dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("| C1 | FAIL |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Closed was emitted twice"), std::string::npos) << r.out;
}

// The driver protocol: a hello or start reply whose fields have the wrong type is the
// driver's failure, named (exit 3). A hello with `"capabilities": []` or `"driver": 5`
// ended the harness with SIGABRT (an uncaught JSON type error), a start reply with
// `"unsupported": 42` had every shipped vector reported malformed (exit 2), and an unknown
// refusal reason or close code was read silently as another one.
TEST(ConformDriver, RepliesOfTheWrongTypeAreTheDriversFailureNeverACrash) {
  const std::string ok = R"("ok":true,"protocols":["durable_streams"])";
  struct Case {
    std::string mode;
    const char* gist;
  };
  for (const Case& c : {Case{"hello={" + ok + R"(,"capabilities":[]})", "\"capabilities\" must be an object"},
                        Case{"hello={" + ok + R"(,"driver":5})", "\"driver\" must be a string"},
                        Case{"hello={" + ok + R"(,"capabilities":{"abort":1}})", "capabilities\".abort must be"},
                        Case{"hello=[1]", "did not answer hello"},
                        Case{R"(start={"ok":false,"unsupported":42})", "\"unsupported\" must be a string"},
                        Case{R"(start={"ok":false,"error":{"field":3}})", "\"error\" must be an object whose"},
                        Case{R"(start={"ok":false,"error":"no"})", "\"error\" must be an object whose"},
                        Case{R"(result={"rejected":"banana"})", "\"rejected\": unknown reason \"banana\""},
                        Case{R"(result={"closed":"nonsense"})", "\"closed\": unknown error code \"nonsense\""}}) {
    SCOPED_TRACE(c.mode);
    const CliRun r = prodsm("conform --skip-properties --target typed --driver '" + faulty_driver(c.mode) + "'");
    EXPECT_EQ(r.status, 3) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(c.gist), std::string::npos) << r.out << r.err;
    EXPECT_EQ((r.out + r.err).find("malformed"), std::string::npos) << r.out << r.err;
  }
}

// Verdicts: a vector's failed expectation is evidence whatever the target's capabilities.
// ds-ts has no per-record completion, so the trace checker does not judge E1 on it; it
// takes a submit after a terminal invalid_ack, which the vector expects refused. That run
// used to print "0/1 vectors passed" and then "conformant: no clause failed", exit 0.
TEST(ConformDriver, AVectorsFailedExpectationIsAFailWhereTheTraceCheckerDoesNotApply) {
  const std::string dir = temp_path("expectation-stands");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      std::string(PRODSM_SOURCE_DIR) + "/conformance/vectors/peers/peer-ds-client-340-next-offset-goes-backwards.json",
      dir + "/v.json", std::filesystem::copy_options::overwrite_existing);
  const CliRun r = prodsm("conform --target ds-ts --skip-properties --vectors " + dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("| E1 | FAIL | terminal errors are sticky — vector expectations (the trace checker does not "
                       "apply: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("expected refused:failed, got ticket"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("conformant"), std::string::npos) << r.out;
}

// A property on real time takes minutes (a served run with properties, about 37 min, used
// to print nothing until its table): each property says on stderr when it starts, on a
// wire target only; the table stays on stdout.
TEST(ConformOutput, ARealTimeTargetSaysWhichPropertyIsRunning) {
  const std::string none = temp_path("no-vectors-progress");
  std::filesystem::create_directories(none);
  const CliRun wire = prodsm("conform --target prodsm-blocking --tests 1 --seed 1 --vectors " + none);
  EXPECT_EQ(wire.status, 0) << wire.out << wire.err;
  for (const char* name : {"durable_streams/plain", "durable_streams/idempotent", "durable_streams/auto_claim"}) {
    EXPECT_NE(wire.err.find(std::string("prodsm conform: property ") + name + ": up to 1 sequences on real time"),
              std::string::npos)
        << wire.err;
  }
  EXPECT_EQ(wire.out.find("sequences on real time"), std::string::npos) << "progress is not part of the table";
  const CliRun core = prodsm("conform --tests 1 --seed 1 --vectors " + none);
  EXPECT_EQ(core.status, 0) << core.err;
  EXPECT_EQ(core.err.find("prodsm conform: property"), std::string::npos) << "virtual time is quick: " << core.err;
  std::filesystem::remove_all(none);
}

// Verdicts: a driver that refuses every vector and property (or answers `{"ok": true}` to
// everything, hello included) was reported "conformant: no clause failed" with
// "0/0 vectors passed": nothing was judged, which is the target's failure (exit 3).
TEST(ConformDriver, ADriverThatRefusesEverythingIsNotConformant) {
  const std::string none = temp_path("no-vectors");
  std::filesystem::create_directories(none);
  struct Case {
    const char* mode;
    const char* gist;
  };
  for (const Case& c : {Case{"refuse-everything", "nothing was judged: the driver refused every vector and property"},
                        Case{"ok-to-everything", "hello names no protocol it speaks"}}) {
    for (const std::string& run : {std::string("--skip-properties"), "--tests 5 --seed 1 --vectors " + none}) {
      SCOPED_TRACE(std::string(c.mode) + " " + run);
      const CliRun r = prodsm("conform --target nothing --driver '" + faulty_driver(c.mode) + "' " + run);
      EXPECT_EQ(r.status, 3) << r.out << r.err;
      EXPECT_NE(r.err.find(c.gist), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("conformant"), std::string::npos) << r.out;
    }
  }
  std::filesystem::remove_all(none);
}

// The driver protocol (docs/conformance.md): a number in a driver's reply that is not a non-negative exact integer in
// its field's range is a reply that does not follow the driver protocol (exit 3, naming the field and the value). It
// used to be converted (-1 to 2^64-1, 1e30 to 0, 0.5 to 0) and the result blamed on the SDK.
TEST(ConformDriver, ANumberOutOfRangeIsTheDriversFailureNamingIt) {
  struct Case {
    const char* mode;
    const char* gist;
  };
  for (const Case& c : {
           Case{R"(result={"ticket":-1})", "\"ticket\": -1"},
           Case{R"(result={"ticket":0.5})", "\"ticket\": 0.5"},
           Case{R"(result={"ticket":1e30})", "\"ticket\": 1e+30"},
           Case{R"(result={"ticket":9007199254740993})", "\"ticket\": 9007199254740993"},
           Case{R"(result={"barrier":-2})", "\"barrier\": -2"},
           Case{R"(observe={"kind":"done","first":1,"last":0,"ok":true})", "\"first\" 1 is after \"last\" 0"},
           Case{R"(observe={"kind":"done","first":-3,"last":0,"ok":true})", "\"first\": -3"},
           Case{R"(observe={"kind":"barrier","barrier":0.25,"ok":true})", "\"barrier\": 0.25"},
           Case{R"(observe={"kind":"send","send":0,"batch":0,"attempt":1,"first_ticket":0,"count":4294967296})",
                "\"count\": 4294967296"},
           Case{R"(observe={"kind":"capacity","at_ms":-1})", "\"at_ms\": -1"},
       }) {
    SCOPED_TRACE(c.mode);
    const CliRun r = prodsm("conform --skip-properties --target numbers --driver '" + faulty_driver(c.mode) + "'");
    EXPECT_EQ(r.status, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("does not follow the driver protocol"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.gist), std::string::npos) << r.err;
  }
}

// Exit statuses (README): a verdict file that cannot be written is exit 4 (writing the output failed),
// after the table was printed; it used to be exit 2 (bad usage) after the whole run.
TEST(ConformOutput, AVerdictFileThatCannotBeWrittenIsExit4AfterTheTable) {
  for (const char* path : {"/nonexistent-dir/verdicts.json", "/dev/full"}) {
    SCOPED_TRACE(path);
    const CliRun r = prodsm(std::string("conform --skip-properties --write-expected ") + path);
    EXPECT_EQ(r.status, 4) << r.err;
    EXPECT_NE(r.out.find("| C1 |"), std::string::npos) << "the table comes first: " << r.out;
    EXPECT_NE(r.err.find(std::string("--write-expected: cannot write '") + path + "'"), std::string::npos) << r.err;
  }
}

// Exit statuses (README): a finding that cannot be saved (--save-findings under a file) is said on stderr
// and the run exits 4; it used to be a note among the counterexamples, exit 1.
TEST(ConformOutput, AFindingThatCannotBeSavedIsExit4) {
  const std::string dir = vector_dir("save-findings", R"({"name": "close-at-once", "clauses": ["C1"],
    "protocol": "durable_streams", "steps": [{"do": "close"}], "expect": {"closed": "ok"}})");
  const CliRun r = prodsm("conform --target twice --driver '" + faulty_driver("closed-twice") + "' --vectors " + dir +
                          " --tests 20 --seed 1 --no-shrink --save-findings /dev/null/findings");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("--save-findings: cannot save"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << "the table comes first: " << r.out;
}

// --save-findings from another SDK's run: a raw counterexample answers that SDK's sends
// and lacks the config keys it refused, so it may not replay on the core, where a
// committed finding must pass. The report says which do not, and it is right both ways.
TEST(ConformOutput, ASavedFindingThatDoesNotPassOnTheCoreIsSaidSo) {
  const std::string none = temp_path("save-findings-none");
  const std::string saved = temp_path("save-findings-out");
  std::filesystem::create_directories(none);
  const CliRun r = prodsm("conform --target s2-ts --seed 1 --vectors " + none + " --save-findings " + saved);
  ASSERT_EQ(r.status, 1) << r.err;
  const std::string marker = "saved as vector ";
  const std::string note = " (as saved it does not pass on the core: ";
  int with_note = 0;
  int without_note = 0;
  for (std::size_t at = r.out.find(marker); at != std::string::npos; at = r.out.find(marker, at + 1)) {
    const std::string line = r.out.substr(at + marker.size(), r.out.find('\n', at) - at - marker.size());
    const std::string file = line.substr(0, line.find(' '));
    const bool noted = line.find(note) != std::string::npos;
    if ((noted ? with_note : without_note) >= 1) continue;  // one of each is replayed
    ++(noted ? with_note : without_note);
    const std::string one = temp_path("save-findings-one");
    std::filesystem::create_directories(one);
    std::filesystem::copy_file(file, one + "/finding.json");
    const CliRun core = prodsm("conform --skip-properties --vectors " + one);
    std::filesystem::remove_all(one);
    if (noted) {
      EXPECT_NE(core.status, 0) << file << " is said not to pass on the core: " << core.out << core.err;
    } else {
      EXPECT_EQ(core.status, 0) << file << " is not said to fail on the core: " << core.out << core.err;
    }
  }
  std::filesystem::remove_all(none);
  std::filesystem::remove_all(saved);
  EXPECT_EQ(with_note, 1) << "seed 1 saves findings the core cannot replay: " << r.out.substr(0, 2000);
  EXPECT_EQ(without_note, 1) << r.out.substr(0, 2000);
}

// D2 (replay): RC_PARAMS="reproduce=..." as a failure prints it replays that property's
// case only. The other properties are not run (they showed "pass (0 sequences)", and their
// clauses passed on nothing), and a replayed case that passes now is a pass, not a D2 FAIL
// ("Reproduced result is not a failure").
TEST(ConformOutput, AReproduceReplaysOnlyItsPropertyAndAPassingReplayIsNoFailure) {
  const std::string none = temp_path("replay-no-vectors");
  std::filesystem::create_directories(none);
  const std::string base = "conform --target twice --vectors " + none + " --tests 30 --seed 1 --no-shrink --driver '";
  const CliRun failed = prodsm(base + faulty_driver("closed-twice") + "'");
  ASSERT_EQ(failed.status, 1) << failed.out << failed.err;
  const std::string marker = "reproduce with RC_PARAMS=\"";
  const auto at = failed.out.find(marker);
  ASSERT_NE(at, std::string::npos) << failed.out;
  const auto from = at + marker.size();
  const std::string params = failed.out.substr(from, failed.out.find('"', from) - from);
  ::setenv("RC_PARAMS", params.c_str(), 1);
  const CliRun again = prodsm(base + faulty_driver("closed-twice") + "' -v");
  // The core passes every property: its replay of the same case is a pass.
  const CliRun fixed = prodsm("conform --vectors " + none + " --tests 30 --seed 1 -v");
  ::unsetenv("RC_PARAMS");
  std::filesystem::remove_all(none);
  EXPECT_EQ(again.status, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("reproduce with RC_PARAMS"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("pass (0 sequences)"), std::string::npos) << "no property passes on nothing: " << again.out;
  EXPECT_NE(again.out.find("n/a (not run: RC_PARAMS reproduces a case of another property)"), std::string::npos)
      << again.out;
  EXPECT_EQ(fixed.status, 0) << fixed.out << fixed.err;
  EXPECT_EQ(fixed.out.find("not a failure"), std::string::npos) << fixed.out;
  EXPECT_EQ(fixed.out.find("FAIL"), std::string::npos) << fixed.out;
}

// D2 (replay): --seed is the seed RapidCheck reports in its "Using configuration" line; it
// printed a random one that the run did not use, so a user re-running with it got another run.
TEST(ConformOutput, TheConfigurationLineNamesTheSeedInUse) {
  const CliRun r = prodsm("conform --tests 5 --seed 4242");
  EXPECT_EQ(r.status, 0) << r.err;
  const auto line = r.err.find("Using configuration:");
  ASSERT_NE(line, std::string::npos) << r.err;
  EXPECT_NE(r.err.substr(line, r.err.find('\n', line) - line).find("seed=4242"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace prodsm::test
