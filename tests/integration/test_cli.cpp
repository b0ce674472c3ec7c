// SPDX-License-Identifier: Apache-2.0
// The `prodsm` CLI end to end against the reference server: what reaches the stream,
// the exit status (0 ok, 1 check failed, 2 bad input, 3 server or network failure) and
// the message that names what was wrong.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_interrupt.hpp"
#include "cli_support.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

class Cli : public CliServerTest {
 protected:
  Cli() : CliServerTest("cli") {}
};

TEST_F(Cli, ProducesAFileAndVerifiesIt) {
  const std::string u = url("file");
  const std::string input = temp_path("file");
  write_file(input, "one\ntwo\nthree without newline");
  const CliRun r = prodsm("produce " + u + " --create --verify -i " + input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  EXPECT_EQ(client.read_all(u, false), "one\ntwo\nthree without newline");
  std::remove(input.c_str());
}

// A pipe named with -i is read like stdin (it cannot be seeked for its size).
TEST_F(Cli, ReadsAPipeGivenWithDashI) {
  const std::string u = url("pipe");
  const CliRun r = prodsm("produce " + u + " --create --verify -i /dev/stdin", "a\nb\nc\n", Stdin::pipe);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\nc\n");
}

TEST_F(Cli, ADirectoryAsInputIsBadInputAndCreatesNothing) {
  const std::string u = url("dir");
  const CliRun r = prodsm("produce " + u + " --create -i " + ::testing::TempDir());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
}

// Issue 3: a bad JSON line is reported with its number; nothing after it is sent and
// everything before it is flushed.
TEST_F(Cli, BadJsonLineIsReportedWithItsNumberAndThePrefixIsFlushed) {
  const std::string u = url("badjson");
  const CliRun r = prodsm("produce " + u + " --json --create", "{\"a\":1}\n[2]\n{bad\n\"never\"\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(client.read_all(u, true)), nlohmann::json::parse(R"([{"a":1},[2]])"));
}

// JSON mode follows the content type's media type, whatever its case and parameters.
TEST_F(Cli, JsonContentTypeWithParametersSelectsJsonMode) {
  const std::string u = url("jsonparams");
  const CliRun r = prodsm("produce " + u + " --create --content-type 'Application/JSON; charset=utf-8'", "1\n2\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(client.read_all(u, true)), nlohmann::json::parse("[1,2]"));
}

// `read --json` prints the stream as one JSON array, ended by a newline; bytes mode
// prints exactly the stream's bytes.
TEST_F(Cli, ReadPrintsJsonWithANewlineAndBytesExactly) {
  const std::string j = url("readjson");
  ASSERT_EQ(prodsm("produce " + j + " --create --json", "1\n{\"a\":2}\n").status, 0);
  CliRun r = prodsm("read " + j + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(R"([1,{"a":2}])"));
  const std::string b = url("readbytes");
  ASSERT_EQ(prodsm("produce " + b + " --create", "x\nno newline").status, 0);
  r = prodsm("read " + b);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "x\nno newline");
}

// An unknown command is named, with the known ones.
TEST_F(Cli, UnknownCommandIsNamed) {
  const CliRun r = prodsm("bogus --x");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'bogus' (commands: produce, read, bench, conform"), std::string::npos) << r.err;
}

TEST_F(Cli, JsonConflictingWithANonJsonContentTypeIsRefused) {
  const CliRun r = prodsm("produce " + url("conflict") + " --create --json --content-type text/plain", "1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--json conflicts"), std::string::npos) << r.err;
}

TEST_F(Cli, MissingStreamIsAServerFailure) {
  const CliRun r = prodsm("produce " + url("missing"), "x\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
}

// `prodsm bench`: every record reaches the stream once, in order (P1, P2); the figures
// are consistent with what was produced (not timed: the run is only measured).
TEST_F(Cli, BenchProducesEveryRecordAndReportsItsFigures) {
  const std::string u = url("bench");
  const CliRun r = prodsm("bench " + u + " --create --records 3000 --record-bytes 40 --max-batch-bytes 4096 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto figures = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(figures.is_object()) << r.out;
  EXPECT_EQ(figures.at("records_sent"), 3000);
  EXPECT_EQ(figures.at("records_acknowledged"), 3000);
  EXPECT_EQ(figures.at("records_failed"), 0);
  EXPECT_GE(figures.at("batches").get<int>(), 3000 * 40 / 4096) << "batches are bounded by max_batch_bytes (B1)";
  const auto& latency = figures.at("latency_ms");
  // One record in 64 is timed, but at least 1,000: here every third; the other records
  // went through submit_many between them.
  EXPECT_EQ(latency.at("samples"), 1000);
  EXPECT_EQ(latency.at("sampled_every"), 3);
  EXPECT_GT(figures.at("client_cpu_ns_per_record").get<double>(), 0.0);
  EXPECT_LE(latency.at("p50").get<double>(), latency.at("p99").get<double>());
  EXPECT_LE(latency.at("p99").get<double>(), latency.at("max").get<double>());
  // The producer's own percentiles (stats().submit_to_ack) cover every acknowledged record.
  const auto& own = figures.at("producer_submit_to_ack_ms");
  EXPECT_EQ(own.at("records"), 3000);
  EXPECT_GT(own.at("p50").get<double>(), 0.0);
  EXPECT_LE(own.at("p50").get<double>(), own.at("p99").get<double>());
  EXPECT_LE(own.at("p99").get<double>(), own.at("max").get<double>());
  EXPECT_GT(figures.at("records_per_s").get<double>(), 0.0);
  // What the transport did is reported: connections opened, and how many of them
  // replaced one that stall detection gave up on (a count, never more than reopened).
  EXPECT_GE(figures.at("connections").get<int>(), 1);
  EXPECT_LT(figures.at("stalls").get<int>(), figures.at("connections").get<int>());
  const std::string stream = client.read_all(u, false);
  ASSERT_EQ(stream.size(), 3000U * 40U);
  const std::string first = stream.substr(0, 40);
  EXPECT_EQ(first.back(), '\n');
  for (std::size_t i = 0; i < 3000; ++i) ASSERT_EQ(stream.compare(i * 40, 40, first), 0) << "record " << i;
}

// `--throughput` paces the records: record i leaves no earlier than i / throughput s
// after the start, so the run cannot end sooner (a lower bound, never an upper one).
TEST_F(Cli, BenchPacesToTheRequestedThroughput) {
  const CliRun r = prodsm("bench " + url("bench-paced") + " --create --records 101 --throughput 500 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto figures = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(figures.is_object()) << r.out;
  EXPECT_GE(figures.at("elapsed_s").get<double>(), 100.0 / 500.0);
}

// Bad usage names the option; a missing stream is a server failure (exit 3) that still
// prints the figures.
TEST_F(Cli, BenchRefusesBadOptionsAndReportsServerFailures) {
  CliRun r = prodsm("bench " + url("bench-bad") + " --record-bytes 2000 --max-batch-bytes 1000");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--record-bytes 2000 exceeds --max-batch-bytes 1000"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-bad") + " --records 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--records"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-bad") + " --content-type application/json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not JSON values"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-bad") + " --throughput nan");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--throughput: 'nan'"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-bad") + " --max-batch-bytes 0");
  EXPECT_EQ(r.status, 2);
  // Issue 22: the message names the flag as it is typed, not the config field.
  EXPECT_NE(r.err.find("--max-batch-bytes: 0 is out of range (3..67108864)"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-bad") + " --linger-ms soon");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--linger-ms: 'soon'"), std::string::npos) << r.err;
  r = prodsm("bench " + url("bench-missing") + " --records 10");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("10 records sent"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10 failed"), std::string::npos) << r.out;
}

// SIGINT stops a bench: what was accepted is flushed, the figures are printed, exit 130.
TEST_F(Cli, BenchInterruptFlushesAndPrintsTheFigures) {
  const std::string u = url("bench-sigint");
  client.create(u, "application/octet-stream");
  const std::string out = temp_path("bench-sigint-stdout");
  const std::string err = temp_path("bench-sigint-stderr");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int outfd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (outfd < 0 || errfd < 0) ::_exit(99);
    ::dup2(outfd, 1);
    ::dup2(errfd, 2);
    ::execl(PRODSM_CLI, PRODSM_CLI, "bench", u.c_str(), "--json", "--records", "1000000", "--record-bytes", "10",
            "--throughput", "200", "--linger-ms", "0", static_cast<char*>(nullptr));
    ::_exit(98);
  }
  std::size_t held = 0;
  for (int i = 0; i < 600 && held < 20; ++i) {  // up to 30 s for a few records to arrive
    held = client.read_all(u, false).size();
    if (held < 20) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  ASSERT_GE(held, 20U) << "the bench never sent a record";
  ASSERT_EQ(::kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 130) << slurp(err);
  const auto figures = nlohmann::json::parse(slurp(out), nullptr, false);
  ASSERT_TRUE(figures.is_object()) << slurp(out);
  EXPECT_EQ(figures.at("interrupted"), true);
  const auto sent = figures.at("records_sent").get<std::uint64_t>();
  EXPECT_LT(sent, 1000000U);
  EXPECT_EQ(figures.at("records_acknowledged").get<std::uint64_t>(), sent) << "everything accepted was flushed";
  EXPECT_EQ(client.read_all(u, false).size(), sent * 10);
  EXPECT_NE(slurp(err).find("interrupted after"), std::string::npos) << slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
}

// S3: a bench that reuses a producer id and epoch is deduplicated by the server; the run
// says so and fails (exit 1) instead of reporting appends that did not happen.
TEST_F(Cli, BenchWithAReusedProducerIdAndEpochFailsAndAppendsNothing) {
  const std::string u = url("bench-dup");
  // One full batch (seq 0) per run: 100 records of 10 B under a 1000 B batch, no linger timer.
  const std::string args = " -n 100 -s 10 --max-batch-bytes 1000 --linger-ms off --producer-id fixed --epoch 1 --json";
  ASSERT_EQ(prodsm("bench " + u + " --create" + args).status, 0);
  const CliRun r = prodsm("bench " + u + args);
  EXPECT_EQ(r.status, 3) << r.err;
  const auto figures = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(figures.is_object()) << r.out;
  EXPECT_EQ(figures.at("records_acknowledged"), 0);
  EXPECT_NE(r.err.find("used by an earlier run; nothing of this run was appended"), std::string::npos) << r.err;
  EXPECT_EQ(client.read_all(u, false).size(), 1000U) << "the second run appended nothing";
}

// Progress lines follow --report-interval-ms on slow (paced) runs too.
TEST_F(Cli, BenchReportsProgressOnPacedRuns) {
  const CliRun r =
      prodsm("bench " + url("bench-progress") + " --create -n 60 -s 10 --throughput 100 --report-interval-ms 200");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("records sent,"), std::string::npos) << "a 0.6 s run with a 0.2 s interval reports progress";
}

