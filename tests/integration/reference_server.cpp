// SPDX-License-Identifier: Apache-2.0
#include "reference_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>

extern char** environ;

namespace prodsm::test {

NodeServer::NodeServer(const std::string& script_name, const std::vector<std::string>& args) {
  int in_pipe[2];
  int out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  std::vector<std::string> words{"node", std::string(PRODSM_SOURCE_DIR) + "/scripts/" + script_name};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, "node", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  stdin_fd_ = in_pipe[1];
  if (rc != 0) {
    error_ = std::string("spawning node failed: ") + std::strerror(rc);
    pid_ = -1;
    ::close(out_pipe[0]);
    return;
  }
  // Read the URL line (≤ 30 s).
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (line.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      error_ = script_name + " printed no URL within 30 s";
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) {
      error_ = script_name + " exited before printing its URL (is npm ci done?)";
      break;
    }
    line.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out_pipe[0]);
  if (error_.empty()) {
    url_ = line.substr(0, line.find('\n'));
    while (!url_.empty() && (url_.back() == '/' || url_.back() == '\r')) url_.pop_back();
  }
}

NodeServer::~NodeServer() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);  // EOF: the launcher stops the server
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

const std::string& process_tag() {
  static const std::string tag = [] {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%06x", static_cast<unsigned>(std::random_device{}() & 0xffffffU));
    return std::to_string(::getpid()) + "-" + hex;
  }();
  return tag;
}

std::optional<SharedServer> shared_server(const std::string& name) {
  const char* dir = std::getenv("PRODSM_TEST_SERVERS_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  SharedServer s;
  s.dir = dir;
  const std::string file = s.dir + "/" + name + ".url";
  std::ifstream in(file);
  std::getline(in, s.url);
  while (!s.url.empty() && (s.url.back() == '/' || s.url.back() == '\r')) s.url.pop_back();
  long pid = 0;
  std::ifstream(s.dir + "/" + name + ".pid") >> pid;
  const std::string why =
      " (PRODSM_TEST_SERVERS_DIR): ctest's fixture SharedServers.Start starts it; did it run and pass, and did no "
      "other ctest run in this build directory stop it?";
  if (s.url.empty()) {
    s.error = file + " holds no URL" + why;
  } else if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0) {
    s.error = "the shared " + name + " at " + s.url + " is not running (a stale " + file + ")" + why;
    s.url.clear();
  }
  return s;
}

ReferenceServer::ReferenceServer() {
  if (auto s = shared_server("ds-server")) {
    url_ = s->url;
    error_ = s->error;
    return;
  }
  node_ = std::make_unique<NodeServer>("ds-server.mjs", std::vector<std::string>{});
  url_ = node_->url();
  error_ = node_->error();
}

ReferenceServer::~ReferenceServer() = default;

std::string ReferenceServer::stream_url(const std::string& prefix) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  return url() + "/prodsm-test/" + prefix + "-" + process_tag() + "-" + std::to_string(++counter_);
}

ReferenceServer& ReferenceServer::shared() {
  static ReferenceServer server;
  return server;
}

}  // namespace prodsm::test
