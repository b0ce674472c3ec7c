// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Durable Streams reference server (npm @durable-streams/server, through
// scripts/ds-server.mjs) for a test binary: under ctest, the one server of the ctest run
// (fixture shared_servers, tests/integration/shared-servers.sh); run by hand, one started
// on a free 127.0.0.1 port for the duration of the process, which exits when its stdin
// closes, so it never outlives the test process.

#include <sys/types.h>

#include <memory>
#include <optional>
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

/// "<pid>-<6 hex digits>", fixed for the process: what keeps the streams and faults of
/// test processes sharing one server apart, also when a later process reuses a pid.
const std::string& process_tag();

/// A server of the ctest run's shared_servers fixture: its base URL, or why there is none.
struct SharedServer {
  std::string url;    ///< no trailing slash; empty on error
  std::string error;  ///< why url is empty
  std::string dir;    ///< the fixture's directory (PRODSM_TEST_SERVERS_DIR)
};

/// The fixture's server `name` ("ds-server", "hostile-server": DIR/<name>.url, DIR from
/// the environment variable PRODSM_TEST_SERVERS_DIR, which ctest sets for integration
/// tests); nullopt when the variable is unset (run by hand: start your own). An error,
/// not a server of one's own, when it is set but names no URL: a test must not silently
/// measure something else than it says.
std::optional<SharedServer> shared_server(const std::string& name);

class ReferenceServer {
 public:
  /// The ctest run's shared server when there is one (shared_server), otherwise spawns
  /// `node <source>/scripts/ds-server.mjs` and waits (≤ 30 s) for its URL line.
  /// On failure url() is empty and error() says why.
  ReferenceServer();
  ~ReferenceServer();
  ReferenceServer(const ReferenceServer&) = delete;
  ReferenceServer& operator=(const ReferenceServer&) = delete;

  /// Base URL, e.g. "http://127.0.0.1:40123" (no trailing slash).
  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] const std::string& error() const { return error_; }
  /// A fresh stream URL under the server: "<url>/prodsm-test/<prefix>-<process_tag>-<n>".
  std::string stream_url(const std::string& prefix);

  /// The process-wide instance (started or found on first use).
  static ReferenceServer& shared();

 private:
  std::unique_ptr<NodeServer> node_;  // null when the ctest run's server is used
  std::string url_;
  std::string error_;
  unsigned counter_ = 0;
};

}  // namespace prodsm::test
