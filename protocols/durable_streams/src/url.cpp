// SPDX-License-Identifier: Apache-2.0
// StreamUrl: parsing and printing `http[s]://host[:port]/path` stream URLs.
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/http/detail/text.hpp"

namespace prodsm::ds {
namespace {

using http::detail::quoted;

bool is_host_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

bool is_ipv6_char(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

/// 1..65535, plain decimal digits.
std::optional<std::uint16_t> parse_port(std::string_view text) noexcept {
  if (text.empty() || text.size() > 5) return std::nullopt;
  std::uint32_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

tl::expected<StreamUrl, std::string> parse_url(std::string_view url) {
  using Fail = tl::unexpected<std::string>;
  if (url.empty()) return Fail{"empty URL"};
  for (std::size_t i = 0; i < url.size(); ++i) {
    const auto byte = static_cast<unsigned char>(url[i]);
    if (byte <= 0x20 || byte >= 0x7F) {
      std::string message = "URL contains a space, control or non-ASCII character at byte ";
      http::detail::append_decimal(message, i);
      return Fail{std::move(message)};
    }
  }
  StreamUrl out;
  std::string_view rest;
  if (http::detail::istarts_with(url, "https://")) {
    out.tls = true;
    out.port = 443;
    rest = url.substr(8);
  } else if (http::detail::istarts_with(url, "http://")) {
    rest = url.substr(7);
  } else {
    return Fail{"only http:// and https:// URLs are supported"};
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Fail{"URL contains a query or fragment"};
  }
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Fail{"URL contains user info (user@host), which is not supported"};
  }
  if (authority.empty()) return Fail{"missing host"};

  std::string_view port_text;
  bool has_port = false;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Fail{"bad IPv6 literal (missing ']'): " + quoted(authority)};
    }
    const std::string_view literal = authority.substr(1, close - 1);
    bool ok = !literal.empty() && literal.find(':') != std::string_view::npos;
    for (const char c : literal) ok = ok && is_ipv6_char(c);
    if (!ok) return Fail{"bad IPv6 literal: " + quoted(literal)};
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Fail{"bad host: " + quoted(authority)};
      has_port = true;
      port_text = after.substr(1);
    }
    out.host.assign(literal);
  } else {
    const std::size_t colon = authority.find(':');
    const std::string_view host = authority.substr(0, colon);
    if (host.empty()) return Fail{"missing host"};
    for (const char c : host) {
      if (!is_host_char(c)) return Fail{"bad host: " + quoted(host)};
    }
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
    out.host.assign(host);
  }
  if (has_port) {
    const auto port = parse_port(port_text);
    if (!port) return Fail{"bad port (expected 1..65535): " + quoted(port_text)};
    out.port = *port;
  }
  out.path.assign(path);
  return out;
}

}  // namespace

tl::expected<StreamUrl, std::string> StreamUrl::parse(std::string_view url) {
  try {
    return parse_url(url);
  } catch (...) {  // out of memory: refused, without text (D4)
    return tl::unexpected<std::string>{std::string{}};
  }
}

std::string StreamUrl::authority() const {
  try {
    std::string out;
    const bool bracket = host.find(':') != std::string::npos;
    if (bracket) out += '[';
    out += host;
    if (bracket) out += ']';
    if (port != (tls ? 443 : 80)) {
      out += ':';
      http::detail::append_decimal(out, port);
    }
    return out;
  } catch (...) {
    return {};
  }
}

std::string StreamUrl::to_string() const {
  try {
    std::string out = tls ? "https://" : "http://";
    out += authority();
    if (path.empty() || path.front() != '/') out += '/';
    out += path;
    return out;
  } catch (...) {
    return {};
  }
}

}  // namespace prodsm::ds
