// SPDX-License-Identifier: Apache-2.0
// What `prodsm produce` takes for its input's end (README: "Only the true end of the
// input makes a last line without a newline a record"; nothing accepted is lost
// silently). stdin is read through stdio, where a failed read(2) looks like the end of
// the input: a non-blocking pipe with no data yet (EAGAIN) must wait for data, and a
// stdin that cannot be read must fail with exit 2, never end the input early with exit 0.
// And what produce accepted reads back: a JSON number the server rewrites (1e20 comes
// back as 100000000000000000000) must not make read, --verify or --resume fail.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "liveness.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

/// How long a step of the CLI may take before the test calls it hung (liveness, not timing).
constexpr Duration kCliWait = std::chrono::seconds{30};

class CliInput : public CliServerTest {
 protected:
  CliInput() : CliServerTest("cli-input") {}
};

/// `prodsm produce URL -q ARGS...` reading a pipe the test writes to (`in`), its stderr
/// in `err` (a file). `nonblocking`: O_NONBLOCK on the CLI's end of the pipe.
class PipedProduce {
 public:
  PipedProduce(const std::string& url, std::vector<std::string> args, std::string err_path, bool nonblocking)
      : err{std::move(err_path)} {
    int fds[2];
    if (::pipe(fds) != 0) return;
    if (nonblocking) ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    args.insert(args.begin(), {PRODSM_CLI, "produce", url, "-q"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    child = ::fork();
    if (child == 0) {
      const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (errfd < 0 || ::dup2(fds[0], 0) < 0 || ::dup2(errfd, 2) < 0) ::_exit(99);
      ::close(fds[1]);
      ::execv(PRODSM_CLI, argv.data());
      ::_exit(98);
    }
    ::close(fds[0]);
    in = fds[1];
    ::signal(SIGPIPE, SIG_IGN);  // a CLI that ended its input early closes the pipe
  }
  PipedProduce(const PipedProduce&) = delete;
  PipedProduce& operator=(const PipedProduce&) = delete;
  ~PipedProduce() {
    if (in >= 0 || child > 0) (void)finish();
    std::remove(err.c_str());
  }

  /// Writes `text` to the CLI's input; false when not all of it was taken.
  bool write(std::string_view text) const {
    return ::write(in, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }

  /// Closes the pipe (the true end of the input) and waits (liveness bound kCliWait) for
  /// the CLI's exit status; -1 when it did not exit by then (it is killed) or never ran.
  int finish() {
    if (in >= 0) ::close(std::exchange(in, -1));
    if (child <= 0) return -1;
    int status = 0;
    pid_t waited = 0;
    const bool exited = eventually([&] { return (waited = ::waitpid(child, &status, WNOHANG)) != 0; }, kCliWait);
    if (!exited) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
    }
    child = -1;
    return exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int in = -1;       ///< the test's end of the CLI's input
  pid_t child = -1;  ///< the CLI
  std::string err;   ///< where its stderr goes
};

// A parent that hands over a pipe with O_NONBLOCK set on its read end: every read that
// finds the pipe empty fails with EAGAIN. The CLI must wait for more input, not take the
// first EAGAIN for the end (which lost every later line and exited 0), and a line split
// across two writes is one record, not a dropped "interrupted" fragment.
TEST_F(CliInput, NonBlockingStdinWaitsForInputInsteadOfEndingIt) {
  const std::string u = url("nonblocking");
  client.create(u, "application/octet-stream");
  PipedProduce run(u, {}, temp_path("nonblocking-stderr"), true);
  ASSERT_GT(run.child, 0);
  ASSERT_TRUE(run.write("a\nb\n"));
  // The stream holds them once the CLI has read them, sent them and been acknowledged;
  // by then its next read found the pipe empty (EAGAIN).
  EXPECT_TRUE(eventually([&] { return client.read_all(u, false) == "a\nb\n"; }, kCliWait)) << client.read_all(u, false);
  ASSERT_TRUE(run.write("c\nhal")) << "the CLI closed its input after the first EAGAIN";
  int unread = 5;
  EXPECT_TRUE(eventually([&] { return ::ioctl(run.in, FIONREAD, &unread) != 0 || unread == 0; }, kCliWait))
      << "the CLI never read the half line";
  EXPECT_TRUE(run.write("f\nd\n")) << "the CLI closed its input inside a line";
  EXPECT_EQ(run.finish(), 0) << slurp(run.err);
  EXPECT_EQ(client.read_all(u, false), "a\nb\nc\nhalf\nd\n") << slurp(run.err);
  EXPECT_EQ(slurp(run.err).find("dropped"), std::string::npos) << slurp(run.err);
}

// --linger-ms off: no linger timer, yet a partial batch waits for more input at most half
// of --delivery-timeout-ms (B1, E6). A line followed by a pause in the input is sent
// then: it used to wait for the batch to fill and fail at its delivery timeout, unsent.
TEST_F(CliInput, LingerOffSendsAPartialBatchBeforeItsDeliveryTimeoutWhileTheInputPauses) {
  const std::string u = url("linger-off");
  client.create(u, "application/octet-stream");
  PipedProduce run(u, {"--linger-ms", "off", "--delivery-timeout-ms", "2000"}, temp_path("linger-off-stderr"), false);
  ASSERT_GT(run.child, 0);
  ASSERT_TRUE(run.write("slow 1\n"));
  EXPECT_TRUE(eventually([&] { return client.read_all(u, false) == "slow 1\n"; }, kCliWait)) << slurp(run.err);
  ASSERT_TRUE(run.write("slow 2\n")) << slurp(run.err);
  EXPECT_TRUE(eventually([&] { return client.read_all(u, false) == "slow 1\nslow 2\n"; }, kCliWait)) << slurp(run.err);
  EXPECT_EQ(run.finish(), 0) << slurp(run.err);
  EXPECT_EQ(client.read_all(u, false), "slow 1\nslow 2\n");
}

// A stdin that cannot be read (a directory: read(2) fails with EISDIR) is bad input,
// exit 2 naming the cause — not an empty input that "succeeds" with exit 0.
TEST_F(CliInput, StdinThatIsADirectoryIsBadInput) {
  const std::string u = url("dir-stdin");
  client.create(u, "application/octet-stream");
  const std::string command =
      std::string(PRODSM_CLI) + " produce " + u + " -q < " + ::testing::TempDir() + " 2>" + temp_path("dir-stderr");
  const int status = std::system(("timeout 60 sh -c '" + command + "'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(slurp(temp_path("dir-stderr")).find("stdin is a directory"), std::string::npos)
      << slurp(temp_path("dir-stderr"));
}

// A stdin open but not for reading (GNU nohup gives a terminal's stdin a write-only
// descriptor; here `0>file`): read(2) fails with EBADF. Bad input, exit 2, and the
// message says what is wrong with stdin and what to do, not only "Bad file descriptor".
TEST_F(CliInput, StdinNotOpenForReadingIsBadInputThatSaysWhy) {
  const std::string u = url("write-only-stdin");
  client.create(u, "application/octet-stream");
  const std::string err = temp_path("write-only-stderr");
  const std::string command =
      std::string(PRODSM_CLI) + " produce " + u + " -q 0>" + temp_path("write-only-stdin") + " 2>" + err;
  const int status = std::system(("timeout 60 sh -c '" + command + "'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << slurp(err);
  EXPECT_NE(slurp(err).find("stdin is not open for reading"), std::string::npos) << slurp(err);
  EXPECT_EQ(client.read_all(u, false), "");
}

// A JSON-mode server holds numbers as doubles: the line 1e20 is stored and read back
// as 100000000000000000000, an integer beyond 64 bits. prodsm's reader refused it
// ("Problem while parsing a number"), so read, --verify and --resume failed on a stream
// prodsm had just produced correctly.
TEST_F(CliInput, JsonNumbersTheServerRewritesReadBackVerifyAndResume) {
  const std::string u = url("json-rewritten");
  const CliRun produced = prodsm("produce " + u + " --create --json --verify -q", "1\n1e20\n-9223372036854775808\n");
  EXPECT_EQ(produced.status, 0) << produced.err;
  const CliRun read = prodsm("read " + u + " --json");
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.out, "[1,100000000000000000000,-9223372036854776000]\n") << read.err;
  const CliRun resumed = prodsm("produce " + u + " --json --resume -q", "1\n1e20\n-9223372036854775808\n2\n");
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(prodsm("read " + u + " --json").out, "[1,100000000000000000000,-9223372036854776000,2]\n");
  // What read printed can be produced again: its integers beyond 64 bits are exact doubles.
  const std::string again = url("json-rewritten-again");
  const CliRun reproduced =
      prodsm("produce " + again + " --create --json --verify -q", "100000000000000000000\n-9223372036854776000\n");
  EXPECT_EQ(reproduced.status, 0) << reproduced.err;
}

// PROTOCOL.md section 9.1: only an application/json stream keeps JSON messages; the
// server stores a `+json` type as sent. So produce sends a `+json` stream's lines as
// bytes, newline kept: two runs append one after the other and read back as the input
// (framed as arrays, they were two arrays glued together, which read --json, --verify and
// --resume refused); --json with such a type is refused, exit 2, saying why.
TEST_F(CliInput, APlusJsonContentTypeIsProducedAsBytesAsTheServerStoresIt) {
  const std::string u = url("plus-json");
  const std::string type = " --content-type application/vnd.foo+json";
  const std::string lines = "{\"x\":1}\n{\"x\":2}\n";
  const CliRun first = prodsm("produce " + u + " --create -q --verify" + type, lines);
  EXPECT_EQ(first.status, 0) << first.err;
  const CliRun second = prodsm("produce " + u + " -q" + type, "{\"x\":3}\n");
  EXPECT_EQ(second.status, 0) << second.err;
  const std::string all = lines + "{\"x\":3}\n";
  EXPECT_EQ(client.read_all(u, false), all);
  const CliRun read = prodsm("read " + u);
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.out, all);
  const CliRun resumed = prodsm("produce " + u + " -q --resume --verify" + type, all + "{\"x\":4}\n");
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(client.read_all(u, false), all + "{\"x\":4}\n");
  const CliRun json = prodsm("produce " + u + " -q --json" + type, "{}\n");
  EXPECT_EQ(json.status, 2);
  EXPECT_NE(json.err.find("JSON mode is application/json"), std::string::npos) << json.err;
}

}  // namespace
}  // namespace prodsm::test
