// SPDX-License-Identifier: Apache-2.0
#pragma once
// The adapter executable as a child process: posix_spawn with pipes on its stdin and
// stdout (stderr is inherited, so its logs show in the test output).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace prodsm::test {

class AdapterProcess {
 public:
  /// Spawns `executable args...`. On failure error() says why.
  AdapterProcess(const std::string& executable, const std::vector<std::string>& args);
  ~AdapterProcess();
  AdapterProcess(const AdapterProcess&) = delete;
  AdapterProcess& operator=(const AdapterProcess&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }

  /// Writes `line` and a newline to the adapter's stdin. False when it cannot.
  bool send_line(const std::string& line);
  /// The next line of the adapter's stdout (without the newline), or nullopt at end of
  /// output, on a read error, or when nothing arrives within `guard` (a hang guard so a
  /// broken adapter fails the test instead of blocking it forever; not a timing check).
  std::optional<std::string> read_line(std::chrono::milliseconds guard);
  /// Closes the adapter's stdin and reads its stdout to the end: everything it printed
  /// after the last line read (empty for a well-behaved adapter).
  std::string finish_output(std::chrono::milliseconds guard);
  /// Waits for the process to exit; its exit status, or -1 when it did not exit
  /// normally (killed after `guard`).
  int wait_exit(std::chrono::milliseconds guard);

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  std::string error_;
};

}  // namespace prodsm::test
