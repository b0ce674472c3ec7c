// SPDX-License-Identifier: Apache-2.0
#include "verify.hpp"

#include <algorithm>

#include "json_values.hpp"

namespace prodsm::tools {

bool StreamVerifier::fail(std::string why) {
  if (!problem_) problem_ = std::move(why);
  return false;
}

/// Takes the next expected record into current_; false after the last one.
bool StreamVerifier::pull() {
  auto record = next_();
  if (!record) return false;
  current_ = std::move(*record);
  position_ = 0;
  have_current_ = true;
  return true;
}

bool StreamVerifier::add(const ds::ReadChunk& chunk) {
  if (problem_) return false;
  if (chunk.next_offset) return true;
  if (json_) {
    if (!pull()) return fail("the stream holds more JSON values than the " + std::to_string(matched_) + " produced");
    // Compared as the server holds values: numbers as doubles, members in any order.
    const auto got = canonical_json(chunk.data);
    const auto want = canonical_json(current_);
    have_current_ = false;
    if (!got || !want || *got != *want) {
      return fail("JSON value " + std::to_string(matched_) + " differs from the record produced");
    }
    ++matched_;
    return true;
  }
  std::string_view data = chunk.data;
  while (!data.empty()) {
    if (!have_current_ || position_ == current_.size()) {
      if (have_current_) ++matched_;
      have_current_ = false;
      if (!pull()) {
        return fail("the stream holds more bytes than the " + std::to_string(stream_bytes_) +
                    " bytes produced (after record " + std::to_string(matched_) + ")");
      }
      continue;
    }
    const std::size_t n = std::min(data.size(), current_.size() - position_);
    const auto a = data.substr(0, n);
    const auto b = std::string_view(current_).substr(position_, n);
    if (a != b) {
      const auto at = static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
      return fail("the contents differ at byte " + std::to_string(stream_bytes_ + at) + " (in record " +
                  std::to_string(matched_) + ")");
    }
    position_ += n;
    stream_bytes_ += n;
    data.remove_prefix(n);
  }
  return true;
}

std::optional<std::string> StreamVerifier::finish() {
  if (problem_) return problem_;
  if (have_current_ && position_ < current_.size()) {
    return "the stream ends after " + std::to_string(stream_bytes_) + " bytes, inside record " +
           std::to_string(matched_);
  }
  if (have_current_) ++matched_;
  have_current_ = false;
  std::uint64_t missing = 0;
  while (pull()) {
    if (!json_ && current_.empty()) continue;
    ++missing;
  }
  if (missing > 0) {
    return "the stream ends after " + std::to_string(matched_) + " records; " + std::to_string(missing) +
           " more were produced";
  }
  return std::nullopt;
}

}  // namespace prodsm::tools
