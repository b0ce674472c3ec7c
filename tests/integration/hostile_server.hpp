// SPDX-License-Identifier: Apache-2.0
#pragma once
// The hostile test server (tests/hostile-server/server.mjs) for the CLI's hostile-server
// tests: under ctest the one of the ctest run (fixture shared_servers); run by hand, one
// per test binary, on a free 127.0.0.1 port, stopped by PID. A stream's first
// path segment names its misbehaviour; what the server really stored is mirrored to
// files in a store directory, read here without any HTTP client.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "reference_server.hpp"

namespace prodsm::test {

/// `got` is exactly `want` (a stream's content); on a difference, says where, briefly.
inline ::testing::AssertionResult same_bytes(const std::string& got, const std::optional<std::string>& want) {
  if (!want) return ::testing::AssertionFailure() << "the server stored no such stream";
  if (got == *want) return ::testing::AssertionSuccess();
  std::size_t at = 0;
  while (at < got.size() && at < want->size() && got[at] == (*want)[at]) ++at;
  return ::testing::AssertionFailure() << "got " << got.size() << " bytes, the server stored " << want->size()
                                       << "; first difference at byte " << at << ": got \"" << got.substr(at, 40)
                                       << "\", stored \"" << want->substr(at, 40) << "\"";
}

class HostileServer {
 public:
  /// The ctest run's shared hostile server when there is one (shared_server), otherwise
  /// starts one with a store directory of its own.
  HostileServer() {
    if (auto s = shared_server("hostile-server")) {
      dir_ = s->dir + "/hostile-store";
      url_ = s->url;
      error_ = s->error;
      return;
    }
    dir_ = temp_path("hostile-store");
    node_ = std::make_unique<NodeServer>("../tests/hostile-server/server.mjs",
                                         std::vector<std::string>{"--store-dir", dir_});
    url_ = node_->url();
    error_ = node_->error();
  }

  ~HostileServer() {
    if (!node_) return;  // the shared server's store is the fixture's to remove
    node_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] const std::string& error() const { return error_; }

  /// A fresh stream URL misbehaving as `mode`: "<url>/<mode>/<name>-<process_tag>-<n>".
  std::string stream(const std::string& mode, const std::string& name) {
    std::lock_guard lock(mu_);
    return url() + "/" + mode + "/" + name + "-" + process_tag() + "-" + std::to_string(++counter_);
  }

  /// What the server stored for `stream_url` (bytes, or one JSON array text); nullopt
  /// when the stream was never created.
  std::optional<std::string> stored(const std::string& stream_url) const {
    const std::string file = file_of(stream_url);
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return std::nullopt;
    return slurp(file);
  }

  /// Requests the server saw on `stream_url` per method ("get", "post", ...).
  nlohmann::json stats(const std::string& stream_url) const {
    return nlohmann::json::parse(slurp(file_of(stream_url) + ".stats"), nullptr, false);
  }

  /// The process-wide instance (started on first use).
  static HostileServer& shared() {
    static HostileServer server;
    return server;
  }

 private:
  std::string file_of(const std::string& stream_url) const {
    std::string path = stream_url.substr(url().size() + 1);
    for (char& c : path) {
      if (c == '/') c = '~';
    }
    return dir_ + "/" + path;
  }

  std::string dir_;
  std::unique_ptr<NodeServer> node_;  // null when the ctest run's server is used
  std::string url_;
  std::string error_;
  std::mutex mu_;
  unsigned counter_ = 0;
};

}  // namespace prodsm::test
