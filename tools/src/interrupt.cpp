// SPDX-License-Identifier: Apache-2.0
#include "interrupt.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace prodsm::tools {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
const char* volatile g_message = nullptr;
volatile std::size_t g_message_bytes = 0;
volatile int g_null_input_fd = -1;  // /dev/null, put over stdin by the handler (stop_stdin_on_interrupt)
extern "C" void on_interrupt(int) {
  const int saved_errno = errno;  // the interrupted code may be about to read errno
  g_interrupted = 1;
  // Every read of stdin from now on ends at once: a read already blocked returns EINTR
  // (no SA_RESTART), and one about to start (the signal came between the caller's
  // interrupted() check and its read) reads /dev/null's end of file instead of waiting
  // for input that may never come. dup2(2) is async-signal-safe.
  if (const int fd = g_null_input_fd; fd >= 0) (void)::dup2(fd, STDIN_FILENO);
  if (const char* m = g_message) {
    // async-signal-safe: write(2) of a string and length set before the handler ran
    const ssize_t ignored = ::write(STDERR_FILENO, m, g_message_bytes);
    (void)ignored;
  }
  errno = saved_errno;
}
}  // namespace

bool interrupted() noexcept {
  return g_interrupted != 0;
}

void set_interrupt_message(const char* message) noexcept {
  g_message_bytes = message != nullptr ? std::strlen(message) : 0;
  g_message = message;
}

bool stop_stdin_on_interrupt() noexcept {
  if (g_null_input_fd >= 0) return true;
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  g_null_input_fd = fd;
  return true;
}

void mask_interrupts(bool block) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  ::pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

void route_interrupts_here(bool block) {
  if (block) {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  }
  mask_interrupts(block);
}

}  // namespace prodsm::tools
