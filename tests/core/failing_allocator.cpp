// SPDX-License-Identifier: Apache-2.0
// Replaces every global allocation function (malloc/aligned_alloc underneath, free for
// every delete) so that allocation and deallocation always pair, also for libraries that
// use the nothrow or aligned forms (simdjson) and under AddressSanitizer.
#include "failing_allocator.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_fail_next = false;

void* allocate(std::size_t size) {
  if (g_fail_next) {
    g_fail_next = false;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* allocate_aligned(std::size_t size, std::align_val_t align) {
  if (g_fail_next) {
    g_fail_next = false;
    throw std::bad_alloc();
  }
  const auto a = static_cast<std::size_t>(align);
  size = size == 0 ? a : (size + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, size)) return p;
  throw std::bad_alloc();
}
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
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void* operator new(std::size_t size, std::align_val_t a) {
  return allocate_aligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return allocate_aligned(size, a);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(size, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(size, a);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
