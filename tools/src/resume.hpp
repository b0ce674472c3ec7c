// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm produce --resume`: an exact, record-level resume whatever the batch boundaries
// of the earlier runs. The stream's contents must be a prefix of the input, record for
// record; those records are skipped and the rest is produced (under a fresh epoch). The
// Durable Streams server deduplicates per batch, not per record, so a resume that reused
// a producer id and epoch would lose or double records whenever the batches differ.
//
// Memory stays bounded whatever the stream's size: the stream is read (streamed) into an
// unlinked temporary file — bytes as they are, JSON values minified one per line — and
// matched against the input from there, one record at a time.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace prodsm::tools {

/// The stream's records, spooled, then matched against the input's one by one.
class StreamPrefix {
 public:
  /// An empty prefix spooling to a new unlinked file in $TMPDIR (default /tmp). `json`:
  /// the stream's data are JSON values. Error: the file cannot be created (naming why).
  static tl::expected<StreamPrefix, std::string> create(bool json);

  /// Bytes streams: the next bytes the stream's read handed on. False once the spool
  /// failed (error() says why): stop the read.
  bool add_bytes(std::string_view data);
  /// JSON streams: the next value the read handed on (its text, validated by the read).
  /// False once the spool failed or the value does not parse (nesting over 1024 levels).
  bool add_value(std::string_view value);
  /// Why spooling stopped (a write failed, a value did not parse), or nullopt.
  [[nodiscard]] const std::optional<std::string>& error() const noexcept { return error_; }
  /// Ends spooling (the read completed) and starts matching. Error: as error().
  tl::expected<void, std::string> finish_spool();

  /// The next input record (line `line`, 1-based, for messages): true when the stream
  /// holds it (skip it); false once the stream's records are used up (send it, and
  /// every later one). Bytes mode: false too when the stream ends inside it, holding its
  /// first held_part() bytes (a run whose input was cut off mid-line): send the rest of
  /// it, and the stream is the input's bytes again. Error: it differs from the stream's
  /// next record — the stream does not hold a prefix of this input; or the spool cannot
  /// be read back.
  tl::expected<bool, std::string> holds(std::string_view record, std::uint64_t line);
  /// Bytes mode: how many leading bytes of the record holds() last answered false for
  /// the stream held already (the stream ended inside it); 0 otherwise.
  [[nodiscard]] std::uint64_t held_part() const noexcept { return held_part_; }
  /// At the end of the input: why the resume is not exact (the stream holds more than
  /// the input), or nullopt.
  [[nodiscard]] std::optional<std::string> at_end() const;
  /// Input records the stream already held.
  [[nodiscard]] std::uint64_t skipped() const noexcept { return skipped_; }
  /// The stream's data spooled (bytes; JSON: values minified, one per line).
  [[nodiscard]] std::uint64_t spooled_bytes() const noexcept { return spooled_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  StreamPrefix(std::unique_ptr<std::FILE, FileCloser> spool, bool json) : spool_{std::move(spool)}, json_{json} {}
  bool write(std::string_view data);
  bool fail(std::string why);

  std::unique_ptr<std::FILE, FileCloser> spool_;
  bool json_;
  std::optional<std::string> error_;
  std::uint64_t spooled_ = 0;   ///< bytes written to the spool
  std::uint64_t values_ = 0;    ///< JSON: values spooled
  std::uint64_t position_ = 0;  ///< bytes consumed (bytes mode) or values matched (JSON mode)
  std::uint64_t skipped_ = 0;
  std::uint64_t held_part_ = 0;
  std::string buffer_;  ///< the spool's next record, read back
  bool done_ = false;
};

}  // namespace prodsm::tools
