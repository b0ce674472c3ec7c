// SPDX-License-Identifier: Apache-2.0
#pragma once
// The input of `prodsm produce` (Durable Streams and S2 alike): `-i FILE` or stdin, opened
// so that an interrupt stops reading at once whatever the input is.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <streambuf>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "interrupt.hpp"
#include "record_reader.hpp"

namespace prodsm::tools {

/// What `prodsm produce` reads stdin through, in place of std::cin: a read-only
/// streambuf over file descriptor 0 that waits for data in poll(2), at most
/// kStdinPollIntervalMs at a time, and asks `stop` (the interrupt flag) before each wait,
/// so an interrupt ends a wait for input within that interval however its signal was
/// delivered (a handler a sanitizer defers, or one that ran just before a blocking read,
/// would otherwise leave the read waiting for input that may never come: a FIFO whose
/// writer stays open). A read that fails with EINTR, EAGAIN or EWOULDBLOCK (a
/// non-blocking input with no data yet) waits again; any other failure (EISDIR, EIO,
/// EBADF) ends the stream with error() set, which is then no end of the input (see
/// input_records). Reads up to kStdinBufferBytes at a time. Not copyable.
class InterruptibleStdin final : public std::streambuf {
 public:
  /// How long one poll(2) waits before `stop` is asked again: 100 ms.
  static constexpr int kStdinPollIntervalMs = 100;
  /// The most one read(2) takes: 64 KiB (a Linux pipe's default capacity).
  static constexpr std::size_t kStdinBufferBytes = 64 * 1024;

  /// `stop`: asked before each wait; true ends the stream (eof) with no error.
  explicit InterruptibleStdin(std::function<bool()> stop);
  InterruptibleStdin(const InterruptibleStdin&) = delete;
  InterruptibleStdin& operator=(const InterruptibleStdin&) = delete;

  /// The errno of the read or poll that failed, or 0 when none did (the end, if any,
  /// was the input's end or `stop`'s).
  [[nodiscard]] int error() const noexcept { return error_; }

 protected:
  int_type underflow() override;

 private:
  std::function<bool()> stop_;
  std::vector<char> buffer_;
  int error_ = 0;
};

/// An opened input. `stream` is `file` for a regular file, else `stdin_stream` (a FIFO,
/// pipe, terminal or device given with -i was put on stdin by open_input).
struct Input {
  std::ifstream file;                                             ///< a regular file's stream (unused otherwise)
  InterruptibleStdin stdin_buffer{[] { return interrupted(); }};  ///< stdin, ended by an interrupt
  std::istream stdin_stream{&stdin_buffer};                       ///< reads stdin_buffer
  std::istream* stream = nullptr;                                 ///< what to read records from
  std::uint64_t total_bytes = 0;                                  ///< a regular file's size (bytes), else 0 (unknown)
  /// True when the input can be read again from the start (a regular file: --verify
  /// rereads it instead of keeping every record).
  [[nodiscard]] bool rereadable() const noexcept { return file.is_open(); }
};

/// Opens `path` ("-" = stdin). A regular file is read through an ifstream (it has a size
/// and may be read again). A FIFO, pipe or device becomes stdin (dup2) and is read through
/// InterruptibleStdin, so Ctrl-C stops the input at once, where an ifstream would retry
/// the read and wait for the next line. Error: the message naming the path and the cause
/// ("cannot read input 'x': is a directory").
tl::expected<void, std::string> open_input(const std::string& path, Input& input);

/// The records of an opened input: a RecordReader over input.stream whose input ends
/// early at an interrupt (interrupt.hpp: the line cut short is dropped, never returned)
/// and, for stdin, whose end is a failed read (InputEnd::failed with its strerror) when
/// InterruptibleStdin::error() says one failed. `input` must outlive the reader.
RecordReader input_records(const Input& input, RecordReader::Mode mode, std::size_t max_record_bytes);

/// Tells stderr that an interrupted input ended inside a line whose `bytes` (> 0) read
/// so far were dropped, not sent (RecordReader::dropped_partial_bytes); nothing for 0.
void report_dropped_partial_line(std::uint64_t bytes);

/// Tells stderr, as `command` ("prodsm produce"), that the input's last line `line`
/// (RecordReader::unterminated_line, > 0) had no newline and was produced as a record:
/// a writer cut off mid-line looks the same. `bytes_mode`: a --resume with the whole input
/// completes that line (StreamPrefix::held_part). Nothing for 0.
void report_unterminated_last_line(const char* command, std::uint64_t line, bool bytes_mode);

}  // namespace prodsm::tools
