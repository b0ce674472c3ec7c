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

TEST(SharedServer, ClearingFaultsLeavesThoseOfOtherProcesses) {
  TestClient client;
  const std::string base = ReferenceServer::shared().url();
  ASSERT_FALSE(base.empty()) << ReferenceServer::shared().error();
  const std::string mine = new_stream(client, "clear-mine", kBytes);
  const std::string theirs = new_stream(client, "clear-theirs", kBytes);
  const std::string fault = R"(","method":"POST","status":503,"count":10})";
  // "theirs" injected as another test process would: not through this process's clients.
  ASSERT_EQ(client.post(base + "/_test/inject-error", "application/json", R"({"path":")" + path_of(theirs) + fault, {})
                .status,
            200);
  client.inject_fault(base, R"({"path":")" + path_of(mine) + fault);
  ASSERT_EQ(client.post(mine, kBytes, "x", {}).status, 503);  // the fault is in place

  client.clear_faults(base);

  EXPECT_LT(client.post(mine, kBytes, "x", {}).status, 300);
  EXPECT_EQ(client.post(theirs, kBytes, "x", {}).status, 503);  // left: its path is this test's only
}

TEST(SharedServer, ClearingAFaultMixLeavesThoseOfOtherProcesses) {
  TestClient client;
  const std::string base = ReferenceServer::shared().url();
  ASSERT_FALSE(base.empty()) << ReferenceServer::shared().error();
  const std::string mine = new_stream(client, "mix-mine", kBytes);
  const std::string theirs = new_stream(client, "mix-theirs", kBytes);
  const std::string mix = R"(","method":"POST","probability":1,"faults":[{"status":503}]})";
  ASSERT_EQ(
      client.post(base + "/_test/fault-mix", "application/json", R"({"path":")" + path_of(theirs) + mix, {}).status,
      200);
  client.set_fault_mix(base, R"({"path":")" + path_of(mine) + mix);
  ASSERT_EQ(client.post(mine, kBytes, "x", {}).status, 503);

  client.clear_fault_mix(base);

  EXPECT_LT(client.post(mine, kBytes, "x", {}).status, 300);
  EXPECT_EQ(client.post(theirs, kBytes, "x", {}).status, 503);
}

}  // namespace
}  // namespace prodsm::test
