// SPDX-License-Identifier: Apache-2.0
// examples/epoll_producer.cpp, built by the project, run against the reference server:
// from a file (a regular file: read when the producer has room) and from a pipe (watched
// by epoll); the stream is read back and must equal the input.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

std::string write_input(const std::string& name) {
  std::string text;
  for (int i = 0; i < 200'000; ++i) text += "line " + std::to_string(i) + " of the epoll example\n";
  text += "a last line without newline";
  const std::string path = ::testing::TempDir() + name + "-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Example, EpollProducerAppendsEveryLineOfAFileInOrder) {
  auto& server = ReferenceServer::shared();
  ASSERT_FALSE(server.url().empty()) << server.error();
  TestClient client;
  const std::string url = server.stream_url("epoll-file");
  client.create(url, "application/octet-stream");
  const std::string input = write_input("epoll-file");
  ASSERT_EQ(run(std::string(PRODSM_EPOLL_PRODUCER) + " " + url + " " + input), 0);
  EXPECT_EQ(client.read_all(url, false), slurp(input));
  std::remove(input.c_str());
}

TEST(Example, EpollProducerAppendsEveryLineFromAPipeInOrder) {
  auto& server = ReferenceServer::shared();
  ASSERT_FALSE(server.url().empty()) << server.error();
  TestClient client;
  const std::string url = server.stream_url("epoll-pipe");
  client.create(url, "application/octet-stream");
  const std::string input = write_input("epoll-pipe");
  ASSERT_EQ(run("cat " + input + " | " + PRODSM_EPOLL_PRODUCER + " " + url), 0);
  EXPECT_EQ(client.read_all(url, false), slurp(input));
  std::remove(input.c_str());
}

// The example runs prodsm's shared client and pool, so it survives what the adapters
// survive: drops, 503, 500 and 429 mixed into 30% of its POSTs (its batches are 1 MiB, so
// a run has few) (E4).
TEST(Example, EpollProducerSurvivesMixedFaults) {
  auto& server = ReferenceServer::shared();
  ASSERT_FALSE(server.url().empty()) << server.error();
  TestClient client;
  const std::string url = server.stream_url("epoll-faults");
  client.create(url, "application/octet-stream");
  const std::string path = ds::StreamUrl::parse(url)->path;
  client.set_fault_mix(server.url(), R"({"path":")" + path +
                                         R"(","method":"POST","probability":0.3,"seed":5,"faults":[)"
                                         R"({"dropConnection":true},{"status":503},{"status":500},)"
                                         R"({"status":429,"retryAfter":0}]})");
  const std::string input = write_input("epoll-faults");
  const int status = run(std::string(PRODSM_EPOLL_PRODUCER) + " " + url + " " + input);
  const std::string counts = client.fault_mix_counts(server.url());
  client.clear_fault_mix(server.url());
  ASSERT_EQ(status, 0);
  EXPECT_EQ(client.read_all(url, false), slurp(input));
  const auto injected = nlohmann::json::parse(counts, nullptr, false);
  int total = 0;
  if (injected.is_object() && injected.contains(path)) {
    for (const auto& n : injected[path]["injected"]) total += n.get<int>();
  }
  EXPECT_GT(total, 0) << "no fault happened: " << counts;
  std::remove(input.c_str());
}

}  // namespace
}  // namespace prodsm::test
