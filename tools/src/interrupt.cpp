// SPDX-License-Identifier: Apache-2.0
#include "interrupt.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace prodsm::tools {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
const char* volatile g_message = nullptr;
volatile std::size_t g_message_bytes = 0;
volatile int g_null_input_fd = -1;  // /dev/null, put over stdin by the handler (stop_stdin_on_interrupt)
// The first signal, its sender when a process sent it (SI_USER), else 0, and when it
// came (CLOCK_MONOTONIC, whole ms): a repeat of it is the same request (kRepeatWindowMs).
volatile std::sig_atomic_t g_first_signal = 0;
volatile pid_t g_first_sender = 0;
volatile std::int64_t g_first_ms = 0;
// abort_on_second_interrupt: the second signal asks the command to abort (the flag and
// this line) instead of killing; the third kills.
const char* volatile g_abort_message = nullptr;
volatile std::size_t g_abort_message_bytes = 0;
volatile std::sig_atomic_t g_abort_requested = 0;

void write_stderr(const char* m, std::size_t bytes) noexcept {
  // async-signal-safe: write(2) of a string and length set before the handler ran
  const ssize_t ignored = ::write(STDERR_FILENO, m, bytes);
  (void)ignored;
}

/// The signals blocked together around the handler's state: SIGINT, SIGTERM and SIGHUP
/// (which the handler takes unless it was ignored at installation: nohup).
sigset_t interrupt_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

std::int64_t monotonic_ms() noexcept {
  timespec now{};
  (void)::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

/// The first signal: stop (the flag, stdin, the message). A later one kills at once —
/// the default action, re-raised — unless it is a repeat of the first: the same signal
/// sent by the same process within kRepeatWindowMs, as timeout(1) does (it signals the command and then
/// the command's process group). With abort_on_second_interrupt, the second (not a
/// repeat) asks for an abort instead (the flag, its message) and the third kills. Runs
/// with SIGINT, SIGTERM and SIGHUP blocked (sa_mask), so two signals never run it at once.
extern "C" void on_interrupt(int signal_number, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;  // the interrupted code may be about to read errno
  const pid_t sender = info != nullptr && info->si_code == SI_USER ? info->si_pid : 0;
  if (g_interrupted != 0) {
    const bool repeat = sender != 0 && sender == g_first_sender && signal_number == g_first_signal &&
                        monotonic_ms() - g_first_ms <= kRepeatWindowMs;
    if (!repeat && g_abort_message != nullptr && g_abort_requested == 0) {
      g_abort_requested = 1;
      write_stderr(g_abort_message, g_abort_message_bytes);
    } else if (!repeat) {
      struct sigaction fallback {};
      fallback.sa_handler = SIG_DFL;
      sigemptyset(&fallback.sa_mask);
      (void)::sigaction(signal_number, &fallback, nullptr);
      (void)::raise(signal_number);  // pending until the handler returns: then it kills
    }
    errno = saved_errno;
    return;
  }
  g_interrupted = 1;
  g_first_signal = signal_number;
  g_first_sender = sender;
  g_first_ms = monotonic_ms();
  // Every read of stdin from now on ends at once: a read already blocked returns EINTR
  // (no SA_RESTART), and one about to start (the signal came between the caller's
  // interrupted() check and its read) reads /dev/null's end of file instead of waiting
  // for input that may never come. dup2(2) is async-signal-safe.
  if (const int fd = g_null_input_fd; fd >= 0) (void)::dup2(fd, STDIN_FILENO);
  if (const char* m = g_message) write_stderr(m, g_message_bytes);
  errno = saved_errno;
}
}  // namespace

bool interrupted() noexcept {
  return g_interrupted != 0;
}

bool abort_requested() noexcept {
  return g_abort_requested != 0;
}

void announce_input_read(bool nothing_left_out) noexcept {
  set_interrupt_message(
      nothing_left_out
          ? "prodsm produce: interrupted after the whole input was read: nothing is left out; waiting until every "
            "record is acknowledged (at most --delivery-timeout-ms); interrupt again to abort (records not yet "
            "acknowledged then fail, and the summary says how many were acknowledged)\n"
          : "prodsm produce: interrupted after the input had already stopped; waiting until every record already "
            "accepted is acknowledged (at most --delivery-timeout-ms); interrupt again to abort (records not yet "
            "acknowledged then fail, and the summary says how many were acknowledged)\n");
}

void set_interrupt_message(const char* message) noexcept {
  // With the signals blocked on this thread (the one they are routed to), so the handler
  // never sees a new pointer with an old length or the reverse.
  const sigset_t set = interrupt_signals();
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &set, &old);
  g_message = nullptr;
  g_message_bytes = message != nullptr ? std::strlen(message) : 0;
  g_message = message;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void abort_on_second_interrupt(const char* message) noexcept {
  const sigset_t set = interrupt_signals();
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &set, &old);  // as in set_interrupt_message
  g_abort_message = nullptr;
  g_abort_message_bytes = message != nullptr ? std::strlen(message) : 0;
  g_abort_message = message;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

bool stop_stdin_on_interrupt() noexcept {
  if (g_null_input_fd >= 0) return true;
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  g_null_input_fd = fd;
  return true;
}

void mask_interrupts(bool block) {
  const sigset_t set = interrupt_signals();
  ::pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

void route_interrupts_here(bool block) {
  if (block) {
    struct sigaction action {};
    action.sa_sigaction = on_interrupt;
    action.sa_flags = SA_SIGINFO;  // no SA_RESTART: a blocked read returns EINTR
    action.sa_mask = interrupt_signals();
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    // A hangup (the terminal or the ssh session closed) is an interrupt too, as a JVM's
    // shutdown hooks (Kafka's console producer) take it: stop, flush what was accepted.
    // Left ignored when it was ignored (nohup).
    struct sigaction hangup {};
    if (::sigaction(SIGHUP, nullptr, &hangup) == 0 && hangup.sa_handler != SIG_IGN) {
      ::sigaction(SIGHUP, &action, nullptr);
    }
  }
  mask_interrupts(block);
}

}  // namespace prodsm::tools
