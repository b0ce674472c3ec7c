// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file buffer_pool.hpp
/// Internal: the Producer core's pool of batch buffers. A released batch gives its body
/// and record-end vectors back; the next batch takes them, so a producer in steady state
/// allocates nothing per record and nothing per batch (docs/performance.md). Bounded:
/// it keeps at most `limit` buffer sets, and no body larger than `max_keep_bytes`.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "prodsm/detail/batch.hpp"

namespace prodsm::detail {

/// A bounded LIFO of cleared BatchBuffers (the most recently released first: its memory
/// is the warmest). Not thread-safe; owned by one Producer.
class BufferPool {
 public:
  /// `limit`: buffer sets kept at most (the core uses max_in_flight + 2);
  /// `max_keep_bytes`: a body whose capacity exceeds this many bytes is freed, not kept
  /// (one oversized batch must not pin its memory for the producer's life).
  /// Reserves room for `limit` sets: may throw std::bad_alloc.
  BufferPool(std::size_t limit, std::uint64_t max_keep_bytes) : limit_{limit}, max_keep_bytes_{max_keep_bytes} {
    kept_.reserve(limit_);
  }

  /// A cleared buffer set: a kept one when there is one, else a new, empty one (which
  /// allocates on first use, not here). Never throws.
  BatchBuffers take() noexcept {
    if (kept_.empty()) return {};
    BatchBuffers b = std::move(kept_.back());
    kept_.pop_back();
    return b;
  }

  /// Clears `b` and keeps its memory when the pool has room and the body is not
  /// oversized; `b` is left empty (no capacity) either way. Never throws (the vector's
  /// capacity was reserved at construction).
  void give(BatchBuffers& b) noexcept {
    b.body.clear();
    b.record_ends.clear();
    if (kept_.size() < limit_ && b.body.capacity() <= max_keep_bytes_) kept_.push_back(std::move(b));
    b = {};
  }

  /// Buffer sets kept now (at most limit()).
  [[nodiscard]] std::size_t size() const noexcept { return kept_.size(); }
  /// Buffer sets kept at most.
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::vector<BatchBuffers> kept_;
  std::size_t limit_;
  std::uint64_t max_keep_bytes_;
};

}  // namespace prodsm::detail
