// SPDX-License-Identifier: Apache-2.0
#pragma once
// TLS endpoints for the integration tests: certificates made at test time with the
// openssl command (tests/tls/make-certs.sh: a test CA, a server certificate, an expired
// one, one for the wrong host, a self-signed one, a client certificate), and
// scripts/tls-proxy.mjs in front of the shared reference server.

#include <memory>
#include <string>
#include <vector>

#include "reference_server.hpp"

namespace prodsm::test {

/// The directory of this test process's certificates (made on first use); empty, with a
/// test failure, when they could not be made.
const std::string& tls_certs();

/// A TLS endpoint serving `cert_name`.pem (key: server.key, or `cert_name`.key when it
/// has its own) in front of the shared reference server; `extra` are more tls-proxy.mjs
/// arguments (e.g. {"--client-ca", tls_certs() + "/ca.pem"}).
class TlsEndpoint {
 public:
  explicit TlsEndpoint(const std::string& cert_name = "server", const std::vector<std::string>& extra = {});
  /// "https://127.0.0.1:PORT", or empty (with a test failure) when it did not start.
  [[nodiscard]] const std::string& url() const { return node_->url(); }
  /// The https:// URL of `plain_stream_url`'s path (a stream of the reference server).
  [[nodiscard]] std::string secure(const std::string& plain_stream_url) const;

 private:
  std::unique_ptr<NodeServer> node_;
};

}  // namespace prodsm::test
