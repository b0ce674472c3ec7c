// SPDX-License-Identifier: Apache-2.0
// examples/blocking_producer.cpp and examples/asio_producer.cpp (the README's producers as
// programs), built by the project and run against the reference server: each run twice
// against one stream (the stream created by the first run), and both runs' records must
// be in it, in order (S3: a restart starts a fresh epoch, so nothing of the second run is
// deduplicated against the first). Also: bad arguments are exit 2, an unreachable server
// exit 3.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

int run_quietly(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string numbers(int first, int last) {
  std::string s;
  for (int k = first; k <= last; ++k) s += std::to_string(k) + "\n";
  return s;
}

void runs_twice(const std::string& program, const std::string& name) {
  TestClient client;
  const std::string url = ReferenceServer::shared().stream_url(name);
  ASSERT_EQ(run_quietly(program + " " + url + " 5000"), 0) << "first run (creates the stream)";
  ASSERT_EQ(run_quietly(program + " " + url + " 7000"), 0) << "second run (the stream exists)";
  EXPECT_EQ(client.read_all(url, false), numbers(1, 5000) + numbers(1, 7000))
      << "both runs' records, each exactly once, in order";
  EXPECT_EQ(run_quietly(program + " " + url), 2) << "missing COUNT";
  EXPECT_EQ(run_quietly(program + " " + url + " 12x"), 2) << "COUNT not a number";
  EXPECT_EQ(run_quietly(program + " ftp://x/y 1"), 2) << "unsupported URL";
  EXPECT_EQ(run_quietly(program + " http://127.0.0.1:1/nothing-listens 1"), 3) << "unreachable server";
}

TEST(S3, BlockingProducerExampleRunsTwiceAndKeepsBothRuns) {
  runs_twice(PRODSM_EXAMPLE_BLOCKING_PRODUCER, "example-blocking");
}

TEST(S3, AsioProducerExampleRunsTwiceAndKeepsBothRuns) {
  runs_twice(PRODSM_EXAMPLE_ASIO_PRODUCER, "example-asio");
}

}  // namespace
}  // namespace prodsm::test
