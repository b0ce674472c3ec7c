// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads records from a text stream, one per line, for `prodsm produce`.
//  - bytes mode: a record is the line *with* its '\n' (the last line keeps whatever
//    ending it has), so the stream's bytes equal the input's bytes;
//  - JSON mode: a record is the line without its line ending ('\n' or "\r\n"), and must
//    be exactly one JSON value; a blank line is skipped and counted.
// Bounded: a line longer than max_record_bytes is an error naming the line (R3).
// Only a true end of input makes a last line without '\n' a record: when the input
// "ends" because a signal interrupted the read, an incomplete last line is dropped and
// counted (dropped_partial_bytes), never returned.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace prodsm::tools {

/// A bad line: its 1-based number and what is wrong with it.
struct LineError {
  std::uint64_t line = 0;
  std::string message;
};

/// What an end of the record reader's istream really was: an istream reports a failed
/// read as its end, which it is not (EISDIR, EIO: nothing after it would be produced).
/// See input_records (input.hpp).
struct InputEnd {
  enum class Kind : std::uint8_t {
    end,     ///< the end of the input (or an interrupt's end: see RecordReader)
    failed,  ///< the read failed: `error` says why
  };
  Kind kind = Kind::end;
  std::string error;  ///< failed: the cause, e.g. "Is a directory"
};

/// Validates one JSON value: simdjson for speed, nlohmann/json for the error message and
/// for the numbers a double cannot hold exactly (json_values.hpp: a JSON-mode server
/// would store another number).
class JsonLineValidator {
 public:
  JsonLineValidator();
  ~JsonLineValidator();
  JsonLineValidator(JsonLineValidator&&) noexcept;
  JsonLineValidator& operator=(JsonLineValidator&&) noexcept;
  /// nullopt when `text` is exactly one JSON value whose numbers are all exactly
  /// doubles; else a message with the position, or naming the number (double_loss).
  std::optional<std::string> check(std::string_view text);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class RecordReader {
 public:
  /// What one line is as a record.
  enum class Mode : std::uint8_t {
    bytes,  ///< the line's bytes with its '\n' (Durable Streams byte streams: the stream is the input)
    json,   ///< one JSON value per line, without its line end; blank lines skipped
    lines,  ///< the line's bytes without its '\n' (S2: one record per line, as `s2 append`),
            ///< a '\r' before it kept; `max_record_bytes` bounds the record, '\n' not counted
  };

  /// `interrupted`: true when the end of the input may not be its true end (a signal
  /// interrupted the read, which looks like the end to the stream); may be empty.
  /// `at_end`: asked when `in` reports its end, says what that end was (for stdin:
  /// input_records); empty = every end is the end. A failed read is a LineError naming the
  /// cause, never the end of the input: nothing read after it would be produced.
  RecordReader(std::istream& in, Mode mode, std::size_t max_record_bytes, std::function<bool()> interrupted = {},
               std::function<InputEnd()> at_end = {});

  /// The next record (valid until the next call), nullopt at end of input, or the error
  /// of the line that could not be read.
  tl::expected<std::optional<std::string_view>, LineError> next();

  /// 1-based number of the line last returned (or failed).
  [[nodiscard]] std::uint64_t line() const noexcept { return line_; }
  /// Blank lines skipped (JSON mode).
  [[nodiscard]] std::uint64_t skipped_blank_lines() const noexcept { return blank_; }
  /// Bytes consumed from the input so far.
  [[nodiscard]] std::uint64_t bytes_read() const noexcept { return bytes_; }
  /// Bytes of an incomplete last line dropped because the input was interrupted (0 when
  /// none was).
  [[nodiscard]] std::uint64_t dropped_partial_bytes() const noexcept { return dropped_partial_; }
  /// The line the true end of the input ended without a '\n' (1-based), returned as a
  /// record all the same; 0 when every line returned had one. A writer cut off mid-line
  /// looks the same: the caller says so (report_unterminated_last_line).
  [[nodiscard]] std::uint64_t unterminated_line() const noexcept { return unterminated_line_; }

 private:
  /// One physical line: its bytes (without '\n', inside buffer_), whether a '\n' ended
  /// it, or `end` when the input has no more bytes.
  struct Line {
    std::string_view text;
    bool had_newline = false;
    bool end = false;
  };
  tl::expected<Line, LineError> read_line();
  /// The end of a too-long-line message: the largest record max batch bytes allows.
  [[nodiscard]] std::string largest_record() const;

  std::istream& in_;
  Mode mode_;
  std::size_t max_record_bytes_;
  std::string buffer_;
  std::uint64_t line_ = 0;
  std::uint64_t blank_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t dropped_partial_ = 0;
  std::uint64_t unterminated_line_ = 0;
  std::function<bool()> interrupted_;
  std::function<InputEnd()> at_end_;
  JsonLineValidator validator_;
};

}  // namespace prodsm::tools
