// SPDX-License-Identifier: Apache-2.0
// Ctrl-C while `prodsm produce` waits for input (see cli_interrupt.hpp).
#include "cli_interrupt.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

#include "cli_support.hpp"

namespace prodsm::test {
namespace {

/// Starts `prodsm <args>` with stdin from `stdin_path`, stderr to `stderr_path` and,
/// given one, stdout to `stdout_path`; its pid, or -1 when fork failed.
pid_t spawn_prodsm(std::vector<std::string> args, const std::string& stdin_path, const std::string& stderr_path,
                   const std::string& stdout_path = {}) {
  std::string cli = PRODSM_CLI;
  std::vector<char*> argv{cli.data()};  // built before the fork: the child only execs
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    const int in = ::open(stdin_path.c_str(), O_RDONLY);
    const int errfd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int outfd = stdout_path.empty() ? 1 : ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || errfd < 0 || outfd < 0) ::_exit(99);
    ::dup2(in, 0);
    ::dup2(errfd, 2);
    ::dup2(outfd, 1);
    ::execv(PRODSM_CLI, argv.data());
    ::_exit(98);
  }
  return child;
}

/// Where each thread of `pid` waits: its kernel wait channel (/proc/PID/task/TID/wchan,
/// e.g. "pipe_read", "do_sys_poll") and its state, for a failure message.
std::string thread_waits(pid_t pid) {
  std::string out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream wchan(task.path() / "wchan");
    std::string channel;
    std::getline(wchan, channel);
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close_paren = line.rfind(')');
    const std::string state =
        close_paren != std::string::npos && close_paren + 2 < line.size() ? line.substr(close_paren + 2, 1) : "?";
    out += task.path().filename().string() + ":" + (channel.empty() ? "-" : channel) + "(" + state + ") ";
  }
  return out.empty() ? "(unknown)" : out;
}

}  // namespace

void interrupt_produce_reading_a_fifo(std::vector<std::string> args, const std::function<std::string()>& read_back,
                                      bool named_with_dash_i, bool partial, int signal_number) {
  const std::string fifo = temp_path(named_with_dash_i ? "fifo-i" : "fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string err = temp_path("sigint-stderr");
  if (named_with_dash_i) {
    args.push_back("-i");
    args.push_back(fifo);
  }
  const pid_t child = spawn_prodsm(std::move(args), named_with_dash_i ? "/dev/null" : fifo, err);
  ASSERT_GE(child, 0);
  const int out = ::open(fifo.c_str(), O_WRONLY);  // waits for the child to open it
  ASSERT_GE(out, 0);
  ASSERT_EQ(::write(out, "a\nb\n", 4), 4);
  std::string held;
  for (int i = 0; i < 600 && held != "a\nb\n"; ++i) {  // up to 30 s
    held = read_back();
    if (held != "a\nb\n") std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  ASSERT_EQ(held, "a\nb\n") << "the CLI never sent the two records";
  if (partial) {
    ASSERT_EQ(::write(out, "part", 4), 4);
    int unread = 4;
    for (int i = 0; i < 600 && unread > 0; ++i) {  // until the CLI has read it (FIONREAD on the pipe)
      if (::ioctl(out, FIONREAD, &unread) != 0) unread = 0;
      if (unread > 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    ASSERT_EQ(unread, 0) << "the CLI never read the partial line";
  }
  ASSERT_EQ(::kill(child, signal_number), 0);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 600 && waited == 0; ++i) {  // up to 30 s; the FIFO's writer stays open
    waited = ::waitpid(child, &status, WNOHANG);
    if (waited == 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  if (waited == 0) {
    const std::string where = thread_waits(child);  // read before the kill: where each thread waits
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    ::close(out);
    FAIL() << "the CLI did not stop within 30 s of the signal; its threads wait in: " << where
           << "; its stderr: " << slurp(err);
  }
  ASSERT_EQ(waited, child);
  ::close(out);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_NE(slurp(err).find("interrupted: stopped reading after 2 records"), std::string::npos) << slurp(err);
  if (partial) {
    EXPECT_NE(slurp(err).find("its 4 bytes read so far were dropped, not sent"), std::string::npos) << slurp(err);
  }
  EXPECT_EQ(read_back(), "a\nb\n") << "the incomplete line was never sent";
  std::remove(fifo.c_str());
  std::remove(err.c_str());
}

namespace {
/// Starts `prodsm <args>` (stdin /dev/null) and waits (bounded, 30 s) until `sent()`:
/// its pid, or -1 (a gtest failure recorded) when the run never sent its batch.
pid_t spawn_until_sent(std::vector<std::string> args, const std::function<bool(pid_t)>& sent, const std::string& err,
                       const std::string& out = {}) {
  const pid_t child = spawn_prodsm(std::move(args), "/dev/null", err, out);
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  bool held = false;
  for (int i = 0; i < 600 && !held; ++i) {  // up to 30 s
    held = sent(child);
    if (!held) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  if (!held) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ADD_FAILURE() << "the run never sent its batch: " << slurp(err);
    return -1;
  }
  return child;
}
}  // namespace

std::uint64_t bytes_read_by(pid_t pid) {
  std::ifstream io("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return 0;
}

AbortedRun abort_produce(std::vector<std::string> args, const std::function<bool(pid_t)>& sent,
                         const std::string& first_line) {
  const std::string err = temp_path("abort-after-eof-err");
  const std::string out = temp_path("abort-after-eof-out");
  AbortedRun run;
  const pid_t child = spawn_until_sent(std::move(args), sent, err, out);
  if (child < 0) return run;
  EXPECT_EQ(::kill(child, SIGINT), 0);
  // The second signal once the first was handled (its line written): a different signal,
  // so not a repeat of the first (kRepeatWindowMs), whatever the time between them.
  for (int i = 0; i < 600 && slurp(err).find(first_line) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  EXPECT_EQ(::kill(child, SIGTERM), 0);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 600 && waited == 0; ++i) {  // up to 30 s
    waited = ::waitpid(child, &status, WNOHANG);
    if (waited == 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  if (waited == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    ADD_FAILURE() << "the run did not end within 30 s of the second signal: " << slurp(err);
  }
  run.err = slurp(err);
  run.out = slurp(out);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by the second signal instead of aborting: " << run.err;
  if (WIFEXITED(status)) run.status = WEXITSTATUS(status);
  EXPECT_EQ(run.status, 130) << run.err;
  EXPECT_NE(run.err.find("prodsm produce: aborting: records not yet acknowledged fail now"), std::string::npos)
      << run.err;
  std::remove(err.c_str());
  std::remove(out.c_str());
  return run;
}

void interrupt_produce_after_the_whole_input(std::vector<std::string> args, const std::function<bool()>& sent) {
  const std::string err = temp_path("sigint-after-eof-err");
  const pid_t child = spawn_until_sent(
      std::move(args), [&](pid_t) { return sent(); }, err);
  ASSERT_GE(child, 0);
  ASSERT_EQ(::kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(err);
  EXPECT_NE(slurp(err).find("interrupted after the whole input was read: nothing is left out"), std::string::npos)
      << slurp(err);
  EXPECT_EQ(slurp(err).find("input stopped"), std::string::npos) << slurp(err);
  std::remove(err.c_str());
}

}  // namespace prodsm::test
