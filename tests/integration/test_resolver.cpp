// SPDX-License-Identifier: Apache-2.0
// Both adapters' sessions resolve host names off their I/O threads
// (adapters/common/include/prodsm/detail/resolution.hpp): a name server that does not
// answer holds neither the delivery timeout (E6), nor the destructor (C5), nor — on Asio
// — the io_context's run(), and a connection waits for a late answer and uses it.
// getaddrinfo(3) is replaced in this executable (its own, so no other test sees it): a
// name under `.resolver-test` waits until the test opens its gate, then resolves as
// 127.0.0.1; every other name goes to the C library.
#include <dlfcn.h>
#include <netdb.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include "blocking_test_support.hpp"
#include "fake_server.hpp"
#include "liveness.hpp"

#include "prodsm/asio/producer.hpp"
#include "prodsm/blocking/producer.hpp"

namespace {

/// A gate per host name: calls for it wait until it opens.
struct Gates {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, bool, std::less<>> open;   ///< name → opened
  std::map<std::string, int, std::less<>> calls;   ///< name → getaddrinfo calls that arrived
  std::map<std::string, int, std::less<>> passed;  ///< name → calls that went through the gate
};

Gates& gates() {
  static auto* g = new Gates;  // never destroyed: a resolving thread may outlive main()
  return *g;
}

}  // namespace

extern "C" int getaddrinfo(const char* node, const char* service, const addrinfo* hints, addrinfo** res) {
  using Real = int (*)(const char*, const char*, const addrinfo*, addrinfo**);
  static const auto real = reinterpret_cast<Real>(::dlsym(RTLD_NEXT, "getaddrinfo"));
  if (node != nullptr && std::string_view(node).ends_with(".resolver-test")) {
    Gates& g = gates();
    std::unique_lock lock(g.mu);
    ++g.calls[node];
    g.cv.notify_all();
    g.cv.wait(lock, [&] { return g.open[node]; });
    ++g.passed[node];
    g.cv.notify_all();
    node = "127.0.0.1";
  }
  return real(node, service, hints, res);
}

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

/// Waits until getaddrinfo was called for `name` (liveness bound kWait); true when it was.
bool resolver_called(const std::string& name) {
  Gates& g = gates();
  std::unique_lock lock(g.mu);
  return g.cv.wait_for(lock, kWait, [&] { return g.calls[name] > 0; });
}

/// Opens the gate of `name` and waits (liveness bound kWait) until every call waiting at
/// it went through; true when they did.
bool open_gate(const std::string& name) {
  Gates& g = gates();
  std::unique_lock lock(g.mu);
  g.open[name] = true;
  g.cv.notify_all();
  return g.cv.wait_for(lock, kWait, [&] { return g.passed[name] == g.calls[name]; });
}

// E6, C5: the name server never answers. The record still fails at its delivery timeout,
// and the producer's destructor returns, while the resolution is still waiting: neither
// depends on it. (Its certainty is not asserted: definite when the deadline found the
// batch waiting for its backoff after a connect timeout, indefinite when it found it
// handed to the session, which the core counts as sent — E6.)
TEST(E6, BlockingAResolverThatNeverAnswersHoldsNeitherTheDeliveryTimeoutNorTheDestructor) {
  const std::string name = "stuck.resolver-test";
  auto options = options_for("http://" + name + ":1/s");
  options.producer.delivery_timeout_ns = 200ms;
  options.session.connect_timeout_ns = 50ms;
  auto producer = std::make_unique<blocking::Producer>(blocking::Producer::create(options).value());
  auto ticket = producer->submit("x\n").value();
  ASSERT_TRUE(resolver_called(name));
  auto outcome = ticket.wait(kWait);
  ASSERT_TRUE(outcome.has_value()) << "no outcome while the resolver hangs";
  ASSERT_FALSE(outcome->has_value());
  EXPECT_EQ(outcome->error().code, ErrorCode::delivery_timeout) << outcome->error().describe();
  auto destroyed = std::async(std::launch::async, [&] { producer.reset(); });
  EXPECT_EQ(destroyed.wait_for(kWait), std::future_status::ready) << "C5: the destructor waits for the resolver";
  EXPECT_TRUE(open_gate(name));  // the resolving thread ends; its result goes nowhere
  destroyed.wait();
}

// E6, C5 on Asio: the same, and the io_context's run() returns once the producer is gone,
// while the resolution still waits. Asio's own resolver kept run() — and so
// `prodsm produce` at exit — waiting for its getaddrinfo thread.
TEST(E6, AsioAResolverThatNeverAnswersHoldsNeitherTheDeliveryTimeoutNorRun) {
  const std::string name = "stuck-asio.resolver-test";
  ::asio::io_context io;
  asio::ProducerOptions options;
  options.url = "http://" + name + ":1/s";
  options.producer.delivery_timeout_ns = 200ms;
  options.session.connect_timeout_ns = 50ms;
  auto producer = std::make_unique<asio::Producer>(asio::Producer::create(io.get_executor(), options).value());
  std::promise<asio::RecordResult> outcome;
  ASSERT_TRUE(producer->submit("x\n", [&outcome](const asio::RecordResult& r) { outcome.set_value(r); }).has_value());
  auto ran = std::async(std::launch::async, [&io] { io.run(); });  // returns once no work is left
  ASSERT_TRUE(resolver_called(name));
  auto result = outcome.get_future();
  ASSERT_EQ(result.wait_for(kWait), std::future_status::ready) << "no outcome while the resolver hangs";
  const auto r = result.get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::delivery_timeout) << r.error().describe();
  ::asio::post(io, [&producer] { producer.reset(); });  // C5: aborted, its session closed
  EXPECT_EQ(ran.wait_for(kWait), std::future_status::ready) << "run() waits for the resolver";
  EXPECT_TRUE(open_gate(name));
  ran.wait();
}

// A connection waits for a resolution that answers late (the connect timeout is longer),
// then connects to what it gave: the record is appended once.
TEST(E2, BlockingAConnectionWaitsForALateResolutionAndUsesIt) {
  FakeServer fake([](int) { return FakeServer::ok_plain(); });
  const std::string name = "late.resolver-test";
  const std::string port = fake.url().substr(std::string("http://127.0.0.1:").size());
  auto options = options_for("http://" + name + ":" + port, "");
  auto producer = blocking::Producer::create(options).value();
  auto ticket = producer.submit("x\n").value();
  ASSERT_TRUE(resolver_called(name));
  EXPECT_FALSE(ticket.ready()) << "nothing can be sent before the name is resolved";
  ASSERT_TRUE(open_gate(name));
  auto outcome = ticket.wait(kWait);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_TRUE(outcome->has_value()) << outcome->error().describe();
  EXPECT_EQ(fake.requests.load(), 1);
  ASSERT_TRUE(producer.close(kWait).has_value());
}

}  // namespace
}  // namespace prodsm::test