// Progress lines keep coming while the run waits for acknowledgements (here the final
// flush: every record is submitted at once, and the server holds the first append's
// response for 600 ms; the first request's stall timeout is 1 s, so nothing is resent).
TEST_F(Cli, BenchReportsProgressWhileTheFlushWaits) {
  const std::string u = url("bench-progress-flush");
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + ds::StreamUrl::parse(u)->path + R"(","method":"POST","delayMs":600,"count":1})");
  const CliRun r = prodsm("bench " + u + " --create -n 10 -s 10 --report-interval-ms 100");
  client.clear_faults(ReferenceServer::shared().url());
  ASSERT_EQ(r.status, 0) << r.err;
  std::size_t lines = 0;
  for (std::size_t at = r.err.find("records sent,"); at != std::string::npos;
       at = r.err.find("records sent,", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 2U) << "a 0.6 s flush with a 0.1 s interval reports progress:\n" << r.err;
}

// E1, S6: when the final flush fails after a bad line, the message says so and names
// the real error instead of claiming the prefix was flushed.
TEST_F(Cli, FlushFailureAfterABadLineNamesTheRealError) {
  const std::string u = url("closedjson");
  ASSERT_EQ(prodsm("produce " + u + " --json --create --close-stream -q", "1\n").status, 0);
  const CliRun r = prodsm("produce " + u + " --json", "2\n3\n{bad\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not all stored"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stream_closed"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("0 acknowledged, 2 failed"), std::string::npos) << r.out;
}

// S3: a run reusing a producer id and epoch is deduplicated against the earlier run;
// the CLI says so instead of passing over it silently.
TEST_F(Cli, RestartUnderAFixedProducerIdAppendsBothRuns) {
  const std::string u = url("reuse");
  ASSERT_EQ(prodsm("produce " + u + " --create --producer-id fixed -q", "a\nb\n").status, 0);
  const CliRun r = prodsm("produce " + u + " --producer-id fixed -q", "c\nd\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\nc\nd\n") << "each run starts a fresh epoch: nothing deduplicated away";
}

// S3: exactly --epoch, reused, fails at the first batch, before anything is appended,
// and says what to do instead.
TEST_F(Cli, ReusedGivenEpochFailsBeforeAppendingAnything) {
  const std::string u = url("reuse-epoch");
  ASSERT_EQ(prodsm("produce " + u + " --create --producer-id fixed --epoch 7 -q", "a\nb\n").status, 0);
  const CliRun r = prodsm("produce " + u + " --producer-id fixed --epoch 7 --max-batch-bytes 4", "a\nb\nc\nd\n");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("used by an earlier run; nothing of this run was appended"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
}

// --resume is exact whatever the batch boundaries of either run: the second run appends
// exactly what the stream lacks (1,001-2,000 after 1-1,000; nothing after the same
// input with other batches).
TEST_F(Cli, ResumeAppendsExactlyWhatTheStreamLacks) {
  auto lines = [](int first, int last) {
    std::string out;
    for (int i = first; i <= last; ++i) out += std::to_string(i) + "\n";
    return out;
  };
  const std::string u = url("resume");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", lines(1, 1000)).status, 0);
  const CliRun longer = prodsm("produce " + u + " --resume --max-batch-bytes 100", lines(1, 2000));
  EXPECT_EQ(longer.status, 0) << longer.err;
  EXPECT_NE(longer.out.find("resumed      1000 records were already in the stream"), std::string::npos) << longer.out;
  EXPECT_EQ(client.read_all(u, false), lines(1, 2000));
  const CliRun same = prodsm("produce " + u + " --resume --max-batch-bytes 64 --verify", lines(1, 2000));
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_NE(same.out.find("verified"), std::string::npos) << same.out;
  EXPECT_EQ(client.read_all(u, false), lines(1, 2000)) << "nothing doubled";
}

// An interrupted run resumed on the whole input: the first run stops at SIGINT after the
// lines it was given (they are flushed), the resumed run appends exactly the rest.
TEST_F(Cli, InterruptedRunResumedOnTheWholeInputIsExact) {
  const std::string u = url("resume-interrupted");
  client.create(u, "application/octet-stream");
  std::string all;
  for (int i = 1; i <= 3000; ++i) all += "line " + std::to_string(i) + "\n";
  const std::string head = all.substr(0, all.find("line 1201\n"));  // lines 1..1200
  const std::string fifo = temp_path("resume-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int in = ::open(fifo.c_str(), O_RDONLY);
    const int null = ::open("/dev/null", O_WRONLY);
    if (in < 0 || null < 0) ::_exit(99);
    ::dup2(in, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(PRODSM_CLI, PRODSM_CLI, "produce", u.c_str(), "-q", "--max-batch-bytes", "700",
            static_cast<char*>(nullptr));
    ::_exit(98);
  }
  const int out = ::open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(out, 0);
  ASSERT_EQ(::write(out, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  std::string held;
  for (int i = 0; i < 600 && held != head; ++i) {  // up to 30 s
    held = client.read_all(u, false);
    if (held != head) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  ASSERT_EQ(held, head) << "the first run never sent its lines";
  ASSERT_EQ(::kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(out);
  std::remove(fifo.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const CliRun resumed = prodsm("produce " + u + " --resume --max-batch-bytes 300", all);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed      1200 records"), std::string::npos) << resumed.out;
  EXPECT_EQ(client.read_all(u, false), all) << "every line exactly once, in order";
}

// --resume in JSON mode compares values, not bytes.
TEST_F(Cli, ResumeInJsonModeComparesValues) {
  const std::string u = url("resume-json");
  ASSERT_EQ(prodsm("produce " + u + " --json --create -q", "{\"a\": 1}\n[1, 2]\n").status, 0);
  const CliRun r = prodsm("produce " + u + " --json --resume -q", "{\"a\":1}\n[1,2]\n\"three\"\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(client.read_all(u, true), R"([{"a":1},[1,2],"three"])");
}

// --resume refuses a stream that is not a prefix of the input, before appending
// anything: another input, or a stream that holds more than the input.
TEST_F(Cli, ResumeRefusesAStreamThatIsNotAPrefix) {
  const std::string u = url("resume-refused");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", "a\nb\nc\n").status, 0);
  const CliRun other = prodsm("produce " + u + " --resume -q", "a\nx\nc\nd\n");
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_NE(other.err.find("input line 2 differs from the stream"), std::string::npos) << other.err;
  const CliRun shorter = prodsm("produce " + u + " --resume -q", "a\n");
  EXPECT_EQ(shorter.status, 2) << shorter.err;
  EXPECT_NE(shorter.err.find("holds 4 bytes more than the input"), std::string::npos) << shorter.err;
  const CliRun inside = prodsm("produce " + u + " --resume -q", "a\nb\nc\nd");
  EXPECT_EQ(inside.status, 0) << "whole records: resumed " << inside.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\nc\nd");
}

// B3 at the command line: out-of-range values are refused by name, never wrapped.
TEST_F(Cli, OutOfRangeOptionsAreRefused) {
  const std::string u = url("ranges");
  for (const char* bad : {"--request-timeout-ms 288230376151712744", "--delivery-timeout-ms 0", "--linger-ms nan",
                          "--linger-ms inf", "--linger-ms 1e19", "--epoch -1", "--max-batch-bytes -1",
                          "--no-producer-id --producer-id x", "--producer-id ''"}) {
    const CliRun r = prodsm("produce " + u + " --create " + bad, "x\n");
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
}

// SIGINT stops the input, flushes what was accepted and exits 130: nothing accepted is
// lost (cli_interrupt.hpp).
void interrupt_while_reading_a_fifo(TestClient& client, const std::string& u, bool named_with_dash_i,
                                    bool partial = false) {
  client.create(u, "application/octet-stream");
  interrupt_produce_reading_a_fifo(
      {"produce", u, "-q", "--linger-ms", "0"}, [&] { return client.read_all(u, false); }, named_with_dash_i, partial);
}

TEST_F(Cli, InterruptFlushesWhatWasAcceptedAndExits130) {
  interrupt_while_reading_a_fifo(client, url("sigint"), false);
}

// The same with the FIFO named by -i: the blocked read ends at the signal too (the
// writer keeps the FIFO open, so without that the CLI would wait for another line).
TEST_F(Cli, InterruptWhileReadingAFifoNamedWithDashIStopsAtOnce) {
  interrupt_while_reading_a_fifo(client, url("sigint-i"), true);
}

// A signal while a line is half read: the fragment is dropped and reported, never sent
// (`tail -f log | prodsm produce` and Ctrl-C must not append "part" for "partial").
TEST_F(Cli, InterruptInsideALineDropsTheFragment) {
  interrupt_while_reading_a_fifo(client, url("sigint-partial"), false, true);
}

// With stdin closed (`<&-`), prodsm opens /dev/null on it first: it reads no descriptor
// of its own (the event loop's eventfd) as input and does not hang.
TEST_F(Cli, ClosedStdinIsReadAsEmpty) {
  const std::string u = url("closed-stdin");
  client.create(u, "application/octet-stream");
  const std::string command = std::string(PRODSM_CLI) + " produce " + u + " -q <&- >/dev/null 2>&1";
  const int status = std::system(("timeout 60 sh -c '" + command + "'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(client.read_all(u, false), "") << "nothing was appended";
}

// Issue 22 item 10: an output failure has its own exit status (4), not 2 "bad input".
TEST_F(Cli, ReadWritingToAFullDeviceFails) {
  const std::string u = url("readfull");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", "data\n").status, 0);
  const CliRun r = prodsm("read " + u + " -o /dev/full");
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("writing to '/dev/full' failed"), std::string::npos) << r.err;
  const int status = std::system((std::string(PRODSM_CLI) + " read " + u + " >/dev/full 2>/dev/null").c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 4);
}

// A closed stdout (`>&-`) is an output failure (exit 4), not a read whose data silently went to
// the /dev/null that stands in for the closed descriptor; an invalid read option (an
// empty --offset) is bad input (exit 2), not a failed read (3).
TEST_F(Cli, ReadToAClosedStdoutOrWithAnEmptyOffsetFails) {
  const std::string u = url("read-closed-stdout");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", "data\n").status, 0);
  for (const char* out : {"", "-o - ", "-o /dev/stdout ", "-o /dev/fd/1 "}) {
    const int status = std::system((std::string(PRODSM_CLI) + " read " + u + " " + out + ">&- 2>/dev/null").c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 4) << out;
  }
  const CliRun empty_offset = prodsm("read " + u + " --offset ''");
  EXPECT_EQ(empty_offset.status, 2) << "an invalid option is bad input: " << empty_offset.err;
}

// `prodsm conform`: a vector file that is not a valid vector is the caller's mistake:
// exit 2 naming the file, never a crash and never a silent pass.
TEST_F(Cli, ConformRefusesMalformedVectors) {
  const std::string dir = temp_path("vectors");
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  for (const char* text : {"[]", "{not json", "{}", R"({"steps":[{"do":"explode"}]})",
                           R"({"steps":[{"do":"flush"}],"clauses":["Z9"]})", R"({"expect":{"outcomes":5}})"}) {
    write_file(dir + "/v.json", text);
    const CliRun r = prodsm("conform --skip-properties --vectors " + dir);
    EXPECT_EQ(r.status, 2) << text << ": " << r.err;
    EXPECT_NE(r.err.find("v.json: malformed vector"), std::string::npos) << text << ": " << r.err;
  }
  ASSERT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

TEST_F(Cli, ConformRefusesUnusableOutputAndExpectFiles) {
  const std::string file = temp_path("plain");
  write_file(file, "[]");
  EXPECT_EQ(prodsm("conform --skip-properties --expect " + file).status, 2);
  EXPECT_EQ(prodsm("conform --skip-properties --save-findings " + file).status, 2);
  EXPECT_EQ(prodsm("conform --skip-properties --write-expected " + ::testing::TempDir()).status, 2);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace prodsm::test
