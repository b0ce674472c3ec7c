// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: a child process spoken to in JSON lines over its stdin/stdout.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "prodsm/time.hpp"

namespace prodsm::conformance::detail {

class DriverProcess {
 public:
  /// Spawns argv[0] (searched in PATH) with pipes on stdin/stdout. stderr is inherited when
  /// `inherit_stderr`, else written to an unlinked temporary file whose tail (4 KiB) is
  /// appended to error() when the process fails; the file is cut back to that tail
  /// whenever it passed kMaxLogBytes at a request (a driver that logs without end cannot
  /// fill the disk).
  static constexpr std::size_t kMaxLogBytes = 1U << 20;
  /// How much of the log's end is kept (and shown in error()).
  static constexpr std::size_t kLogTailBytes = 4096;
  DriverProcess(const std::vector<std::string>& argv, Duration reply_timeout_ns, bool inherit_stderr);
  ~DriverProcess();
  DriverProcess(const DriverProcess&) = delete;
  DriverProcess& operator=(const DriverProcess&) = delete;

  [[nodiscard]] bool alive() const noexcept { return pid_ > 0 && error_.empty(); }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  /// Bytes of the driver's stderr log kept on disk now (0 when stderr is inherited).
  [[nodiscard]] std::size_t log_bytes() const;
  /// Sends one request and waits for its one-line reply; a JSON object with a boolean
  /// "ok", or an object {"ok": false, "error": {"message": ...}} when the process failed
  /// — died, hung past the reply timeout (then killed), replied with something else, or
  /// wrote more than one line for the request before (found when this one is sent) —
  /// (then alive() is false for good).
  nlohmann::json request(const nlohmann::json& message);
  /// A failed reply as the target's failure (Driver::target_failure, with
  /// kTargetFailedPrefix): "the driver failed at <what>: " and the reply's error, or the
  /// process's own when it died, hung or answered garbage.
  [[nodiscard]] std::string failure_at(const std::string& what, const nlohmann::json& reply) const;

 private:
  bool read_line(std::string& line);
  /// True (and failed) when the driver wrote output after its last reply line.
  bool extra_output();
  /// Cuts the stderr file back to its last kLogTailBytes once it is over kMaxLogBytes.
  void trim_log();
  void fail(std::string why);
  int pid_ = -1;
  int stderr_file_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;
  std::string error_;
  std::string last_op_;  ///< the "op" of the request last sent, for messages
  Duration reply_timeout_ns_;
};

}  // namespace prodsm::conformance::detail
