// SPDX-License-Identifier: Apache-2.0
#pragma once
// A scripted in-process HTTP/1.1 server for transport misbehaviour (both adapters' tests).

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <string_view>
#include <thread>

#include "prodsm/http/connection.hpp"

namespace prodsm::test {

/// A scripted HTTP/1.1 server on 127.0.0.1 for transport misbehaviour: one connection at
/// a time; for the n-th request (from 0) `script(n)` says what to do.
class FakeServer {
 public:
  enum class Action { respond, drop, hang, respond_and_close };
  struct Reply {
    Action action = Action::respond;
    std::string bytes;
  };
  static Reply ok_plain() {
    return {Action::respond, "HTTP/1.1 204 No Content\r\nStream-Next-Offset: 0000_0001\r\n\r\n"};
  }
  /// A request the fake server answers (any: it does not look at the target).
  static http::Request post(std::string_view body) {
    http::Request r;
    r.bytes = "POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
              std::string(body);
    return r;
  }

  explicit FakeServer(std::function<Reply(int)> script) : script_{std::move(script)} {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/s"; }
  std::atomic<int> connections{0};  ///< accepted
  std::atomic<int> eofs{0};         ///< connections the client closed
  std::atomic<int> requests{0};

 private:
  bool wait_readable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }
  void run() {
    while (wait_readable(listen_fd_)) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections;
      serve(fd);
      ::close(fd);
    }
  }
  void serve(int fd) {
    std::string buffer;
    bool hang = false;
    char chunk[4096];
    while (wait_readable(fd)) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        ++eofs;
        return;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
      while (!hang) {
        const auto head_end = buffer.find("\r\n\r\n");
        if (head_end == std::string::npos) break;
        std::size_t body = 0;
        if (auto at = buffer.find("Content-Length: "); at != std::string::npos && at < head_end) {
          body = std::stoul(buffer.substr(at + 16));
        }
        if (buffer.size() < head_end + 4 + body) break;
        buffer.erase(0, head_end + 4 + body);
        const Reply reply = script_(requests++);
        if (reply.action == Action::drop) return;
        if (reply.action == Action::hang) {
          hang = true;
          break;
        }
        (void)!::send(fd, reply.bytes.data(), reply.bytes.size(), MSG_NOSIGNAL);
        if (reply.action == Action::respond_and_close) return;  // the caller closes: a FIN, no Connection: close
      }
    }
  }
  std::function<Reply(int)> script_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// E2, for either adapter's session to a FakeServer whose every answer closes the
/// connection (Action::respond_and_close): the first response's handler waits 100 ms on
/// the session's thread, so the server's FIN is in the socket and not yet read when the
/// second request is made; checks that request was not written into the closed
/// connection but sent again on a new one (answered: two connections, two requests).
template <class SessionPtr>
void expect_no_write_into_a_connection_closed_while_idle(const SessionPtr& session, const FakeServer& fake) {
  std::promise<std::string> second;  // empty: answered; else why not
  session->exchange(FakeServer::post("a"), [&](auto first) {
    EXPECT_TRUE(first.has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds{100});  // the server's FIN arrives meanwhile
    session->exchange(FakeServer::post("b"),
                      [&](auto r) { second.set_value(r ? std::string() : r.error().describe()); });
  });
  auto future = second.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds{30}), std::future_status::ready);
  const std::string failure = future.get();
  EXPECT_EQ(failure, "") << "not sent again on a new connection";
  EXPECT_EQ(fake.requests.load(), 2);
  EXPECT_EQ(fake.connections.load(), 2);
}

}  // namespace prodsm::test
