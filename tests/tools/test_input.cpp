// SPDX-License-Identifier: Apache-2.0
// The stdin of `prodsm produce` (tools/src/input.hpp, InterruptibleStdin): an interrupt
// ends a wait for input within one poll interval, with no signal involved at all — the
// flag alone is enough, however (or however late) the signal's handler ran; data, the
// writer's end and a failed read are told apart. Each case runs in a child process (a
// death test): its stdin is replaced.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <istream>
#include <string>
#include <thread>

#include "input.hpp"

namespace prodsm::tools {
namespace input_test {  // named: a unity build puts this file beside test_interrupt.cpp

/// Child exit codes: which step went wrong.
enum Step : int { ok = 0, setup_failed = 10, wrong_data = 11, not_ended = 12, wrong_error = 13, too_slow = 14 };

/// Stdin becomes a pipe (blocking, or O_NONBLOCK); returns the writer's descriptor, or -1.
int stdin_pipe(bool nonblocking) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  if (nonblocking && ::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) return -1;
  if (::dup2(fds[0], STDIN_FILENO) < 0) return -1;
  ::close(fds[0]);
  return fds[1];
}

/// A line is read; then, the writer still open and nothing more written, `stop` turns
/// true from another thread after 200 ms: the wait ends (eof, no error) well within a
/// second, and getline returns the half line written before, cut short by that end.
[[noreturn]] void stop_ends_a_wait(bool nonblocking) {
  ::alarm(10);  // a wait the stop does not end kills the child (SIGALRM), not the test's time
  const int writer = stdin_pipe(nonblocking);
  if (writer < 0) std::_Exit(setup_failed);
  std::atomic<bool> stop{false};
  InterruptibleStdin buffer{[&stop] { return stop.load(); }};
  std::istream in{&buffer};
  if (::write(writer, "one\ntw", 6) != 6) std::_Exit(setup_failed);
  std::string line;
  if (!std::getline(in, line) || line != "one") std::_Exit(wrong_data);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
    stop = true;
  });
  std::getline(in, line);  // the half line, then the end (not a failure: it extracted "tw")
  stopper.join();
  const auto waited = std::chrono::steady_clock::now() - t0;
  if (!in.eof() || line != "tw") std::_Exit(not_ended);
  if (buffer.error() != 0) std::_Exit(wrong_error);
  // 200 ms, then at most one poll interval (100 ms); a second is far beyond either.
  if (waited > std::chrono::seconds{1}) std::_Exit(too_slow);
  std::_Exit(ok);
}

TEST(InterruptibleStdin, TheStopFlagEndsAWaitForInputWithoutASignal) {  // README: Ctrl-C stops the input
  EXPECT_EXIT(stop_ends_a_wait(false), ::testing::ExitedWithCode(ok), "")
      << "12: the read did not end at the stop; 14: it ended only after a second";
}

// A non-blocking pipe with no data yet (EAGAIN) is no end of the input: the wait goes on
// until the stop, as for a blocking one (before, the first EAGAIN ended the input).
TEST(InterruptibleStdin, ANonBlockingInputWithNoDataYetIsWaitedFor) {
  EXPECT_EXIT(stop_ends_a_wait(true), ::testing::ExitedWithCode(ok), "");
}

/// Bytes written in pieces, then the writer closed: every byte, then eof without error,
/// with `stop` never true.
[[noreturn]] void reads_to_the_end() {
  ::alarm(10);  // as above
  const int writer = stdin_pipe(false);
  if (writer < 0) std::_Exit(setup_failed);
  InterruptibleStdin buffer{[] { return false; }};
  std::istream in{&buffer};
  std::thread feeder([writer] {
    for (const char* piece : {"a", "lpha\nbe", "ta\n", "gamma"}) {
      if (::write(writer, piece, std::char_traits<char>::length(piece)) < 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    ::close(writer);
  });
  std::string all;
  std::string line;
  while (std::getline(in, line)) all += line + "|";
  feeder.join();
  if (all != "alpha|beta|gamma|") std::_Exit(wrong_data);
  if (!in.eof() || buffer.error() != 0) std::_Exit(wrong_error);
  std::_Exit(ok);
}

TEST(InterruptibleStdin, ReadsEveryByteUntilTheWriterCloses) {
  EXPECT_EXIT(reads_to_the_end(), ::testing::ExitedWithCode(ok), "");
}

/// Stdin closed: the read fails with EBADF, which error() reports (the input's end is
/// then a failed read, never a silent empty input).
[[noreturn]] void a_closed_stdin_is_an_error() {
  ::close(STDIN_FILENO);
  InterruptibleStdin buffer{[] { return false; }};
  std::istream in{&buffer};
  std::string line;
  if (std::getline(in, line)) std::_Exit(wrong_data);
  std::_Exit(buffer.error() == EBADF ? ok : wrong_error);
}

TEST(InterruptibleStdin, AFailedReadIsAnErrorNotTheEnd) {
  EXPECT_EXIT(a_closed_stdin_is_an_error(), ::testing::ExitedWithCode(ok), "");
}

}  // namespace input_test
}  // namespace prodsm::tools
