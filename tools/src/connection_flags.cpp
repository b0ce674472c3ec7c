// SPDX-License-Identifier: Apache-2.0
#include "connection_flags.hpp"

#include <memory>
#include <string_view>
#include <utility>

#include "header_sources.hpp"
#include "prodsm/http/detail/text.hpp"

namespace prodsm::tools {

void add_connection_flags(CLI::App& cmd, ConnectionFlags& f) {
  cmd.add_option("--cacert", f.cacert, "https: trust the CA certificates in this PEM file (default: the system's)");
  cmd.add_option("--capath", f.capath, "https: trust the CA certificates in this directory (OpenSSL hashed layout)");
  cmd.add_option("--cert", f.cert, "https: client certificate (PEM) for mutual TLS");
  cmd.add_option("--key", f.key, "https: private key of --cert (default: read from --cert)");
  cmd.add_flag("--insecure", f.insecure, "https: do not verify the server's certificate or name (test endpoints only)");
  cmd.add_option("--bearer-token-file", f.bearer_token_file,
                 "Send 'Authorization: Bearer <contents of FILE>' on every request; the file is read again "
                 "whenever it changes (a rotated token is used from the next request on)");
  cmd.add_option("--header-command", f.header_command,
                 "Run this shell command for request headers (it prints 'Name: value' lines); its output is "
                 "used for --header-ttl seconds, then it runs again");
  cmd.add_option("--header-ttl", f.header_ttl_s, "Seconds a --header-command output is used, 1..86400")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86'400}))
      ->capture_default_str();
}

std::optional<std::string> apply_connection_flags(const ConnectionFlags& f, bool https,
                                                  http::TransportOptions& transport, HeaderProvider& provider,
                                                  const std::vector<FixedHeader>& fixed, http::HeaderRule rule) {
  if (!https) {
    for (const auto& [given, flag] : {std::pair{!f.cacert.empty(), "--cacert"},
                                      {!f.capath.empty(), "--capath"},
                                      {!f.cert.empty(), "--cert"},
                                      {!f.key.empty(), "--key"},
                                      {f.insecure, "--insecure"}}) {
      if (given) {
        return std::string{flag} +
               ": is for https:// URLs, and this one is http:// (the run would send in clear text); use "
               "https:// or leave the flag out";
      }
    }
  }
  transport.tls.ca_file = f.cacert;
  transport.tls.ca_dir = f.capath;
  transport.tls.cert_file = f.cert;
  transport.tls.key_file = f.key;
  transport.tls.insecure = f.insecure;
  if (!f.key.empty() && f.cert.empty()) return std::string{"--key: needs --cert"};
  if (!f.bearer_token_file.empty() && !f.header_command.empty()) {
    return std::string{"--bearer-token-file and --header-command: give one source of request headers"};
  }
  if (!f.bearer_token_file.empty()) {
    for (const auto& h : fixed) {
      if (http::detail::iequals(h.name, "Authorization")) {
        return "--bearer-token-file: an Authorization header is also set on every request (by " + h.source + ")";
      }
    }
    auto source = std::make_shared<BearerTokenFile>(f.bearer_token_file);
    if (auto first = (*source)(http::RequestInfo{}); !first) return first.error();  // fail before appending
    provider = [source](const http::RequestInfo& r) { return (*source)(r); };
  } else if (!f.header_command.empty()) {
    auto source = std::make_shared<HeaderCommand>(f.header_command, std::chrono::seconds{f.header_ttl_s}, rule);
    auto first = (*source)(http::RequestInfo{});  // runs it once now: a broken command fails before appending
    if (!first) return first.error();
    for (const auto& h : first->headers) {
      for (const auto& set : fixed) {
        if (http::detail::iequals(set.name, h.name)) {
          return "--header-command: header '" + h.name + "' is also set on every request (by " + set.source + ")";
        }
      }
    }
    provider = [source](const http::RequestInfo& r) { return (*source)(r); };
  }
  return std::nullopt;
}

std::string in_flag_terms(std::string message) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"tls.ca_file", "--cacert"}, {"tls.ca_dir", "--capath"},     {"tls.cert_file", "--cert"},
      {"tls.key_file", "--key"},   {"tls.insecure", "--insecure"},
  };
  constexpr std::string_view kSession = "session.";  // the producer's options name it session.tls.*
  for (const auto& [name, flag] : kNames) {
    for (auto at = message.find(name); at != std::string::npos; at = message.find(name, at + flag.size())) {
      const bool in_session =
          at >= kSession.size() && message.compare(at - kSession.size(), kSession.size(), kSession) == 0;
      const auto from = in_session ? at - kSession.size() : at;
      message.replace(from, name.size() + (at - from), flag);
      at = from;
    }
  }
  return message;
}

std::string plain_http_at_tls_port_hint(std::string_view url, const Error& error) {
  // A delivery timeout names the last failure it retried.
  const bool lost =
      error.code == ErrorCode::connection_lost ||
      (error.code == ErrorCode::delivery_timeout && error.message.find("connection_lost") != std::string::npos);
  if (!http::detail::istarts_with(url, "http://") || !lost ||
      error.message.find("the server closed the connection") == std::string::npos ||
      error.message.find("after an earlier response") != std::string::npos) {
    return {};
  }
  return "the server closed the connection without answering: if it speaks TLS at this port, use https://";
}

}  // namespace prodsm::tools
