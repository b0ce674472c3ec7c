// SPDX-License-Identifier: Apache-2.0
#pragma once
// Starts the Durable Streams reference server (npm @durable-streams/server, through
// scripts/ds-server.mjs) on a free 127.0.0.1 port for the duration of a test binary.
// The server exits when its stdin closes, so it never outlives the test process.

#include <sys/types.h>
#include <string>

namespace prodsm::test {

class ReferenceServer {
 public:
  /// Spawns `node <source>/scripts/ds-server.mjs` and waits (≤ 30 s) for its URL line.
  /// On failure url() is empty and error() says why.
  ReferenceServer();
  ~ReferenceServer();
  ReferenceServer(const ReferenceServer&) = delete;
  ReferenceServer& operator=(const ReferenceServer&) = delete;

  /// Base URL, e.g. "http://127.0.0.1:40123" (no trailing slash).
  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] const std::string& error() const { return error_; }
  /// A fresh stream URL under the server: "<url>/<prefix>-<n>".
  std::string stream_url(const std::string& prefix);

  /// The process-wide instance (started on first use).
  static ReferenceServer& shared();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string url_;
  std::string error_;
  unsigned counter_ = 0;
};

}  // namespace prodsm::test
