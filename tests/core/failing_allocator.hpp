// SPDX-License-Identifier: Apache-2.0
#pragma once
// Allocations that fail on demand (ngtcp2 style) for the core tests: the global
// operator new is replaced in failing_allocator.cpp; when armed, the next allocation on
// the arming thread throws std::bad_alloc.

namespace prodsm::test {

/// Makes the next allocation on this thread fail; disarmed again by the destructor.
class FailNextAllocation {
 public:
  FailNextAllocation();
  ~FailNextAllocation();
  FailNextAllocation(const FailNextAllocation&) = delete;
  FailNextAllocation& operator=(const FailNextAllocation&) = delete;
};

}  // namespace prodsm::test
