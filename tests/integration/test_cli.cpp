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
#include <vector>

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

  /// A new stream `name` (created by a produce of nothing), then `prodsm produce <its
  /// URL> <args>` on `input` while the reference server injects `fault` (the
  /// inject-error fields after the path, e.g. `"method":"POST","status":413,"count":1`)
  /// on it, cleared after. The stream's URL is put in `u`.
  CliRun produce_under_fault(const std::string& name, const std::string& fault, const std::string& args,
                             const std::string& input, std::string& u) {
    u = url(name);
    EXPECT_EQ(prodsm("produce " + u + " --create -q", "").status, 0);
    client.inject_fault(ReferenceServer::shared().url(),
                        R"({"path":")" + ds::StreamUrl::parse(u)->path + "\"," + fault + "}");
    CliRun r = prodsm("produce " + u + " " + args, input);
    client.clear_faults(ReferenceServer::shared().url());
    return r;
  }
};

// E4: --create is retried as the appends are (a create is idempotent at the server): two
// 503s on the PUT are ridden out and told; a refusal that is not retryable fails at once,
// and nothing is appended.
TEST_F(Cli, CreateIsRetriedLikeTheAppends) {
  const std::string u = url("create-retried");
  const std::string path = ds::StreamUrl::parse(u)->path;
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + path + R"(","method":"PUT","status":503,"count":2,"retryAfter":0})");
  const CliRun r = prodsm("produce " + u + " --create --verify", "a\nb\n");
  client.clear_faults(ReferenceServer::shared().url());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("creating the stream: attempt 1 failed: unavailable"), std::string::npos) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");

  const std::string v = url("create-refused");
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + ds::StreamUrl::parse(v)->path + R"(","method":"PUT","status":400,"count":1})");
  const CliRun refused = prodsm("produce " + v + " --create", "a\n");
  client.clear_faults(ReferenceServer::shared().url());
  EXPECT_EQ(refused.status, 3) << refused.err;
  EXPECT_EQ(refused.err.find("retrying"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("failed: rejected"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("nothing was appended"), std::string::npos) << refused.err;
}

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
// E4: --max-attempts bounds the sends per batch (retry.max_attempts), and the failure
// names the flag to change; out of its range it is bad input.
TEST_F(Cli, MaxAttemptsBoundsTheRetriesAndTheFailureNamesIt) {
  const std::string nowhere = "http://127.0.0.1:1/nowhere";  // connection refused: definite, retried
  const CliRun r = prodsm("produce " + nowhere + " -q --max-attempts 2", "a\n");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("gave up after 2 attempts (--max-attempts 2;"), std::string::npos) << r.err;
  for (const char* bad : {"0", "1001"}) {
    const CliRun refused = prodsm("produce " + nowhere + " -q --max-attempts " + bad, "a\n");
    EXPECT_EQ(refused.status, 2) << bad << ": " << refused.err;
    EXPECT_NE(refused.err.find("--max-attempts"), std::string::npos) << refused.err;
  }
}

// E4: retries end at --delivery-timeout-ms (retry.max_attempts defaults to 1000), so a
// server that refuses connections must not leave the run silent until then: each target
// (Durable Streams, s2://) tells stderr what it retries and why, in fewer lines than
// retries (the rate itself: RetryNotices.* on virtual time); -q tells nothing.
TEST_F(Cli, RetriesAreToldOnStderrAtMostOnceASecondUnlessQuiet) {
  for (const std::string target :
       {"http://127.0.0.1:1/nowhere", "s2://nowhere-basin/stream --endpoint http://127.0.0.1:1"}) {
    const CliRun r = prodsm("produce " + target + " --progress never --delivery-timeout-ms 2500", "a\n");
    EXPECT_EQ(r.status, 3) << target << ": " << r.err;
    std::size_t lines = 0;
    for (std::size_t at = r.err.find("prodsm produce: warning "); at != std::string::npos;
         at = r.err.find("prodsm produce: warning ", at + 1)) {
      ++lines;
    }
    EXPECT_GE(lines, 1U) << target << ": " << r.err;
    EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << target << ": " << r.err;
    // The retries went on for the whole 2.5 s: one line per retry would be about 10.
    const auto retries_at = r.out.find(" retries");
    ASSERT_NE(retries_at, std::string::npos) << r.out;
    const auto retries = std::stoul(r.out.substr(r.out.rfind(' ', retries_at - 1) + 1));
    EXPECT_LT(lines, retries) << target << ": " << r.err << r.out;
    EXPECT_NE(r.err.find("delivery_timeout"), std::string::npos) << target << ": " << r.err;

    const CliRun quiet = prodsm("produce " + target + " -q --delivery-timeout-ms 300", "a\n");
    EXPECT_EQ(quiet.status, 3) << target << ": " << quiet.err;
    EXPECT_EQ(quiet.err.find("prodsm produce: warning"), std::string::npos) << target << ": " << quiet.err;
  }
}

