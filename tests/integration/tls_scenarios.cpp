// SPDX-License-Identifier: Apache-2.0
// https:// on every adapter: a TLS endpoint (scripts/tls-proxy.mjs, certificates made at
// test time) in front of the reference server. Verification on by default, every TLS
// failure a clear tls_failed error, definite, not retried; mutual TLS; the explicitly
// named insecure mode; SSL_CERT_FILE honoured; connections reused (no handshake per batch).
#include <cstdlib>

#include "scenario_support.hpp"
#include "test_client.hpp"
#include "tls_endpoint.hpp"

namespace prodsm::test {
namespace {

/// A producer setup for `url` trusting the test CA.
ProducerSetup tls_setup(const std::string& url, const std::string& id) {
  ProducerSetup setup{url, "application/octet-stream", idempotent(id), {}};
  setup.session.tls.ca_file = tls_certs() + "/ca.pem";
  return setup;
}

/// Produces one record through `setup` and returns the flush's error (none: success).
std::optional<Error> one_record(const AdapterParam& adapter, const ProducerSetup& setup) {
  auto producer = adapter.make(setup);
  if (!producer->submit("x\n")) return make_error(ErrorCode::internal, Certainty::definite, false, "refused");
  auto r = producer->flush(kWait);
  (void)producer->close(kWait);
  if (r) return std::nullopt;
  return r.error();
}

// Over https:// with the server verified against the test CA: every record exactly once,
// in order, on one connection (no handshake per batch).
TEST_P(Scenario, TlsProducesOverHttpsWithVerification) {
  TlsEndpoint endpoint;
  const std::string plain = server().stream_url("tls");
  TestClient client;
  client.create(plain, "application/octet-stream");
  auto setup = tls_setup(endpoint.secure(plain), "tls-1");
  setup.config.max_batch_bytes = 4096;
  // Asserts no retry: a stall replacement on a slow machine would add one.
  setup.session.stall.enabled = false;
  auto producer = GetParam().make(setup);
  std::string expected;
  for (int i = 0; i < 20'000; ++i) {
    std::string record = "secure " + std::to_string(i) + "\n";
    ASSERT_TRUE(producer->submit(record).has_value());
    expected += record;
  }
  auto r = producer->flush(kWait);
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  ASSERT_TRUE(producer->close(kWait).has_value());
  expect_each_ticket_once_in_order(producer->completions(), 20'000);
  EXPECT_GT(producer->stats().batches_sealed, 20U);
  EXPECT_EQ(producer->stats().retries, 0U);
  EXPECT_EQ(client.read_all(plain, false), expected);
}

/// Checks that a producer to `endpoint` fails with tls_failed (definite, not retryable,
/// never resent) and a message naming `cause`, and appended nothing.
void expect_tls_failure(const AdapterParam& adapter, const std::string& endpoint_url, ProducerSetup setup,
                        const std::string& cause) {
  const std::string plain = server().stream_url("tls-refused");
  TestClient client;
  client.create(plain, "application/octet-stream");
  setup.url = endpoint_url + plain.substr(plain.find('/', plain.find("://") + 3));
  auto producer = adapter.make(setup);
  ASSERT_TRUE(producer->submit("never\n").has_value());
  auto r = producer->flush(kWait);
  ASSERT_FALSE(r.has_value()) << "expected " << cause;
  EXPECT_EQ(r.error().code, ErrorCode::tls_failed) << r.error().describe();
  EXPECT_EQ(r.error().certainty, Certainty::definite) << "nothing was sent";
  EXPECT_FALSE(r.error().retryable);
  EXPECT_NE(r.error().message.find(cause), std::string::npos) << r.error().describe();
  EXPECT_EQ(producer->stats().retries, 0U) << "not retried";
  ASSERT_EQ(producer->completions().size(), 1U);
  EXPECT_EQ(producer->completions()[0].certainty, Certainty::definite);
  (void)producer->close(kWait);
  EXPECT_EQ(client.read_all(plain, false), "");
}

// Every TLS failure is a clear error naming its cause, definite and not retried: a
// server certificate from an unknown CA, one for another host, an expired one, a
// self-signed one, and a server that does not speak TLS at all.
TEST_P(Scenario, TlsFailuresAreDefiniteAndNameTheCause) {
  ProducerSetup trusting = tls_setup("", "tls-bad");
  {
    TlsEndpoint endpoint;  // the right certificate, but the system trust store does not know the test CA
    ProducerSetup system_store = trusting;
    system_store.session.tls.ca_file.clear();
    expect_tls_failure(GetParam(), endpoint.url(), system_store, "unable to get local issuer certificate");
  }
  {
    TlsEndpoint endpoint("wrong-host");
    expect_tls_failure(GetParam(), endpoint.url(), trusting, "mismatch");
  }
  {
    TlsEndpoint endpoint("expired");
    expect_tls_failure(GetParam(), endpoint.url(), trusting, "certificate has expired");
  }
  {
    TlsEndpoint endpoint("self-signed");
    expect_tls_failure(GetParam(), endpoint.url(), trusting, "self-signed certificate");
  }
  {
    const std::string plain_as_https = "https://" + server().url().substr(server().url().find("://") + 3);
    expect_tls_failure(GetParam(), plain_as_https, trusting, "did not answer with TLS");
  }
}

// Mutual TLS: an endpoint that requires a client certificate signed by the test CA
// accepts the test client certificate and refuses a producer without one (tls_failed,
// definite: the server processed nothing).
TEST_P(Scenario, TlsMutualAuthentication) {
  TlsEndpoint endpoint("server", {"--client-ca", tls_certs() + "/ca.pem"});
  {
    auto setup = tls_setup("", "tls-m");
    expect_tls_failure(GetParam(), endpoint.url(), setup, "TLS with 127.0.0.1 failed");
  }
  const std::string plain = server().stream_url("tls-mutual");
  TestClient client;
  client.create(plain, "application/octet-stream");
  auto setup = tls_setup(endpoint.secure(plain), "tls-m2");
  setup.session.tls.cert_file = tls_certs() + "/client.pem";
  setup.session.tls.key_file = tls_certs() + "/client.key";
  EXPECT_EQ(one_record(GetParam(), setup), std::nullopt);
  EXPECT_EQ(client.read_all(plain, false), "x\n");
}

// The explicitly named insecure mode accepts a self-signed certificate; SSL_CERT_FILE is
// honoured as OpenSSL does when no CA is given.
TEST_P(Scenario, TlsInsecureModeAndSslCertFile) {
  {
    TlsEndpoint endpoint("self-signed");
    const std::string plain = server().stream_url("tls-insecure");
    TestClient client;
    client.create(plain, "application/octet-stream");
    ProducerSetup setup{endpoint.secure(plain), "application/octet-stream", idempotent("tls-i"), {}};
    setup.session.tls.insecure = true;
    EXPECT_EQ(one_record(GetParam(), setup), std::nullopt);
    EXPECT_EQ(client.read_all(plain, false), "x\n");
  }
  TlsEndpoint endpoint;
  const std::string plain = server().stream_url("tls-env");
  TestClient client;
  client.create(plain, "application/octet-stream");
  ::setenv("SSL_CERT_FILE", (tls_certs() + "/ca.pem").c_str(), 1);
  ProducerSetup setup{endpoint.secure(plain), "application/octet-stream", idempotent("tls-e"), {}};
  const auto error = one_record(GetParam(), setup);
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(error, std::nullopt);
  EXPECT_EQ(client.read_all(plain, false), "x\n");
}

}  // namespace
}  // namespace prodsm::test
