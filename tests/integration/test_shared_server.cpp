// SPDX-License-Identifier: Apache-2.0
// The test harness itself: under ctest every integration test shares one reference server
// (fixture shared_servers, tests/integration/shared-servers.sh), so a test must clear only
// the faults it injected, never those another test process is relying on at that moment.
#include <gtest/gtest.h>

#include <string>

#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

constexpr const char* kBytes = "application/octet-stream";

/// The path part of a stream URL on the reference server.
std::string path_of(const std::string& stream_url) {
  return stream_url.substr(ReferenceServer::shared().url().size());
}

/// Injects `fault` (a JSON body after its path) through the control `endpoint` on two new
/// streams: on "theirs" as another test process would (a bare POST, not through this
/// process's client), on "mine" through `set`. After `clear` only "mine"'s fault is gone.
template <class Set, class Clear>
void expect_clear_leaves_other_processes(const std::string& name, const std::string& endpoint, const std::string& fault,
                                         Set set, Clear clear) {
  TestClient client;
  const std::string base = ReferenceServer::shared().url();
  ASSERT_FALSE(base.empty()) << ReferenceServer::shared().error();
  const std::string mine = new_stream(client, name + "-mine", kBytes);
  const std::string theirs = new_stream(client, name + "-theirs", kBytes);
  auto body = [&](const std::string& stream) { return R"({"path":")" + path_of(stream) + fault; };
  ASSERT_EQ(client.post(base + endpoint, "application/json", body(theirs), {}).status, 200);
  set(client, base, body(mine));
  ASSERT_EQ(client.post(mine, kBytes, "x", {}).status, 503);  // the fault is in place

  clear(client, base);

  EXPECT_LT(client.post(mine, kBytes, "x", {}).status, 300);
  EXPECT_EQ(client.post(theirs, kBytes, "x", {}).status, 503);  // left: its path is this test's only
}

TEST(SharedServer, ClearingFaultsLeavesThoseOfOtherProcesses) {
  expect_clear_leaves_other_processes(
      "clear", "/_test/inject-error", R"(","method":"POST","status":503,"count":10})",
      [](TestClient& c, const std::string& base, const std::string& body) { c.inject_fault(base, body); },
      [](TestClient& c, const std::string& base) { c.clear_faults(base); });
}

TEST(SharedServer, ClearingAFaultMixLeavesThoseOfOtherProcesses) {
  expect_clear_leaves_other_processes(
      "mix", "/_test/fault-mix", R"(","method":"POST","probability":1,"faults":[{"status":503}]})",
      [](TestClient& c, const std::string& base, const std::string& body) { c.set_fault_mix(base, body); },
      [](TestClient& c, const std::string& base) { c.clear_fault_mix(base); });
}

}  // namespace
}  // namespace prodsm::test