// A 413 (the server's or a proxy's body limit below a batch) is terminal (E1, S7) and
// the failure names --max-batch-bytes, the flag that fixes it.
TEST_F(Cli, A413NamesMaxBatchBytes) {
  std::string u;
  const CliRun r = produce_under_fault("too-large", R"("method":"POST","status":413,"count":1)",
                                       "-q --max-batch-bytes 4096", "a\n", u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("413"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-batch-bytes 4096 bytes: lower it"), std::string::npos) << r.err;
}

// --verify whose read-back fails (here every GET answered 404) compared nothing: a
// server failure, exit 3 "not verified", never exit 1 "verification failed" — which says
// the stream differs from the input.
TEST_F(Cli, AVerifyThatCannotReadTheStreamBackIsAServerFailureNotAMismatch) {
  std::string u;
  const CliRun r =
      produce_under_fault("verify-unread", R"("method":"GET","status":404,"count":100)", "-q --verify", "a\nb\n", u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("not verified: reading the stream back failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("verification failed"), std::string::npos) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n") << "every record was appended";
}

// E4: the read-back of --verify retries as the run's appends do (--max-attempts, default
// 1000): 12 GETs in a row that lost their connection (a server restarting) were "not verified"
// (exit 3) when the read-back gave up after ds::ReadOptions' default of 10 attempts.
TEST_F(Cli, AVerifyReadBackRetriesAsTheAppendsDo) {
  std::string u;
  const CliRun r = produce_under_fault("verify-outage", R"("method":"GET","dropConnection":true,"count":12)",
                                       "-q --verify", "a\nb\n", u);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
  EXPECT_EQ(r.err.find("warning retry"), std::string::npos) << "-q: no retry lines\n" << r.err;
}

// E4: the read-back's retries are told on stderr as the appends' are (it may retry for
// up to --delivery-timeout-ms, which would otherwise be silent).
TEST_F(Cli, AVerifyReadBackTellsItsRetries) {
  std::string u;
  const CliRun r = produce_under_fault("verify-told", R"("method":"GET","status":503,"count":2,"retryAfter":0)",
                                       "--verify", "a\nb\n", u);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("prodsm produce: warning retry: reading the stream back at offset -1 failed and is sent "
                       "again in "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(E4, attempt 1); cause: unavailable"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
}

// S5: a restart whose fresh epoch (microseconds since the Unix epoch) is below one the
// server holds for its producer id — an earlier run with a clock ahead, or a larger
// --epoch — is fenced (exit 3); the message says so and names --auto-claim, which then
// appends the run after the earlier one's records.
TEST_F(Cli, AFencedRestartNamesAutoClaimAndAutoClaimAppendsIt) {
  const std::string u = url("fenced-restart");
  const auto ahead = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch() + std::chrono::hours{1})
                         .count();
  const CliRun earlier =
      prodsm("produce " + u + " --create -q --producer-id skew --epoch " + std::to_string(ahead), "a\n");
  ASSERT_EQ(earlier.status, 0) << earlier.err;
  const CliRun fenced = prodsm("produce " + u + " -q --producer-id skew", "b\n");
  EXPECT_EQ(fenced.status, 3) << fenced.err;
  EXPECT_NE(fenced.err.find("stale_epoch"), std::string::npos) << fenced.err;
  EXPECT_NE(fenced.err.find("--auto-claim takes the next epoch"), std::string::npos) << fenced.err;
  const CliRun claimed = prodsm("produce " + u + " -q --producer-id skew --auto-claim", "b\n");
  EXPECT_EQ(claimed.status, 0) << claimed.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
}

// E2, E6: a run that fails indefinite (the delivery timeout ran out with the batch in
// flight) does not call its unacknowledged records simply "failed": some may be in the
// stream. It names the command that appends exactly the rest (the generated producer id
// included), and that command leaves the stream exact.
TEST_F(Cli, AnIndefiniteFailureSaysRecordsMayBeInTheStreamAndHowToResume) {
  std::string u;
  const CliRun r = produce_under_fault("indefinite", R"("method":"POST","delayMs":2000,"count":1)",
                                       "--progress never --delivery-timeout-ms 500", "a\nb\n", u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("0 acknowledged, 2 failed (indefinite: some of them may be in the stream)"), std::string::npos)
      << r.out;
  const auto id_at = r.err.find("run again with --producer-id prodsm-");
  ASSERT_NE(id_at, std::string::npos) << r.err;
  const auto flags_at = id_at + std::string("run again with ").size();
  const std::string again = r.err.substr(flags_at, r.err.find(" to append", flags_at) - flags_at);
  EXPECT_NE(again.find(" --resume --verify"), std::string::npos) << again;
  const CliRun resumed = prodsm("produce " + u + " -q " + again, "a\nb\n");
  EXPECT_EQ(resumed.status, 0) << again << ": " << resumed.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
}

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

// E2: a 404 is definite, and the CLI names the URL (the server's answer does not) and
// the way out, as --resume does when it reads the stream back.
TEST_F(Cli, MissingStreamIsAServerFailure) {
  const std::string u = url("missing");
  const CliRun r = prodsm("produce " + u, "x\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("not_found (definite)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("there is no stream at " + u + ": create it with --create"), std::string::npos) << r.err;
  const CliRun resumed = prodsm("produce " + u + " --resume", "x\n");  // the read back finds no stream
  EXPECT_EQ(resumed.status, 3);
  EXPECT_NE(resumed.err.find("--resume: there is no stream at " + u + ": add --create"), std::string::npos)
      << resumed.err;
  const CliRun created = prodsm("produce " + u + " --resume --create -q", "x\n");  // the way out works
  EXPECT_EQ(created.status, 0) << created.err;
  EXPECT_EQ(client.read_all(u, false), "x\n");
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
  // The count verified is the input's, the resumed records too (it said 0: those appended).
  EXPECT_NE(same.out.find("verified     the stream holds exactly the 2000 records"), std::string::npos) << same.out;
  EXPECT_EQ(client.read_all(u, false), lines(1, 2000)) << "nothing doubled";
  // --verify of a stream that held data before the run (no --create to tell) fails, and
  // says that is the likely cause instead of only where the contents differ.
  const CliRun more = prodsm("produce " + u + " --verify -q", "2001\n");
  EXPECT_EQ(more.status, 1) << more.err;
  EXPECT_NE(more.err.find("a stream that held data before this run differs"), std::string::npos) << more.err;
}

// A writer cut off mid-line: the true end of the input makes its last line a record, and
// the run says so; --resume with the whole input appends the rest of that line (the stream
// is bytes), so the stream is the input's bytes; --json refuses a bytes stream as bad input.
TEST_F(Cli, AResumeCompletesALineACutOffWriterLeftHalfWritten) {
  const std::string u = url("resume-cut-line");
  const CliRun cut = prodsm("produce " + u + " --create", "1\n22\n33");  // the writer died inside "333\n"
  EXPECT_EQ(cut.status, 0) << cut.err;
  EXPECT_NE(cut.err.find("the input's last line (line 3) had no newline and was produced as a record"),
            std::string::npos)
      << cut.err;
  EXPECT_EQ(client.read_all(u, false), "1\n22\n33");
  const CliRun resumed = prodsm("produce " + u + " --resume --verify", "1\n22\n333\n4\n");
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("the stream ended inside input line 3, holding its first 2 bytes"), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.out.find("verified     the stream holds exactly the 4 records"), std::string::npos) << resumed.out;
  EXPECT_EQ(client.read_all(u, false), "1\n22\n333\n4\n");
  EXPECT_EQ(prodsm("produce " + u + " -q", "5\n").err.find("had no newline"), std::string::npos)
      << "no notice when the last line has its newline";
  const CliRun json = prodsm("produce " + u + " --json --resume", "1\n");
  EXPECT_EQ(json.status, 2) << json.err;
  EXPECT_NE(json.err.find("produce to it without --json; nothing was appended"), std::string::npos) << json.err;
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

// A hangup (the terminal or ssh session closed) is an interrupt, not a kill: the input
// stops and what was accepted is flushed (exit 130), as a JVM's shutdown hooks flush
// Kafka's console producer. Before, SIGHUP's default action killed the run at once.
TEST_F(Cli, AHangupFlushesWhatWasAcceptedAsAnInterruptDoes) {
  const std::string u = url("sighup");
  client.create(u, "application/octet-stream");
  interrupt_produce_reading_a_fifo(
      {"produce", u, "-q", "--linger-ms", "0"}, [&] { return client.read_all(u, false); }, false, false, SIGHUP);
}

// A signal while a line is half read: the fragment is dropped and reported, never sent
// (`tail -f log | prodsm produce` and Ctrl-C must not append "part" for "partial").
TEST_F(Cli, InterruptInsideALineDropsTheFragment) {
  interrupt_while_reading_a_fifo(client, url("sigint-partial"), false, true);
}

// An interrupt after the whole input was read stops nothing: every record is already
// accepted, the run waits for their acknowledgements and ends as it would have (exit 0),
// and the message says so instead of "input stopped" (and 130, which says some input may
// be missing). The only POST is held by the server for 3 s, so the signal comes while the
// run waits for it, after end of input (a 60 s linger: only the end-of-input flush sends).
TEST_F(Cli, InterruptAfterTheWholeInputWasReadLeavesNothingOutAndExits0) {
  const std::string u = url("sigint-after-eof");
  const std::string path = ds::StreamUrl::parse(u)->path;
  client.create(u, "application/octet-stream");
  client.set_fault_mix(
      ReferenceServer::shared().url(),
      R"({"path":")" + path + R"(","method":"POST","probability":1,"seed":1,"faults":[{"delayMs":3000}]})");
  const std::string input = temp_path("sigint-after-eof-in");
  {
    std::ofstream f(input, std::ios::binary);
    f << "a\nb\n";
  }
  interrupt_produce_after_the_whole_input({"produce", u, "-q", "--linger-ms", "60000", "-i", input}, [&] {
    // The POST reached the server (and is held): the input was read whole.
    auto counts = nlohmann::json::parse(client.fault_mix_counts(ReferenceServer::shared().url()), nullptr, false);
    return counts.is_object() && counts.contains(path) && counts[path]["injected"][0].get<int>() > 0;
  });
  client.clear_fault_mix(ReferenceServer::shared().url());
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
  std::remove(input.c_str());
}

// A second interrupt while the run waits for an acknowledgement aborts the producer (C5)
// instead of killing the process: exit 130, the summary says how many records were
// acknowledged and that the failed ones may be in the stream (E2: indefinite, they were
// sent), and the command it suggests appends exactly what the stream lacks. The server
// holds the only POST for 20 s: without the abort the run would wait for it and exit 0.
TEST_F(Cli, ASecondInterruptAbortsAndSaysWhatWasAcknowledgedAndHowToResume) {
  const std::string u = url("sigint-abort");
  const std::string path = ds::StreamUrl::parse(u)->path;
  client.create(u, "application/octet-stream");
  client.set_fault_mix(
      ReferenceServer::shared().url(),
      R"({"path":")" + path + R"(","method":"POST","probability":1,"seed":1,"faults":[{"delayMs":20000}]})");
  const std::string input = temp_path("sigint-abort-in");
  {
    std::ofstream f(input, std::ios::binary);
    f << "a\nb\n";
  }
  const AbortedRun run = abort_produce(
      {"produce", u, "--linger-ms", "60000", "-i", input},
      [&](pid_t) {  // the POST reached the server, which holds it
        auto counts = nlohmann::json::parse(client.fault_mix_counts(ReferenceServer::shared().url()), nullptr, false);
        return counts.is_object() && counts.contains(path) && counts[path]["injected"][0].get<int>() > 0;
      },
      "interrupted after the whole input was read");
  client.clear_fault_mix(ReferenceServer::shared().url());
  EXPECT_NE(run.out.find("records      2 accepted: 0 acknowledged, 2 failed (indefinite: some of them may be in the "
                         "stream)"),
            std::string::npos)
      << run.out;
  const std::string hint = "run again with --producer-id ";
  const auto at = run.err.find(hint);
  ASSERT_NE(at, std::string::npos) << run.err;
  const std::string id = run.err.substr(at + hint.size(), run.err.find(' ', at + hint.size()) - at - hint.size());
  const CliRun again =
      prodsm("produce " + u + " -q --producer-id " + id + " --resume --verify -i " + input + " --linger-ms 0");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(client.read_all(u, false), "a\nb\n");
  std::remove(input.c_str());
}

// The first interrupt also ends a submit that waits for capacity (R1: 5 MiB unacknowledged,
// here with the server refusing connections), not only a read of input: the input stops
// there. The flush then waits for the server until --delivery-timeout-ms (10 min here);
// the second interrupt aborts it. Every accepted record failed, none was sent (definite).
TEST_F(Cli, AnInterruptEndsAWaitForCapacityAndASecondOneAbortsTheFlush) {
  const std::string input = temp_path("sigint-capacity-in");
  constexpr int kLines = 11'000;  // 11 MB: more than the 5 MiB the producer holds unacknowledged
  {
    std::ofstream f(input, std::ios::binary);
    const std::string line = std::string(999, 'x') + "\n";  // few records: quick under the sanitizers too
    for (int i = 0; i < kLines; ++i) f << line;
  }
  const AbortedRun run = abort_produce(
      {"produce", "http://127.0.0.1:1/nowhere", "--progress", "never", "--delivery-timeout-ms", "600000", "-i", input},
      // Read most of the 5 MiB it can hold, and no more since the last look (50 ms ago):
      // it waits for capacity. (Were it still reading, the interrupt would stop it too.)
      [last = std::uint64_t{0}](pid_t pid) mutable {
        const std::uint64_t read = bytes_read_by(pid);
        return std::exchange(last, read) == read && read >= (4U << 20);
      },
      "interrupted: input stopped");
  const auto at = run.out.find(" accepted: 0 acknowledged, ");
  ASSERT_NE(at, std::string::npos) << run.out;
  const std::uint64_t accepted = std::stoull(run.out.substr(run.out.rfind(' ', at - 1) + 1, at));
  EXPECT_GT(accepted, 0U) << run.out;
  EXPECT_LT(accepted, static_cast<std::uint64_t>(kLines)) << "the input stopped at the interrupt: " << run.out;
  EXPECT_EQ(run.out.find("indefinite"), std::string::npos) << "nothing was ever sent: " << run.out;
  EXPECT_NE(run.err.find("prodsm produce: aborted"), std::string::npos) << run.err;
  std::remove(input.c_str());
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

// `prodsm conform`: a vector file that is not a valid vector is the caller's mistake:
// exit 2 naming the file, never a crash and never a silent pass.
TEST_F(Cli, ConformRefusesMalformedVectors) {
  const std::string dir = temp_path("vectors");
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  for (const char* text : {"[]", "{not json", "{}", R"({"steps":[{"do":"explode"}]})",
                           R"({"steps":[{"do":"flush"}],"clauses":["Z9"]})", R"({"expect":{"outcomes":5}})",
                           R"({"config":{"linger_msx":1},"steps":[{"do":"flush"}]})"}) {  // a typo, not a refusal
    write_file(dir + "/v.json", text);
    const CliRun r = prodsm("conform --skip-properties --vectors " + dir);
    EXPECT_EQ(r.status, 2) << text << ": " << r.err;
    EXPECT_NE(r.err.find("v.json: malformed vector"), std::string::npos) << text << ": " << r.err;
  }
  ASSERT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

// A driver that dies, answers garbage, an error, a reply of the wrong shape or an unknown
// observation kind is the target's failure: exit 3 naming it, with nothing judged —
// never "conformant" (each vector used to turn n/a, each generated command was skipped,
// and the run passed), and never a malformed vector (the vectors are fine).
TEST_F(Cli, ConformReportsAFailingDriverAsTheTargetsFailureNeverAPass) {
  const std::string driver =
      std::string(PRODSM_NODE) + " " + PRODSM_SOURCE_DIR + "/tests/conformance/drivers/faulty_driver.mjs";
  struct Case {
    const char* mode;
    const char* gist;
  };
  for (const Case& c :
       {Case{"crash", "the driver exited"}, Case{"garbage", "not a JSON object"}, Case{"bad-ok", "no boolean \"ok\""},
        Case{"error", "the SDK threw"}, Case{"bad-type", "does not follow the driver protocol"},
        Case{"bad-kind", "unknown observation kind 'Done'"}, Case{"bad-observed", "\"observed\" is not an array"},
        Case{"exit-at-start", "start: "}}) {
    SCOPED_TRACE(c.mode);
    for (const char* properties : {"--skip-properties", "--tests 5"}) {
      const std::string vectors =
          std::string(properties) == "--skip-properties" ? "" : " --vectors " + temp_path("none");
      if (!vectors.empty()) {  // properties only: an empty vectors directory
        ASSERT_EQ(std::system(("mkdir -p " + temp_path("none")).c_str()), 0);
      }
      const CliRun r =
          prodsm("conform --target faulty --driver '" + driver + " " + c.mode + "' " + properties + vectors);
      EXPECT_EQ(r.status, 3) << properties << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find("target faulty failed running"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.gist), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("conformant"), std::string::npos) << r.out;
    }
  }
  ASSERT_EQ(std::system(("rm -rf " + temp_path("none")).c_str()), 0);
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
