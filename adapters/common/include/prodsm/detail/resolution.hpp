// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file resolution.hpp
/// Internal: getaddrinfo(3) off a session's I/O thread, for both adapters. It blocks with
/// no bound of its own (a name server that does not answer holds it for tens of seconds
/// a try, a stuck name-service backend for ever), so a session that called it on its I/O
/// thread — or through Asio's resolver, whose thread an io_context's run() and
/// destruction wait for — would keep neither its connect timeout, nor its producers'
/// delivery timeouts, nor a prompt close or exit. A Resolution runs it on a detached
/// thread of its own; the session takes the result when it is there (the blocking one is
/// woken through its eventfd, the Asio one looks on a timer), or, closed meanwhile,
/// never. Nothing here calls getaddrinfo on the caller's thread, not even for an IP
/// address (an interposed or misconfigured resolver may block on those too); the Asio
/// session takes an IP address without a Resolution.
/// Not part of the public API; included by the adapters only.

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include <tl/expected.hpp>

namespace prodsm::detail {

/// The result of a resolution: the host's addresses (freed with freeaddrinfo when the
/// last owner drops them), or the resolver's error text.
using ResolvedAddresses = tl::expected<std::shared_ptr<addrinfo>, std::string>;

/// One getaddrinfo(host, port) for stream sockets, any address family. Shared by the
/// session and the resolving thread, so the thread never touches a session that is gone.
class Resolution {
 public:
  /// Starts resolving `host`:`port` on a detached thread that, when `wake_fd` >= 0,
  /// writes 1 to a duplicate of it (the blocking session's eventfd) once the result is
  /// ready. The error text
  /// when the descriptor cannot be duplicated or the thread cannot start (the caller
  /// reports the connect as failed).
  static tl::expected<std::shared_ptr<Resolution>, std::string> start(const std::string& host, std::uint16_t port,
                                                                      int wake_fd = -1) {
    const int own_fd = wake_fd >= 0 ? ::fcntl(wake_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (wake_fd >= 0 && own_fd < 0) {
      return tl::unexpected("resolving " + host + ": dup of the wake descriptor: " + std::strerror(errno));
    }
    auto resolution = std::make_shared<Resolution>(own_fd);
    try {
      std::thread([resolution, host, port] { resolution->finish(resolve(host, port)); }).detach();
    } catch (const std::system_error& e) {
      return tl::unexpected("resolving " + host + ": no thread to resolve on: " + e.what());
    }
    return resolution;
  }

  /// The result once it is there, else nullopt. Any thread.
  [[nodiscard]] std::optional<ResolvedAddresses> result() {
    std::lock_guard lock(mu_);
    return result_;
  }

  /// Use start(). `wake_fd`: owned (closed by the destructor), or -1.
  explicit Resolution(int wake_fd) noexcept : wake_fd_{wake_fd} {}
  ~Resolution() {
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }
  Resolution(const Resolution&) = delete;
  Resolution& operator=(const Resolution&) = delete;

 private:
  static ResolvedAddresses resolve(const std::string& host, std::uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
    if (rc != 0 || list == nullptr) {
      if (list != nullptr) ::freeaddrinfo(list);
      return tl::unexpected("resolving " + host + " failed: " + (rc != 0 ? ::gai_strerror(rc) : "no address"));
    }
    return std::shared_ptr<addrinfo>(list, ::freeaddrinfo);
  }

  void finish(ResolvedAddresses r) {
    {
      std::lock_guard lock(mu_);
      result_ = std::move(r);
    }
    if (wake_fd_ >= 0) {
      const std::uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof one);
    }
  }

  std::mutex mu_;
  std::optional<ResolvedAddresses> result_;  // guarded by mu_
  const int wake_fd_;                        // owned: a duplicate of the session's eventfd, or -1
};

}  // namespace prodsm::detail
