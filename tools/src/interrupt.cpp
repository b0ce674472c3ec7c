// SPDX-License-Identifier: Apache-2.0
#include "interrupt.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cstring>

namespace prodsm::tools {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
const char* volatile g_message = nullptr;
volatile std::size_t g_message_bytes = 0;
extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  if (const char* m = g_message) {
    // async-signal-safe: write(2) of a string and length set before the handler ran
    const ssize_t ignored = ::write(STDERR_FILENO, m, g_message_bytes);
    (void)ignored;
  }
}
}  // namespace

bool interrupted() noexcept {
  return g_interrupted != 0;
}

void set_interrupt_message(const char* message) noexcept {
  g_message_bytes = message != nullptr ? std::strlen(message) : 0;
  g_message = message;
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
