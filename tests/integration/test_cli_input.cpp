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
#include <cstdlib>
#include <string>
#include <thread>
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

// A parent that hands over a pipe with O_NONBLOCK set on its read end: every read that
// finds the pipe empty fails with EAGAIN. The CLI must wait for more input, not take the
// first EAGAIN for the end (which lost every later line and exited 0), and a line split
// across two writes is one record, not a dropped "interrupted" fragment.
TEST_F(CliInput, NonBlockingStdinWaitsForInputInsteadOfEndingIt) {
  const std::string u = url("nonblocking");
  client.create(u, "application/octet-stream");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  const std::string err = temp_path("nonblocking-stderr");
  std::string cli = PRODSM_CLI;
  std::string produce = "produce", target = u, quiet = "-q";
  std::vector<char*> argv{cli.data(), produce.data(), target.data(), quiet.data(), nullptr};
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (errfd < 0 || ::dup2(fds[0], 0) < 0 || ::dup2(errfd, 2) < 0) ::_exit(99);
    ::close(fds[1]);
    ::execv(PRODSM_CLI, argv.data());
    ::_exit(98);
  }
  ::close(fds[0]);
  const int out = fds[1];
  ::signal(SIGPIPE, SIG_IGN);  // a CLI that ended its input early closes the pipe
  ASSERT_EQ(::write(out, "a\nb\n", 4), 4);
  // The stream holds them once the CLI has read them, sent them and been acknowledged;
  // by then its next read found the pipe empty (EAGAIN).
  EXPECT_TRUE(eventually([&] { return client.read_all(u, false) == "a\nb\n"; }, kCliWait)) << client.read_all(u, false);
  ASSERT_EQ(::write(out, "c\nhal", 5), 5) << "the CLI closed its input after the first EAGAIN";
  int unread = 5;
  EXPECT_TRUE(eventually([&] { return ::ioctl(out, FIONREAD, &unread) != 0 || unread == 0; }, kCliWait))
      << "the CLI never read the half line";
  EXPECT_EQ(::write(out, "f\nd\n", 4), 4) << "the CLI closed its input inside a line";
  ::close(out);  // the true end of the input
  int status = 0;
  pid_t waited = 0;
  EXPECT_TRUE(eventually([&] { return (waited = ::waitpid(child, &status, WNOHANG)) != 0; }, kCliWait));
  if (waited == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(err);
  EXPECT_EQ(client.read_all(u, false), "a\nb\nc\nhalf\nd\n") << slurp(err);
  EXPECT_EQ(slurp(err).find("dropped"), std::string::npos) << slurp(err);
  std::remove(err.c_str());
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

}  // namespace
}  // namespace prodsm::test
