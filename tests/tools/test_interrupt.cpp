// SPDX-License-Identifier: Apache-2.0
// The CLI's interrupt handling (tools/src/interrupt.hpp): the first SIGINT stops the
// input of `prodsm produce` (README: exit status 130, "the first Ctrl-C or SIGTERM stops
// the input"). A signal that lands between the read loop's interrupted() check and its
// next read(2) must still end that read at once, even when the input never ends (a FIFO
// whose writer stays open). Each case runs in a child process (a death test): the
// handler, the signal and stdin are the child's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "interrupt.hpp"

namespace prodsm::tools {
namespace {

/// Child exit codes: which step went wrong.
enum Step : int {
  ok = 0,
  setup_failed = 10,
  blocked_before = 11,
  not_interrupted = 12,
  still_blocks = 13,
  not_eof = 14
};

/// Stdin becomes a nonblocking pipe whose writer stays open: a read would wait forever,
/// so here it fails with EAGAIN instead. Returns the writer's descriptor, or -1.
int stdin_that_never_ends() {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  if (::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0 || ::dup2(fds[0], STDIN_FILENO) < 0) return -1;
  return fds[1];
}

bool read_would_block() {
  char c = 0;
  return ::read(STDIN_FILENO, &c, 1) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/// The signal comes before the read starts (the race): with stop_stdin_on_interrupt the
/// read sees end of file at once; without it, it would still wait.
[[noreturn]] void signal_then_read(bool stop_stdin) {
  const int writer = stdin_that_never_ends();
  if (writer < 0) std::_Exit(setup_failed);
  if (stop_stdin && !stop_stdin_on_interrupt()) std::_Exit(setup_failed);
  route_interrupts_here(true);
  route_interrupts_here(false);
  if (!read_would_block()) std::_Exit(blocked_before);  // the setup: no input yet
  std::raise(SIGINT);                                   // the handler runs before raise returns
  if (!interrupted()) std::_Exit(not_interrupted);
  if (!stop_stdin) std::_Exit(read_would_block() ? still_blocks : ok);
  char c = 0;
  const ssize_t n = ::read(STDIN_FILENO, &c, 1);
  std::_Exit(n == 0 ? ok : (n < 0 && errno == EAGAIN ? still_blocks : not_eof));
}

TEST(CliInterrupt, ASignalBeforeTheNextReadEndsThatReadAtOnce) {
  EXPECT_EXIT(signal_then_read(true), ::testing::ExitedWithCode(ok), "")
      << "exit 13: the read after the signal still waits for input; 14: it read something";
}

// The negative space: without the handler's /dev/null, the same read still waits — this
// is the race stop_stdin_on_interrupt closes (the read loop would hang until the writer
// closed the FIFO).
TEST(CliInterrupt, WithoutStoppingStdinTheReadAfterTheSignalStillWaits) {
  EXPECT_EXIT(signal_then_read(false), ::testing::ExitedWithCode(still_blocks), "");
}

/// The first signal, sent by this process itself (SI_USER, as kill(1) or timeout(1) send
/// it), then `second()`; exits ok when the process is still alive and interrupted.
template <class Second>
[[noreturn]] void two_signals(Second second) {
  route_interrupts_here(true);
  route_interrupts_here(false);
  ::kill(::getpid(), SIGTERM);  // delivered before kill returns (one thread, unblocked)
  if (!interrupted()) std::_Exit(not_interrupted);
  second();
  std::_Exit(ok);
}

// timeout(1) sends SIGTERM to the command and then to the command's process group, so
// the command gets it twice from one process at once: that is one request to stop, not
// a second one to abort (which lost the flush of every accepted record).
TEST(CliInterrupt, ARepeatFromTheSameProcessIsTheSameRequest) {
  EXPECT_EXIT(two_signals([] { ::kill(::getpid(), SIGTERM); }), ::testing::ExitedWithCode(ok), "");
}

// The negative space: a second signal that is not such a repeat — the terminal's Ctrl-C
// (sent by the kernel), raise(3), another process, another signal — still aborts at once.
TEST(CliInterrupt, ASecondSignalFromElsewhereAbortsAtOnce) {
  EXPECT_EXIT(two_signals([] { ::kill(::getpid(), SIGINT); }), ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EXIT(two_signals([] { std::raise(SIGINT); }), ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EXIT(two_signals([] {
                const pid_t parent = ::getpid();
                const pid_t other = ::fork();
                if (other == 0) {
                  ::kill(parent, SIGTERM);
                  std::_Exit(0);
                }
                int status = 0;
                while (::waitpid(other, &status, 0) < 0 && errno == EINTR) {
                }
              }),
              ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace prodsm::tools
