// SPDX-License-Identifier: Apache-2.0
#pragma once
// An io_context running on its own thread for the duration of a test (Asio tests).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <asio/post.hpp>

#include <future>
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

/// Lets handlers that hop between two running contexts finish while both still exist:
/// `rounds` times, a no-op posted to each is waited for. A producer whose callbacks run on
/// `b` may drop its last reference there, and its session then posts its close to `a`;
/// without this, destroying `a` first would let that post reach a destroyed context.
inline void quiesce(IoThread& a, IoThread& b, int rounds = 4) {
  for (int i = 0; i < rounds; ++i) {
    for (IoThread* t : {&a, &b}) {
      std::promise<void> done;
      ::asio::post(t->io, [&done] { done.set_value(); });
      done.get_future().wait();
    }
  }
}

}  // namespace prodsm::test
