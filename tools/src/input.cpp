// SPDX-License-Identifier: Apache-2.0
// Opening the input of `prodsm produce` (see input.hpp).
#include "input.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "interrupt.hpp"

namespace prodsm::tools {

tl::expected<void, std::string> open_input(const std::string& path, Input& input) {
  input.stream = &input.stdin_stream;
  input.total_bytes = 0;
  if (path == "-") {
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode)) {
      return tl::unexpected(std::string("cannot read input '-': stdin is a directory"));
    }
    return {};
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || std::filesystem::is_directory(status)) {
    return tl::unexpected("cannot read input '" + path + "': " + (ec ? ec.message() : std::string("is a directory")));
  }
  if (std::filesystem::is_regular_file(status)) {
    input.file.open(path, std::ios::binary);
    if (!input.file) return tl::unexpected("cannot open input '" + path + "'");
    input.total_bytes = static_cast<std::uint64_t>(std::filesystem::file_size(path, ec));
    if (ec) input.total_bytes = 0;
    input.stream = &input.file;
    return {};
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::dup2(fd, STDIN_FILENO) < 0) {
    std::string why = "cannot open input '" + path + "': " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return tl::unexpected(std::move(why));
  }
  ::close(fd);
  return {};
}

InterruptibleStdin::InterruptibleStdin(std::function<bool()> stop)
    : stop_{std::move(stop)}, buffer_(kStdinBufferBytes) {}

InterruptibleStdin::int_type InterruptibleStdin::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  while (error_ == 0) {
    if (stop_ && stop_()) return traits_type::eof();
    pollfd readable{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&readable, 1, kStdinPollIntervalMs);
    if (ready < 0 && errno != EINTR) error_ = errno;
    if (ready <= 0) continue;  // no data yet, or a signal: ask stop_ again
    // Readable, the writer gone, or an error (POLLERR, POLLNVAL): read(2) says which.
    const ssize_t got = ::read(STDIN_FILENO, buffer_.data(), buffer_.size());
    if (got > 0) {
      setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
      return traits_type::to_int_type(*gptr());
    }
    if (got == 0) return traits_type::eof();  // the input's end
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) error_ = errno;
  }
  return traits_type::eof();
}

RecordReader input_records(const Input& input, RecordReader::Mode mode, std::size_t max_record_bytes) {
  std::function<InputEnd()> at_end;
  if (input.stream == &input.stdin_stream) {
    at_end = [&buffer = input.stdin_buffer]() -> InputEnd {
      if (buffer.error() == 0) return {};
      std::string why = std::strerror(buffer.error());
      if (buffer.error() == EBADF) {  // open, but not for reading: nohup does that to a terminal's stdin
        why +=
            " (stdin is not open for reading, as nohup leaves a terminal's stdin: give the input with -i FILE "
            "or < FILE)";
      }
      return {InputEnd::Kind::failed, std::move(why)};
    };
  }
  return {*input.stream, mode, max_record_bytes, [] { return interrupted(); }, std::move(at_end)};
}

void report_dropped_partial_line(std::uint64_t bytes) {
  if (bytes == 0) return;
  std::fprintf(stderr,
               "prodsm produce: the interrupted input ended inside a line: its %llu bytes read so far were dropped, "
               "not sent (only the true end of the input makes a line without a newline a record)\n",
               static_cast<unsigned long long>(bytes));
}

void report_unterminated_last_line(const char* command, std::uint64_t line, bool bytes_mode) {
  if (line == 0) return;
  std::fprintf(stderr,
               "%s: the input's last line (line %llu) had no newline and was produced as a record; if whatever "
               "wrote the input was cut off, that record is part of a line%s\n",
               command, static_cast<unsigned long long>(line),
               bytes_mode ? " (a --resume with the whole input appends the rest of it)" : "");
}

}  // namespace prodsm::tools
