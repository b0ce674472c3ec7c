// SPDX-License-Identifier: Apache-2.0
#include "driver_process.hpp"

#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/json_limits.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace prodsm::conformance::detail {

DriverProcess::DriverProcess(const std::vector<std::string>& argv, Duration reply_timeout_ns, bool inherit_stderr)
    : reply_timeout_ns_{reply_timeout_ns} {
  if (argv.empty()) {
    error_ = "no driver command";
    return;
  }
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a driver that died must not kill the harness
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  if (!inherit_stderr) {
    char path[] = "/tmp/prodsm-driver-log-XXXXXX";
    // O_APPEND: the driver's writes always land at the end, also after trim_log()
    // truncated the file under it.
    stderr_file_ = ::mkostemp(path, O_CLOEXEC | O_APPEND);
    if (stderr_file_ >= 0) {
      ::unlink(path);
      posix_spawn_file_actions_adddup2(&actions, stderr_file_, 2);
    }
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  // Writes never block: a driver that stops reading its stdin fails within the reply
  // timeout (request()), instead of hanging the harness on a full pipe.
  if (const int flags = ::fcntl(to_child_, F_GETFL); flags >= 0) ::fcntl(to_child_, F_SETFL, flags | O_NONBLOCK);
  if (rc != 0) {
    fail("cannot start " + argv[0] + ": " + std::strerror(rc));
    return;
  }
  pid_ = pid;
}

void DriverProcess::fail(std::string why) {
  error_ = std::move(why);
  if (stderr_file_ < 0) return;
  const off_t end = ::lseek(stderr_file_, 0, SEEK_END);
  if (end <= 0) return;
  const off_t from = end > static_cast<off_t>(kLogTailBytes) ? end - static_cast<off_t>(kLogTailBytes) : 0;
  std::string tail(static_cast<std::size_t>(end - from), '\0');
  const ssize_t got = ::pread(stderr_file_, tail.data(), tail.size(), from);
  if (got > 0) {
    tail.resize(static_cast<std::size_t>(got));
    error_ += "; the driver's log ends with:\n" + tail;
  }
}

std::size_t DriverProcess::log_bytes() const {
  if (stderr_file_ < 0) return 0;
  const off_t end = ::lseek(stderr_file_, 0, SEEK_END);
  return end > 0 ? static_cast<std::size_t>(end) : 0;
}

void DriverProcess::trim_log() {
  if (stderr_file_ < 0) return;
  const off_t end = ::lseek(stderr_file_, 0, SEEK_END);
  if (end <= static_cast<off_t>(kMaxLogBytes)) return;
  std::string tail(kLogTailBytes, '\0');
  const ssize_t got = ::pread(stderr_file_, tail.data(), tail.size(), end - static_cast<off_t>(tail.size()));
  tail.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  const std::string kept = "[prodsm conform: " + std::to_string(end - static_cast<off_t>(tail.size())) +
                           " bytes of this log dropped]\n" + tail;
  if (::ftruncate(stderr_file_, 0) == 0) (void)!::write(stderr_file_, kept.data(), kept.size());
}

bool DriverProcess::extra_output() {
  while (true) {  // what the driver wrote since its last reply, without waiting
    pollfd p{from_child_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0 || (p.revents & POLLIN) == 0) break;
    char chunk[4096];
    const ssize_t got = ::read(from_child_, chunk, sizeof chunk);
    if (got <= 0) break;  // EOF: the next read says the driver exited
    buffer_.append(chunk, static_cast<std::size_t>(got));
    if (buffer_.size() > 4096) break;
  }
  if (buffer_.empty()) return false;
  fail("the driver wrote more than one line for one request (after its reply to \"" + last_op_ +
       "\"; each request has exactly one reply line, logs go to stderr); the extra output begins: " +
       buffer_.substr(0, 200));
  return true;
}

DriverProcess::~DriverProcess() {
  if (to_child_ >= 0) ::close(to_child_);  // EOF: the driver exits
  if (from_child_ >= 0) ::close(from_child_);
  if (stderr_file_ >= 0) ::close(stderr_file_);
  if (pid_ > 0) {
    int status = 0;
    for (int i = 0; i < 50; ++i) {  // up to 1 s to exit on its own, then kill it
      if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
      ::usleep(20'000);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
}

bool DriverProcess::read_line(std::string& line) {
  const auto deadline = std::chrono::steady_clock::now() + reply_timeout_ns_;
  while (true) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      fail("the driver did not answer within the reply timeout (" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(reply_timeout_ns_).count()) + " ms)");
      if (pid_ > 0) ::kill(pid_, SIGKILL);  // a hung driver is not left running (reaped by the destructor)
      return false;
    }
    pollfd p{from_child_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[65536];
    const ssize_t got = ::read(from_child_, chunk, sizeof chunk);
    if (got <= 0) {
      fail("the driver exited");
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(got));
    if (buffer_.size() > (256U << 20)) {
      fail("the driver's reply is larger than 256 MiB");
      return false;
    }
  }
}

std::string DriverProcess::failure_at(const std::string& what, const nlohmann::json& reply) const {
  return std::string(kTargetFailedPrefix) + "the driver failed at " + what + ": " +
         (alive() ? reply.value("error", nlohmann::json::object()).dump() : error_);
}

nlohmann::json DriverProcess::request(const nlohmann::json& message) {
  auto failed = [this] { return nlohmann::json{{"ok", false}, {"error", {{"message", error_}}}}; };
  if (!alive()) return failed();
  trim_log();
  // A second line for the last request would be read as the reply to this one, and every
  // reply after it would answer the request before: the run is no longer judged.
  if (extra_output()) return failed();
  last_op_ = message.is_object() && message.contains("op") && message.at("op").is_string()
                 ? message.at("op").get<std::string>()
                 : std::string("?");
  const std::string line = message.dump() + "\n";
  const auto deadline = std::chrono::steady_clock::now() + reply_timeout_ns_;
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(to_child_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // the pipe is full: wait until the driver reads
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        fail("the driver did not read its request within the reply timeout (" +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(reply_timeout_ns_).count()) +
             " ms; " + std::to_string(written) + " of " + std::to_string(line.size()) + " bytes written)");
        if (pid_ > 0) ::kill(pid_, SIGKILL);  // as a driver that does not answer (reaped by the destructor)
        return failed();
      }
      pollfd p{to_child_, POLLOUT, 0};
      (void)::poll(&p, 1, static_cast<int>(left.count()));
      continue;
    }
    if (n <= 0) {
      fail("writing to the driver failed");
      return failed();
    }
    written += static_cast<std::size_t>(n);
  }
  std::string reply;
  if (!read_line(reply)) return failed();
  if (reply.empty() || reply == "\r") {  // a stray line break, likely after the previous reply
    fail("the driver answered \"" + last_op_ +
         "\" with an empty line (each request has exactly one reply line, a JSON object; a line written after "
         "the previous reply is read as this one's)");
    return failed();
  }
  auto parsed = parse_json_limited(reply);  // bounded nesting (R3)
  if (!parsed || !parsed->is_object()) {
    fail("the driver answered something that is not a JSON object (" +
         (parsed ? std::string("not an object") : parsed.error()) + "): " + reply.substr(0, 200));
    return failed();
  }
  if (!parsed->contains("ok") || !parsed->at("ok").is_boolean()) {  // every reply says ok: true or false
    fail("the driver's reply has no boolean \"ok\": " + reply.substr(0, 200));
    return failed();
  }
  return std::move(*parsed);
}

}  // namespace prodsm::conformance::detail
