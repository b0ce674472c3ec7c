// SPDX-License-Identifier: Apache-2.0
#pragma once
// Counts every global operator new in the process (the benchmark replaces them), so a
// benchmark can report heap allocations per record.
#include <atomic>
#include <cstdint>

namespace prodsm::bench {
/// Number of global operator new calls since program start.
std::uint64_t allocation_count() noexcept;
}  // namespace prodsm::bench
