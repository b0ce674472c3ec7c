// SPDX-License-Identifier: Apache-2.0
#pragma once
// An io_context running on its own thread for the duration of a test (Asio tests).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <thread>

namespace prodsm::test {

/// Runs `io` on a thread from construction until destruction (which waits for it).
struct IoThread {
  ::asio::io_context io;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard{::asio::make_work_guard(io)};
  std::thread thread{[this] { io.run(); }};
  ~IoThread() {
    guard.reset();
    thread.join();
  }
};

}  // namespace prodsm::test
