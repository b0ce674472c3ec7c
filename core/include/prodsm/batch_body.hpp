// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file batch_body.hpp
/// prodsm::BatchBody: the bytes of one batch as the core frames them. A policy's
/// frame_record and frame_seal append to it (B1, S2: framed once, resent byte-identical);
/// a SendBatch's `body` is a view of it.

#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>

namespace prodsm {

/// A growable buffer of bytes with an inline append. A batch's buffers are recycled
/// through the core's pool, so in steady state every append finds the room already
/// there and is one capacity check and one copy, inlined into the submit path; growing
/// is out of line. (A std::vector's insert keeps its reallocation inline, which made
/// g++ leave the whole append out of line: docs/performance.md.) Contents are bytes;
/// sizes and capacities are in bytes. Moving leaves the source empty with no capacity.
/// Errors: growing throws std::bad_alloc when memory runs out and std::length_error
/// past max_size(); the core turns either into an `internal` failure (D4).
class BatchBody {
 public:
  BatchBody() noexcept = default;
  BatchBody(BatchBody&& other) noexcept
      : data_{std::move(other.data_)}, size_{other.size_}, capacity_{other.capacity_} {
    other.size_ = 0;
    other.capacity_ = 0;
  }
  BatchBody& operator=(BatchBody&& other) noexcept {
    if (this == &other) return *this;
    data_ = std::move(other.data_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = 0;
    return *this;
  }
  BatchBody(const BatchBody&) = delete;
  BatchBody& operator=(const BatchBody&) = delete;
  ~BatchBody() = default;

  /// Bytes held.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Bytes that fit before the next growth.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// True when no byte is held.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// The first byte (nullptr while the body has no memory: new, or moved from).
  [[nodiscard]] const std::byte* data() const noexcept { return data_.get(); }
  /// The first byte held: with end(), a contiguous range (a std::span can view it).
  [[nodiscard]] const std::byte* begin() const noexcept { return data_.get(); }
  /// One past the last byte held.
  [[nodiscard]] const std::byte* end() const noexcept { return data_.get() + size_; }
  /// The largest size a body may reach, in bytes.
  [[nodiscard]] static constexpr std::size_t max_size() noexcept {
    return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  }

  /// Drops the bytes, keeps the capacity.
  void clear() noexcept { size_ = 0; }
  /// Makes room for at least `bytes` bytes in all. Throws as growing does.
  void reserve(std::size_t bytes) {
    if (bytes > capacity_) reallocate(bytes);
  }
  /// Appends one byte.
  void push_back(std::byte b) {
    if (size_ == capacity_) [[unlikely]]
      grow(1);
    data_[size_++] = b;
  }
  /// Appends `bytes` (which must not point into this body).
  void append(std::span<const std::byte> bytes) {
    const std::size_t n = bytes.size();
    if (n > capacity_ - size_) [[unlikely]]
      grow(n);
    if (n != 0) std::memcpy(data_.get() + size_, bytes.data(), n);
    size_ += n;
  }

 private:
  /// Room for `more` bytes beyond size(): at least doubles, so appends stay amortised O(1).
  [[gnu::noinline, gnu::cold]] void grow(std::size_t more) {
    if (more > max_size() - size_) throw std::length_error("prodsm::BatchBody: body larger than max_size()");
    const std::size_t need = size_ + more;
    std::size_t next = capacity_ > max_size() / 2 ? max_size() : capacity_ * 2;
    if (next < need) next = need;
    if (next < kMinCapacityBytes) next = kMinCapacityBytes;
    reallocate(next);
  }
  void reallocate(std::size_t bytes) {
    auto next = std::make_unique_for_overwrite<std::byte[]>(bytes);
    if (size_ != 0) std::memcpy(next.get(), data_.get(), size_);
    data_ = std::move(next);
    capacity_ = bytes;
  }

  static constexpr std::size_t kMinCapacityBytes = 256;
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace prodsm
