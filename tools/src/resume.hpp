// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm produce --resume`: an exact, record-level resume whatever the batch boundaries
// of the earlier runs. The stream's contents must be a prefix of the input, record for
// record; those records are skipped and the rest is produced (under a fresh epoch). The
// Durable Streams server deduplicates per batch, not per record, so a resume that reused
// a producer id and epoch would lose or double records whenever the batches differ.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace prodsm::tools {

/// The stream's records, matched against the input's, one by one.
class StreamPrefix {
 public:
  /// `body`: everything the stream holds, as a catch-up read returns it (bytes mode: the
  /// bytes; JSON mode: one JSON array text). Error: a JSON body that is not an array of
  /// at most 1024 levels of nesting.
  static tl::expected<StreamPrefix, std::string> create(std::string body, bool json);

  /// The next input record (line `line`, 1-based, for messages): true when the stream
  /// holds it (skip it); false once the stream's records are used up (send it, and
  /// every later one). Error: it differs from the stream's next record, or (bytes mode)
  /// the stream ends inside it — the stream does not hold a prefix of this input.
  tl::expected<bool, std::string> holds(std::string_view record, std::uint64_t line);
  /// At the end of the input: why the resume is not exact (the stream holds more than
  /// the input), or nullopt.
  [[nodiscard]] std::optional<std::string> at_end() const;
  /// Input records the stream already held.
  [[nodiscard]] std::uint64_t skipped() const noexcept { return skipped_; }

 private:
  StreamPrefix(std::string body, std::vector<std::string> elements, bool json);
  std::string body_;                   ///< bytes mode
  std::vector<std::string> elements_;  ///< JSON mode: each element, minified
  bool json_;
  std::size_t position_ = 0;  ///< bytes consumed (bytes mode) or elements matched (JSON mode)
  std::uint64_t skipped_ = 0;
  bool done_ = false;
};

}  // namespace prodsm::tools
