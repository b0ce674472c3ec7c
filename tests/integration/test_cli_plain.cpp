// SPDX-License-Identifier: Apache-2.0
// `prodsm produce --no-producer-id`: plain appends, no deduplication. Their order is
// kept only one batch at a time: batches pipelined behind one the server refuses (503,
// 429) may be appended before its resend (contract E4). So the CLI sends one batch at a
// time unless --max-in-flight is given.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "prodsm/ds/http_codec.hpp"

namespace prodsm::test {
namespace {

// 4,000 numbered lines in ~100-byte batches while 10% of the stream's POSTs are
// answered 503: every refused batch is resent, and the stream still holds the input in
// order, exactly once (plain appends: a refused batch was not appended).
class CliPlainAppends : public CliServerTest {
 protected:
  CliPlainAppends() : CliServerTest("cli-plain") {}
};

TEST_F(CliPlainAppends, KeepTheInputOrderWhileTheServerRefusesBatches) {
  ReferenceServer& server = ReferenceServer::shared();
  const std::string u = url("order");
  client.create(u, "application/octet-stream");
  nlohmann::json mix;
  mix["path"] = ds::StreamUrl::parse(u)->path;
  mix["method"] = "POST";
  mix["probability"] = 0.1;
  mix["seed"] = 11;
  mix["faults"] = nlohmann::json::array({{{"status", 503}, {"retryAfter", 0}}});
  client.set_fault_mix(server.url(), mix.dump());
  std::string input;
  for (int i = 0; i < 4000; ++i) input += std::to_string(i) + "\n";
  const CliRun r = prodsm("produce " + u + " --no-producer-id --max-batch-bytes 100 --linger-ms 0", input);
  const std::string counts = client.fault_mix_counts(server.url());
  client.clear_fault_mix(server.url());
  EXPECT_EQ(r.status, 0) << r.err;
  const auto injected = nlohmann::json::parse(counts, nullptr, false);
  ASSERT_TRUE(injected.is_object() && injected.contains(mix["path"].get<std::string>())) << counts;
  EXPECT_GE(injected[mix["path"].get<std::string>()]["injected"][0].get<int>(), 10)
      << "the test means something only if many batches were refused: " << counts;
  EXPECT_EQ(client.read_all(u, false), input) << "faults injected: " << counts << "\n" << r.out << r.err;
}

}  // namespace
}  // namespace prodsm::test
