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
#include <iostream>

#include "interrupt.hpp"

namespace prodsm::tools {

tl::expected<void, std::string> open_input(const std::string& path, Input& input) {
  input.stream = &std::cin;
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

RecordReader input_records(const Input& input, RecordReader::Mode mode, std::size_t max_record_bytes) {
  const bool is_stdin = input.stream == &std::cin;
  return {*input.stream, mode, max_record_bytes, [] { return interrupted(); },
          is_stdin ? std::function<InputEnd()>(stdin_at_end) : nullptr};
}

InputEnd stdin_at_end() {
  const int err = errno;
  if (std::ferror(stdin) == 0 || interrupted()) return {};  // the end, or the interrupt's
  std::clearerr(stdin);  // the error only: stdio's end-of-file is sticky and was not set
  if (err == EINTR) return {InputEnd::Kind::again, {}};
  if (err == EAGAIN || err == EWOULDBLOCK) {
    pollfd readable{STDIN_FILENO, POLLIN, 0};
    (void)::poll(&readable, 1, -1);  // data, the writer gone, or a signal: read again
    return {InputEnd::Kind::again, {}};
  }
  return {InputEnd::Kind::failed, err != 0 ? std::strerror(err) : std::string("read error")};
}

void report_dropped_partial_line(std::uint64_t bytes) {
  if (bytes == 0) return;
  std::fprintf(stderr,
               "prodsm produce: the interrupted input ended inside a line: its %llu bytes read so far were dropped, "
               "not sent (only the true end of the input makes a line without a newline a record)\n",
               static_cast<unsigned long long>(bytes));
}

}  // namespace prodsm::tools
