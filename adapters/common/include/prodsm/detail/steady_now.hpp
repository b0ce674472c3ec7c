// SPDX-License-Identifier: Apache-2.0
#pragma once
// The adapters' one clock read: the core and the protocol clients take time as a
// parameter (D1); the adapters read it here and pass it in.

#include <chrono>

#include "prodsm/time.hpp"

namespace prodsm::detail {

/// Now on the monotonic clock (std::chrono::steady_clock), as the core's Instant (ns).
inline Instant steady_now() {
  return std::chrono::steady_clock::now();
}

}  // namespace prodsm::detail
