// SPDX-License-Identifier: Apache-2.0
#include "header_sources.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "interrupt.hpp"
#include "prodsm/http/request_fields.hpp"
#include "producer_flags.hpp"

extern char** environ;

namespace prodsm::tools {
namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  const auto last = s.find_last_not_of(ws);
  s.erase(last == std::string::npos ? 0 : last + 1);
  return s;
}

/// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// ---- BearerTokenFile ---------------------------------------------------------------------

tl::expected<http::RequestFields, std::string> BearerTokenFile::operator()(const http::RequestInfo&) {
  const std::string flag = "--bearer-token-file '" + path_ + "': ";
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return tl::unexpected(flag + "cannot read: " + std::strerror(errno));
  const Stamp stamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                    static_cast<std::uint64_t>(st.st_size),
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  std::lock_guard lock(mu_);
  if (!stamp_ || *stamp_ != stamp) {
    if (S_ISDIR(st.st_mode)) return tl::unexpected(flag + "is a directory");
    if (stamp.size > kMaxCredentialBytes) {
      return tl::unexpected(flag + "larger than " + std::to_string(kMaxCredentialBytes) + " bytes");
    }
    // Read at most one byte more than the bound, whatever stat said: a device or a pipe
    // (<(command)) has no size, and /dev/zero never ends.
    std::ifstream in(path_, std::ios::binary);
    if (!in) return tl::unexpected(flag + "cannot read: " + std::strerror(errno));
    std::string text(kMaxCredentialBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) return tl::unexpected(flag + "cannot read: " + std::strerror(errno));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxCredentialBytes) {
      return tl::unexpected(flag + "larger than " + std::to_string(kMaxCredentialBytes) + " bytes");
    }
    std::string token = trim(text);
    if (token.empty()) return tl::unexpected(flag + "the file is empty");
    for (const char c : token) {  // a header value cannot carry them (it would fail every attempt)
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x21 || byte == 0x7F) {
        return tl::unexpected(flag + "the token contains a space or a control character (CR, LF, NUL, ...)");
      }
    }
    // A request carries at most 8 KiB of provided headers: a longer token would fail
    // every attempt until the delivery timeout.
    if (auto why = http::check_extra_header_bounds({{"Authorization", "Bearer " + token}})) {
      return tl::unexpected(flag + "the token is too long to send: " + *why);
    }
    token_ = std::move(token);
    stamp_ = stamp;
  }
  http::RequestFields fields;
  fields.headers.push_back({"Authorization", "Bearer " + token_});
  return fields;
}

// ---- HeaderCommand -----------------------------------------------------------------------

tl::expected<http::RequestFields, std::string> HeaderCommand::operator()(const http::RequestInfo&) {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!fetched_at_ || now - *fetched_at_ >= ttl_) {
    auto headers = run();
    if (!headers) return tl::unexpected("--header-command: " + headers.error());
    headers_ = std::move(*headers);
    fetched_at_ = std::chrono::steady_clock::now();
  }
  http::RequestFields fields;
  fields.headers = headers_;
  return fields;
}

tl::expected<http::Headers, std::string> HeaderCommand::run() const {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return tl::unexpected(std::string{"pipe: "} + std::strerror(errno));
  Fd read_end{pipe_fds[0]};
  Fd write_end{pipe_fds[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.fd, 1);
  const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
  // The command runs as a normal process: no signal blocked (the caller's thread blocks
  // SIGINT/SIGTERM to route them to the CLI's handler) and SIGPIPE at its default (the
  // CLI ignores it). It leads a process group of its own, so what it started is killed
  // with it (a timeout, too much output, an abort): killing the shell alone left its
  // children running. A terminal's Ctrl-C therefore does not reach it: a first interrupt
  // still needs its headers for the flush, and an abort kills it (abort_requested).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // a group of its own, led by the shell
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return tl::unexpected(std::string{"cannot run /bin/sh: "} + std::strerror(spawned));
  ::close(write_end.fd);
  write_end.fd = -1;

  const auto deadline = std::chrono::steady_clock::now() + kHeaderCommandTimeout;
  auto left_ms = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
  };
  std::string out;
  std::optional<std::string> failure;
  char buf[4096];
  while (true) {
    if (abort_requested()) {  // the run is aborting: nothing will wait for these headers
      failure = "stopped by the abort (killed)";
      break;
    }
    pollfd p{read_end.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, std::min(left_ms(), 100));  // slices: an abort is noticed
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && left_ms() > 0) continue;
    if (ready <= 0) {
      failure = "did not finish within " + std::to_string(kHeaderCommandTimeout.count()) + " s (killed)";
      break;
    }
    const ssize_t n = ::read(read_end.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of its output
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxCredentialBytes) {
      failure = "printed more than " + std::to_string(kMaxCredentialBytes) + " bytes (killed)";
      break;
    }
  }
  int status = 0;
  while (true) {                         // the child we started, waited for by its pid only
    if (failure) ::kill(-pid, SIGKILL);  // the group: the shell and what it started
    const pid_t done = ::waitpid(pid, &status, failure ? 0 : WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return tl::unexpected(std::string{"waitpid: "} + std::strerror(errno));
    if (!failure && left_ms() == 0)
      failure = "did not exit within " + std::to_string(kHeaderCommandTimeout.count()) + " s (killed)";
    if (!failure) std::this_thread::sleep_for(std::chrono::milliseconds{1});  // exited output; exit is near
  }
  if (failure) return tl::unexpected(std::move(*failure));
  if (WIFSIGNALED(status)) return tl::unexpected("killed by signal " + std::to_string(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return tl::unexpected("exited with status " + std::to_string(WEXITSTATUS(status)));
  }
  http::Headers headers;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.empty()) continue;
    auto header = parse_header_flag(line, rule_);
    if (!header) return tl::unexpected("printed a line that cannot be used as a header: " + header.error());
    headers.push_back(std::move(*header));
  }
  if (headers.empty()) return tl::unexpected(std::string{"printed no 'Name: value' line"});
  // A request carries at most 64 headers, 8 KiB as written: more would fail every attempt.
  if (auto why = http::check_extra_header_bounds(headers)) return tl::unexpected("printed too much to send: " + *why);
  return headers;
}

}  // namespace prodsm::tools
