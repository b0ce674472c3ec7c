// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file batch_ring.hpp
/// Internal: the Producer core's batches in seal order, a fixed ring of
/// max_unacked_batches slots (R3). The oldest batch is index 0; a batch is added after
/// the newest and removed only from the oldest end (P3: completions in order), so a
/// batch never moves and a pointer to it stays valid while it is in the ring.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prodsm::detail {

/// A ring of `capacity` default-constructed `Slot`s; `size()` of them, from index 0
/// (the oldest) on, are in use. Slots keep their contents when they leave the ring (the
/// caller resets them); slot(i) for size() <= i < capacity() names the free slots in the
/// order push_back will use them. Not thread-safe.
template <class Slot>
class BatchRing {
 public:
  /// `capacity` slots (max_unacked_batches, at least 1: B3 validation). May throw
  /// std::bad_alloc.
  explicit BatchRing(std::uint32_t capacity) : slots_(capacity) {}

  /// Slots in all (R3's max_unacked_batches).
  [[nodiscard]] std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(slots_.size()); }
  /// Slots in use.
  [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
  /// No slot in use.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Every slot in use (R3: max_unacked_batches reached).
  [[nodiscard]] bool full() const noexcept { return size_ == slots_.size(); }
  /// Physical index of index 0 (for the invariant checks).
  [[nodiscard]] std::uint32_t head() const noexcept { return head_; }

  /// The slot `index` places after the oldest; precondition index < capacity().
  Slot& slot(std::uint32_t index) noexcept { return slots_[physical(index)]; }
  /// slot(index), read-only.
  const Slot& slot(std::uint32_t index) const noexcept { return slots_[physical(index)]; }

  /// Takes the next free slot as the newest; precondition !full(). Returns it as it was
  /// left (the caller resets it).
  Slot& push_back() noexcept {
    Slot& s = slots_[physical(size_)];
    ++size_;
    return s;
  }

  /// Gives the oldest slot back; precondition !empty(). Its contents stay (the caller
  /// has reset them).
  void pop_front() noexcept {
    head_ = head_ + 1 == slots_.size() ? 0 : head_ + 1;
    --size_;
  }

  /// Forgets every batch at once (D4: a poisoned producer abandons its bookkeeping).
  void abandon() noexcept { size_ = 0; }

 private:
  [[nodiscard]] std::size_t physical(std::uint32_t index) const noexcept {
    std::size_t p = static_cast<std::size_t>(head_) + index;
    if (p >= slots_.size()) p -= slots_.size();
    return p;
  }

  std::vector<Slot> slots_;
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
};

}  // namespace prodsm::detail
