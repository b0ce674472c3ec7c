// SPDX-License-Identifier: Apache-2.0
#include "tls_endpoint.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace prodsm::test {

const std::string& tls_certs() {
  static const std::string dir = [] {
    const std::string d = ::testing::TempDir() + "prodsm-certs-" + std::to_string(::getpid());
    const std::string command = std::string(PRODSM_SOURCE_DIR) + "/tests/tls/make-certs.sh " + d + " >/dev/null";
    if (std::system(command.c_str()) != 0) {
      ADD_FAILURE() << "tests/tls/make-certs.sh failed (is the openssl command installed?)";
      return std::string{};
    }
    return d;
  }();
  return dir;
}

TlsEndpoint::TlsEndpoint(const std::string& cert_name, const std::vector<std::string>& extra) {
  auto& plain = ReferenceServer::shared();
  const std::string target = plain.url().substr(plain.url().find("://") + 3);
  const std::string own_key = tls_certs() + "/" + cert_name + ".key";
  const bool has_own_key = std::ifstream(own_key).good();
  std::vector<std::string> args{"--cert",   tls_certs() + "/" + cert_name + ".pem",
                                "--key",    has_own_key ? own_key : tls_certs() + "/server.key",
                                "--target", target};
  args.insert(args.end(), extra.begin(), extra.end());
  node_ = std::make_unique<NodeServer>("tls-proxy.mjs", args);
  if (node_->url().empty()) ADD_FAILURE() << "tls-proxy.mjs: " << node_->error();
}

std::string TlsEndpoint::secure(const std::string& plain_stream_url) const {
  const std::size_t path = plain_stream_url.find('/', plain_stream_url.find("://") + 3);
  return url() + plain_stream_url.substr(path);
}

}  // namespace prodsm::test
