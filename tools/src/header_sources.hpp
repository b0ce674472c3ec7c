// SPDX-License-Identifier: Apache-2.0
#pragma once
// Credentials that change while a run goes on, as per-request header providers
// (prodsm/http/request_fields.hpp) for the CLI:
//  - BearerTokenFile: `Authorization: Bearer <token>` from a file, re-read whenever the
//    file changes (its inode, size or modification time), e.g. a token a sidecar or a
//    Kubernetes projected volume rotates;
//  - HeaderCommand: the `Name: value` lines a shell command prints, run again once its
//    output is older than a TTL (like git's credential helpers or kubectl's exec
//    plugins), e.g. `gcloud auth print-access-token | sed 's/^/Authorization: Bearer /'`.
// Both are called on the session's I/O thread for every request attempt and serve a
// cached value until it must be refreshed; a refresh that fails fails that attempt
// (header_provider_failed, retried within the retry policy). Thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/http/request_fields.hpp"

namespace prodsm::tools {

/// Most bytes read from a token file or a header command's output (R3).
inline constexpr std::size_t kMaxCredentialBytes = 64 * 1024;
/// Longest a header command may run before it is killed and the attempt fails.
inline constexpr std::chrono::seconds kHeaderCommandTimeout{10};

/// `Authorization: Bearer <token>` from `path` (see the file comment). The token is the
/// file's contents without surrounding whitespace; an empty, unreadable or oversized
/// file fails the attempt with a message naming the flag and the file.
class BearerTokenFile {
 public:
  explicit BearerTokenFile(std::string path) : path_{std::move(path)} {}
  /// The header for one request attempt, re-reading the file when it changed.
  tl::expected<http::RequestFields, std::string> operator()(const http::RequestInfo& request);

 private:
  struct Stamp {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };
  std::string path_;
  std::mutex mu_;
  std::optional<Stamp> stamp_;  ///< of the file the token was read from
  std::string token_;
};

/// The headers `command` (run with /bin/sh -c, stdin /dev/null, stderr inherited, in a
/// process group of its own) prints, one `Name: value` per line, cached for `ttl`. A
/// command that fails (non-zero exit, killed with its whole group after
/// kHeaderCommandTimeout or when the run aborts, prints nothing, more than
/// kMaxCredentialBytes or a line that is not a valid header) fails the attempt with a
/// message naming --header-command; the next attempt runs it again.
class HeaderCommand {
 public:
  /// `rule`: the target protocol's rule on provided headers (parse_header_flag).
  HeaderCommand(std::string command, std::chrono::seconds ttl, http::HeaderRule rule)
      : command_{std::move(command)}, ttl_{ttl}, rule_{rule} {}
  /// The headers for one request attempt, running the command when the cache is older
  /// than the TTL (or empty).
  tl::expected<http::RequestFields, std::string> operator()(const http::RequestInfo& request);

 private:
  tl::expected<http::Headers, std::string> run() const;
  std::string command_;
  std::chrono::seconds ttl_;
  http::HeaderRule rule_;
  std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> fetched_at_;
  http::Headers headers_;
};

}  // namespace prodsm::tools
