// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file adapter.hpp
/// The Durable Streams client conformance adapter: executes the suite's commands
/// (protocol.ts of packages/client-conformance-tests) with prodsm's own pieces — the Asio
/// Session and the HTTP codec for stream operations, prodsm::asio::Producer (the real
/// Producer core) for the idempotent producer commands. One command at a time, as the
/// runner sends them; every wait is bounded by the command timeout.

#include <chrono>
#include <cstddef>
#include <memory>

#include "protocol.hpp"

namespace prodsm::tools::dsconf {

/// Bounds and knobs of the adapter (R3: nothing grows without bound).
struct AdapterOptions {
  /// Longest accepted command line (main.cpp), bytes. Default 16 MiB.
  std::size_t max_line_bytes = 16U << 20;
  /// Most bytes one `read` collects; it stops there with upToDate false. Default 16 MiB.
  std::size_t max_read_bytes = 16U << 20;
  /// Most GET requests one `read` makes. Default 10 000.
  std::size_t max_read_requests = 10'000;
  /// Most cached idempotent producers (path|producerId|epoch); the oldest is detached
  /// (closed, stream left open) to make room. Default 64.
  std::size_t max_cached_producers = 64;
  /// Most cached stream content types; the oldest is forgotten. Default 4096.
  std::size_t max_cached_content_types = 4096;
  /// Bound on one command unless `init` gives `timeoutMs`. Default 25 s (below the
  /// runner's 30 s, so the runner gets a TIMEOUT result rather than no answer).
  std::chrono::milliseconds command_timeout{25'000};
  /// Log every command and result on stderr.
  bool verbose = false;
};

class Adapter {
 public:
  explicit Adapter(AdapterOptions options = {});
  ~Adapter();
  Adapter(const Adapter&) = delete;
  Adapter& operator=(const Adapter&) = delete;

  /// Executes one parsed command line and returns its result (a result or an
  /// ErrorResult). Never throws.
  Json handle(const Json& command) noexcept;

  /// True once `shutdown` was handled: the caller writes its result and exits.
  [[nodiscard]] bool shutdown_requested() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace prodsm::tools::dsconf
