// SPDX-License-Identifier: Apache-2.0
#pragma once
// getaddrinfo(3) off the session's I/O thread. It blocks with no bound of its own (a name
// server that does not answer holds it for tens of seconds per try), so a session that
// called it on its I/O thread would keep neither its connect timeout, nor its producers'
// delivery timeouts, nor a prompt close. A Resolution runs it on a detached thread of its
// own, which wakes the I/O thread when done; a session that closed meanwhile simply never
// takes the result. Private to the adapter.

#include <tl/expected.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

struct addrinfo;

namespace prodsm::blocking {

/// The result of a resolution: the host's addresses (freed with freeaddrinfo when the
/// last owner drops them), or the resolver's error text.
using ResolvedAddresses = tl::expected<std::shared_ptr<addrinfo>, std::string>;

/// One running getaddrinfo(host, port) for stream sockets, any address family. Shared by
/// the session's I/O thread and the resolving thread, so the thread never touches a
/// session that is gone.
class Resolution {
 public:
  /// Starts resolving `host`:`port` on a detached thread that writes 1 to a duplicate of
  /// `wake_fd` (the session's eventfd) once the result is ready. The error text when the
  /// descriptor cannot be duplicated or the thread cannot start (the caller reports the
  /// connect as failed).
  static tl::expected<std::shared_ptr<Resolution>, std::string> start(const std::string& host, std::uint16_t port,
                                                                      int wake_fd);

  /// The result once the thread finished, else nullopt. Any thread.
  [[nodiscard]] std::optional<ResolvedAddresses> result();

  explicit Resolution(int wake_fd) noexcept : wake_fd_{wake_fd} {}
  ~Resolution();
  Resolution(const Resolution&) = delete;
  Resolution& operator=(const Resolution&) = delete;

 private:
  void finish(ResolvedAddresses r);

  std::mutex mu_;
  std::optional<ResolvedAddresses> result_;  // guarded by mu_
  const int wake_fd_;                        // owned: a duplicate of the session's eventfd
};

}  // namespace prodsm::blocking
