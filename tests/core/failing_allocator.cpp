// SPDX-License-Identifier: Apache-2.0
// Replaces the plain global operator new/delete (malloc underneath); the library's other
// forms (arrays, aligned, sized) forward to or pair with these.
#include "failing_allocator.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_fail_next = false;
}  // namespace

namespace prodsm::test {
FailNextAllocation::FailNextAllocation() {
  g_fail_next = true;
}
FailNextAllocation::~FailNextAllocation() {
  g_fail_next = false;
}
}  // namespace prodsm::test

void* operator new(std::size_t size) {
  if (g_fail_next) {
    g_fail_next = false;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
