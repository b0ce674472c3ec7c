// SPDX-License-Identifier: Apache-2.0
#pragma once
// The I/O thread of a CLI command (`produce`, `read`, `bench`): one asio::io_context run
// on its own thread while the main thread keeps SIGINT/SIGTERM (interrupt.hpp).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <thread>

#include "interrupt.hpp"

namespace prodsm::tools {

/// Runs `io` on a thread of its own from construction until join() or destruction. The
/// constructor installs the interrupt handler and routes the signals to the constructing
/// thread (route_interrupts_here): call set_interrupt_message and stop_stdin_on_interrupt
/// first. Declare it before anything that posts to `io` (a producer, a session), so those
/// are destroyed first and their last handlers still run.
struct IoRunner {
  ::asio::io_context io;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard{::asio::make_work_guard(io)};
  std::thread thread;

  IoRunner() {
    route_interrupts_here(true);  // the I/O thread inherits the blocked mask
    thread = std::thread([this] { io.run(); });
    route_interrupts_here(false);
  }
  /// Lets `io` run out of work and waits for the thread (idempotent).
  void join() {
    guard.reset();
    if (thread.joinable()) thread.join();
  }
  ~IoRunner() { join(); }
  IoRunner(const IoRunner&) = delete;
  IoRunner& operator=(const IoRunner&) = delete;
  IoRunner(IoRunner&&) = delete;
  IoRunner& operator=(IoRunner&&) = delete;
};

}  // namespace prodsm::tools
