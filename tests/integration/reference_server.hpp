// SPDX-License-Identifier: Apache-2.0
#pragma once
// Starts the Durable Streams reference server (npm @durable-streams/server, through
// scripts/ds-server.mjs) on a free 127.0.0.1 port for the duration of a test binary.
// The server exits when its stdin closes, so it never outlives the test process.

#include <sys/types.h>
#include <string>
#include <vector>

namespace prodsm::test {

/// A Node script from <source>/scripts that prints its base URL as its first stdout line
/// and exits when its stdin closes; stopped by PID at destruction.
class NodeServer {
 public:
  /// Spawns `node <source>/scripts/<script> <args...>` and waits (≤ 30 s) for its URL line.
  /// On failure url() is empty and error() says why.
  NodeServer(const std::string& script, const std::vector<std::string>& args);
  ~NodeServer();
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;
  /// Base URL (no trailing slash).
  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string url_;
  std::string error_;
};

class ReferenceServer {
 public:
  /// Spawns `node <source>/scripts/ds-server.mjs` and waits (≤ 30 s) for its URL line.
  /// On failure url() is empty and error() says why.
  ReferenceServer();
  ~ReferenceServer();
  ReferenceServer(const ReferenceServer&) = delete;
  ReferenceServer& operator=(const ReferenceServer&) = delete;

  /// Base URL, e.g. "http://127.0.0.1:40123" (no trailing slash).
  [[nodiscard]] const std::string& url() const { return node_.url(); }
  [[nodiscard]] const std::string& error() const { return node_.error(); }
  /// A fresh stream URL under the server: "<url>/<prefix>-<n>".
  std::string stream_url(const std::string& prefix);

  /// The process-wide instance (started on first use).
  static ReferenceServer& shared();

 private:
  NodeServer node_;
  unsigned counter_ = 0;
};

}  // namespace prodsm::test
