// SPDX-License-Identifier: Apache-2.0
#pragma once
// The input of `prodsm produce` (Durable Streams and S2 alike): `-i FILE` or stdin, opened
// so that an interrupt stops reading at once whatever the input is.

#include <cstdint>
#include <fstream>
#include <istream>
#include <string>

#include <tl/expected.hpp>

#include "record_reader.hpp"

namespace prodsm::tools {

/// An opened input. `stream` is `file` for a regular file, else std::cin.
struct Input {
  std::ifstream file;              ///< a regular file's stream (unused otherwise)
  std::istream* stream = nullptr;  ///< what to read records from
  std::uint64_t total_bytes = 0;   ///< a regular file's size (bytes), else 0 (unknown)
  /// True when the input can be read again from the start (a regular file: --verify
  /// rereads it instead of keeping every record).
  [[nodiscard]] bool rereadable() const noexcept { return file.is_open(); }
};

/// Opens `path` ("-" = stdin). A regular file is read through an ifstream (it has a size
/// and may be read again). A FIFO, pipe or device becomes stdin (dup2): stdio ends a read
/// that a signal interrupts (no SA_RESTART), so Ctrl-C stops the input at once, where an
/// ifstream would retry the read and wait for the next line. Error: the message naming
/// the path and the cause ("cannot read input 'x': is a directory").
tl::expected<void, std::string> open_input(const std::string& path, Input& input);

/// The records of an opened input: a RecordReader over input.stream whose input ends
/// early at an interrupt (interrupt.hpp: the line cut short is dropped, never returned)
/// and, for stdin, whose every end is checked by stdin_at_end (a failed read is not the
/// end of the input).
RecordReader input_records(const Input& input, RecordReader::Mode mode, std::size_t max_record_bytes);

/// RecordReader's `at_end` for stdin (std::cin reads through stdio, where a failed read
/// looks like the end of the input): the true end (stdio's end-of-file), or the end an
/// interrupt made (interrupt.hpp), is the end; a non-blocking input with no data yet
/// (EAGAIN) waits in poll(2) until it has some, or until a signal, then reads on; a
/// signal that is not an interrupt (EINTR) reads on; any other error (EISDIR, EIO) is
/// `failed` with its strerror. Call right after the read (it reads errno).
InputEnd stdin_at_end();

/// Tells stderr that an interrupted input ended inside a line whose `bytes` (> 0) read
/// so far were dropped, not sent (RecordReader::dropped_partial_bytes); nothing for 0.
void report_dropped_partial_line(std::uint64_t bytes);

}  // namespace prodsm::tools
