// SPDX-License-Identifier: Apache-2.0
#pragma once
// The integration tests' one liveness bound.

#include <chrono>

#include "prodsm/time.hpp"

namespace prodsm::test {

/// How long a test waits for an outcome before it calls the run hung: a liveness
/// bound, not a timing assertion (the outcomes come in milliseconds).
inline constexpr Duration kWait = std::chrono::seconds{60};

}  // namespace prodsm::test
