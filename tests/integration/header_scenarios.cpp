// SPDX-License-Identifier: Apache-2.0
// Per-request headers on every adapter (HeaderProvider, prodsm/header_provider.hpp): the
// provider is asked for every request attempt, retries included; a bearer token that
// rotates during a long run is picked up while the server checks it on every request; a
// provider that fails or throws fails that attempt (header_provider_failed, definite,
// retried within the policy), never the process; a header the codec manages is refused.
// Issue "Production endpoints" (per-request headers); E2, E4, S2.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "scenario_support.hpp"
#include "test_client.hpp"
#include "tls_endpoint.hpp"

namespace prodsm::test {
namespace {

using Fields = tl::expected<http::RequestFields, std::string>;

/// Writes `text` to `path` atomically (a reader sees the old or the new contents).
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

/// Submits `n` records "<tag> i\n" and flushes; appends them to `expected`.
void produce(ProducerUnderTest& producer, const std::string& tag, int n, std::string& expected) {
  for (int i = 0; i < n; ++i) {
    std::string record = tag + " " + std::to_string(i) + "\n";
    ASSERT_TRUE(producer.submit(record).has_value());
    expected += record;
  }
  auto r = producer.flush(kWait);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
}

// Every attempt asks the provider again: a batch answered 503 twice is sent three times,
// with three provider calls, and is appended once.
TEST_P(Scenario, HeaderProviderIsAskedForEveryAttemptRetriesIncluded) {
  const std::string url = server().stream_url("hdr-attempts");
  const std::string path = url.substr(server().url().size());
  TestClient client;
  client.create(url, "application/octet-stream");
  auto calls = std::make_shared<std::atomic<int>>(0);
  ProducerSetup setup{url, "application/octet-stream", idempotent("hdr-attempts"), without_stall_detection()};
  setup.header_provider = [calls](const http::RequestInfo& info) -> Fields {
    http::RequestFields f;
    if (info.method == "POST") f.headers.push_back({"X-Attempt", std::to_string(++*calls)});
    return f;
  };
  auto producer = GetParam().make(setup);
  client.inject_fault(server().url(), R"({"path":")" + path + R"(","method":"POST","status":503,"count":2})");
  ASSERT_TRUE(producer->submit("once\n").has_value());
  auto r = producer->flush(kWait);
  client.clear_faults(server().url());
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  ASSERT_TRUE(producer->close(kWait).has_value());
  EXPECT_EQ(calls->load(), 3) << "one provider call per attempt";
  EXPECT_EQ(producer->stats().retries, 2U);
  EXPECT_EQ(client.read_all(url, false), "once\n");
}

// A bearer token rotates during a long run over https:// while the endpoint checks the
// Authorization header of every request (accepting old and new while the rotation
// overlaps, then only the new one): every record exactly once, in order, no request
// refused; a fixed header with the old token is refused after the rotation.
TEST_P(Scenario, BearerTokenRotatesDuringALongRun) {
  const std::string token_file =
      std::filesystem::temp_directory_path() / ("prodsm-token-" + std::to_string(::getpid()) + "-" + GetParam().name);
  write_file(token_file, "Bearer v1\n");
  TlsEndpoint endpoint{"server", {"--header-check", "Authorization:" + token_file}};
  const std::string plain = server().stream_url("hdr-rotate");
  TestClient client;
  client.create(plain, "application/octet-stream");

  auto token = std::make_shared<std::string>("Bearer v1");
  auto mu = std::make_shared<std::mutex>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  ProducerSetup setup{endpoint.secure(plain), "application/octet-stream", idempotent("hdr-rotate"),
                      without_stall_detection()};
  setup.session.tls.ca_file = tls_certs() + "/ca.pem";
  setup.config.max_batch_bytes = 2048;
  setup.header_provider = [token, mu, calls](const http::RequestInfo&) -> Fields {
    ++*calls;
    std::lock_guard lock(*mu);
    http::RequestFields f;
    f.headers.push_back({"Authorization", *token});
    return f;
  };
  auto set_token = [&](const std::string& t) {
    std::lock_guard lock(*mu);
    *token = t;
  };
  auto producer = GetParam().make(setup);
  std::string expected;
  produce(*producer, "v1", 5000, expected);
  write_file(token_file, "Bearer v1\nBearer v2\n");  // the rotation overlaps
  set_token("Bearer v2");
  produce(*producer, "overlap", 5000, expected);
  write_file(token_file, "Bearer v2\n");  // the old token is no longer accepted
  produce(*producer, "v2", 5000, expected);
  ASSERT_TRUE(producer->close(kWait).has_value());
  expect_each_ticket_once_in_order(producer->completions(), 15'000);
  EXPECT_EQ(producer->stats().retries, 0U) << "no request was refused";
  EXPECT_GE(static_cast<std::uint64_t>(calls->load()), producer->stats().batches_sealed);
  EXPECT_GT(producer->stats().batches_sealed, 30U);
  EXPECT_EQ(client.read_all(plain, false), expected);

  // The old token, fixed, is refused now: the check is real.
  ProducerSetup stale{endpoint.secure(plain), "application/octet-stream", idempotent("hdr-stale"),
                      without_stall_detection()};
  stale.session.tls.ca_file = tls_certs() + "/ca.pem";
  stale.header_provider = [](const http::RequestInfo&) -> Fields {
    http::RequestFields f;
    f.headers.push_back({"Authorization", "Bearer v1"});
    return f;
  };
  auto old = GetParam().make(stale);
  ASSERT_TRUE(old->submit("refused\n").has_value());
  auto r = old->flush(kWait);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::rejected) << r.error().describe();
  EXPECT_EQ(r.error().http_status, 401);
  (void)old->close(kWait);
  EXPECT_EQ(client.read_all(plain, false), expected) << "nothing appended with the old token";
  std::remove(token_file.c_str());
}

// A provider that fails, then throws, then works: the failed attempts are definite and
// retried (E4), the record is appended once.
TEST_P(Scenario, AFailingHeaderProviderFailsOnlyThatAttempt) {
  const std::string url = server().stream_url("hdr-flaky");
  TestClient client;
  client.create(url, "application/octet-stream");
  auto calls = std::make_shared<std::atomic<int>>(0);
  ProducerSetup setup{url, "application/octet-stream", idempotent("hdr-flaky"), without_stall_detection()};
  setup.header_provider = [calls](const http::RequestInfo& info) -> Fields {
    if (info.method != "POST") return http::RequestFields{};
    const int n = ++*calls;
    if (n == 1) return tl::unexpected(std::string{"token service unavailable"});
    if (n == 2) throw std::runtime_error("token refresh threw");
    return http::RequestFields{};
  };
  auto producer = GetParam().make(setup);
  ASSERT_TRUE(producer->submit("after two failures\n").has_value());
  auto r = producer->flush(kWait);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  ASSERT_TRUE(producer->close(kWait).has_value());
  EXPECT_EQ(calls->load(), 3);
  EXPECT_EQ(producer->stats().retries, 2U);
  EXPECT_EQ(client.read_all(url, false), "after two failures\n");
}

// A provider that always fails exhausts the retry budget: the records fail with
// header_provider_failed, definite (nothing was sent), naming the cause; nothing is
// appended. A provider header the codec manages (Producer-*) is refused the same way.
TEST_P(Scenario, AProviderThatAlwaysFailsOrSetsAManagedHeaderFailsDefinitely) {
  const std::string url = server().stream_url("hdr-broken");
  TestClient client;
  client.create(url, "application/octet-stream");
  struct Case {
    HeaderProvider provider;
    std::string gist;
  };
  std::vector<Case> cases;
  cases.push_back({[](const http::RequestInfo&) -> Fields { throw std::runtime_error("no credentials"); },
                   "threw: no credentials"});
  cases.push_back({[](const http::RequestInfo&) -> Fields {
                     http::RequestFields f;
                     f.headers.push_back({"Producer-Seq", "99"});
                     return f;
                   },
                   "Producer-Seq"});
  for (auto& c : cases) {
    ProducerSetup setup{url, "application/octet-stream", idempotent("hdr-broken-" + c.gist.substr(0, 5)),
                        without_stall_detection()};
    setup.config.retry.max_attempts = 3;
    setup.header_provider = c.provider;
    auto producer = GetParam().make(setup);
    ASSERT_TRUE(producer->submit("never\n").has_value());
    auto r = producer->flush(kWait);
    ASSERT_FALSE(r.has_value()) << c.gist;
    EXPECT_EQ(r.error().code, ErrorCode::header_provider_failed) << r.error().describe();
    EXPECT_EQ(r.error().certainty, Certainty::definite);
    EXPECT_NE(r.error().message.find(c.gist), std::string::npos) << r.error().describe();
    EXPECT_EQ(producer->stats().retries, 2U) << "retried within the policy";
    (void)producer->close(kWait);
  }
  EXPECT_EQ(client.read_all(url, false), "");
}

}  // namespace
}  // namespace prodsm::test
