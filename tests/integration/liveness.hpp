// SPDX-License-Identifier: Apache-2.0
#pragma once
// The integration tests' one liveness bound.

#include <chrono>
#include <thread>

#include "prodsm/time.hpp"

namespace prodsm::test {

/// How long a test waits for an outcome before it calls the run hung: a liveness
/// bound, not a timing assertion (the outcomes come in milliseconds).
inline constexpr Duration kWait = std::chrono::seconds{60};

/// Polls `done` every millisecond until it holds, for at most `bound` (a liveness bound,
/// not a timing assertion); true when it held.
template <class F>
bool eventually(F done, Duration bound = kWait) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

}  // namespace prodsm::test
