// SPDX-License-Identifier: Apache-2.0
// Resolution: getaddrinfo(3) on a detached thread of its own (resolver.hpp says why).
#include "resolver.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

namespace prodsm::blocking {

tl::expected<std::shared_ptr<Resolution>, std::string> Resolution::start(const std::string& host, std::uint16_t port,
                                                                         int wake_fd) {
  const int own_fd = ::fcntl(wake_fd, F_DUPFD_CLOEXEC, 0);
  if (own_fd < 0) return tl::unexpected("resolving " + host + ": dup of the wake descriptor: " + std::strerror(errno));
  auto resolution = std::make_shared<Resolution>(own_fd);
  try {
    std::thread([resolution, host, port] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* list = nullptr;
      const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
      if (rc != 0 || list == nullptr) {
        if (list != nullptr) ::freeaddrinfo(list);
        resolution->finish(
            tl::unexpected("resolving " + host + " failed: " + (rc != 0 ? ::gai_strerror(rc) : "no address")));
      } else {
        resolution->finish(std::shared_ptr<addrinfo>(list, ::freeaddrinfo));
      }
    }).detach();
  } catch (const std::system_error& e) {
    return tl::unexpected("resolving " + host + ": no thread to resolve on: " + e.what());
  }
  return resolution;
}

void Resolution::finish(ResolvedAddresses r) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(r);
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

std::optional<ResolvedAddresses> Resolution::result() {
  std::lock_guard lock(mu_);
  return result_;
}

Resolution::~Resolution() {
  ::close(wake_fd_);
}

}  // namespace prodsm::blocking
