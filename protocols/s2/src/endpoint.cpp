// SPDX-License-Identifier: Apache-2.0
// S2 endpoints (cloud, custom URL) and the checks of names, tokens and caller-supplied
// headers that every request makes (http_codec.hpp; s2 `common/src/basin.rs`,
// `common/src/stream.rs`).
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "prodsm/http/detail/text.hpp"
#include "prodsm/s2/detail/protobuf.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace prodsm::s2 {
namespace text = http::detail;
namespace {

/// Names the codec writes itself or whose presence would change the framing, the
/// encoding or the meaning of a request.
constexpr std::array<std::string_view, 16> kManagedNames = {
    "Host",     "Content-Length", "Transfer-Encoding", "Connection",       "Keep-Alive",   "Upgrade", "TE",
    "Trailer",  "Expect",         "Accept-Encoding",   "Content-Encoding", "Content-Type", "Accept",  "Authorization",
    "s2-basin", "s2-format",
};

bool is_basin_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

}  // namespace

// ---- names and headers ---------------------------------------------------------------

std::optional<std::string> check_basin_name(std::string_view basin) {
  if (basin.size() < 8 || basin.size() > 48) {
    return "basin name must be 8..48 bytes (got " + std::to_string(basin.size()) + ")";
  }
  if (!is_basin_char(basin.front()) || !is_basin_char(basin.back())) {
    return std::string{"basin name must begin and end with a lowercase letter or digit"};
  }
  for (const char c : basin) {
    if (!is_basin_char(c) && c != '-') return std::string{"basin name must be lowercase letters, digits and hyphens"};
  }
  return std::nullopt;
}

std::optional<std::string> check_stream_name(std::string_view stream) {
  if (stream.empty()) return std::string{"stream name must not be empty"};
  if (stream.size() > 512) return "stream name must be at most 512 bytes (got " + std::to_string(stream.size()) + ")";
  if (stream == "." || stream == "..") return std::string{"stream name must not be \".\" or \"..\""};
  if (!detail::is_valid_utf8(stream)) return std::string{"stream name must be valid UTF-8"};
  return std::nullopt;
}

std::optional<std::string> check_access_token(std::string_view token) {
  if (token.empty()) return std::string{"access token is empty"};
  for (const char c : token) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x21 || b > 0x7E) return std::string{"access token must be visible ASCII (no space or control byte)"};
  }
  return std::nullopt;
}

namespace {

/// check_extra_header, and check_provided_header when `provided`.
std::optional<std::string> check_header(const http::Header& header, bool provided) {
  try {
    if (header.name.empty()) return std::string{"empty header name"};
    for (const char c : header.name) {
      if (!text::is_tchar(c)) return "header name " + text::quoted(header.name) + " is not an HTTP token";
    }
    for (const std::string_view managed : kManagedNames) {
      if (provided && managed == "Authorization") continue;  // a per-request token
      if (text::iequals(header.name, managed))
        return "header " + text::quoted(header.name) + " is managed by the codec";
    }
    for (const char c : header.value) {
      const auto b = static_cast<unsigned char>(c);
      if ((b < 0x20 && c != '\t') || b == 0x7F) {
        return "header " + text::quoted(header.name) + " value contains a control character (CR, LF, NUL, ...)";
      }
    }
    return std::nullopt;
  } catch (...) {
    return std::string{};  // refused, without text: no memory for one
  }
}

}  // namespace

std::optional<std::string> check_extra_header(const http::Header& header) {
  return check_header(header, false);
}

std::optional<std::string> check_provided_header(const http::Header& header) {
  return check_header(header, true);
}

// ---- endpoints -----------------------------------------------------------------------

tl::expected<Endpoint, std::string> Endpoint::cloud(std::string_view basin) {
  if (auto why = check_basin_name(basin)) return tl::unexpected(std::move(*why));
  Endpoint e;
  e.host = std::string{basin} + ".b.s2.dev";
  e.port = 443;
  e.tls = true;
  e.base_path = "/v1";
  e.basin = std::string{basin};
  e.basin_header = false;
  return e;
}

tl::expected<Endpoint, std::string> Endpoint::custom(std::string_view url, std::string_view basin) {
  if (auto why = check_basin_name(basin)) return tl::unexpected(std::move(*why));
  Endpoint e;
  std::string_view rest;
  if (text::istarts_with(url, "http://")) {
    e.tls = false;
    e.port = 80;
    rest = url.substr(7);
  } else if (text::istarts_with(url, "https://")) {
    e.tls = true;
    e.port = 443;
    rest = url.substr(8);
  } else {
    return tl::unexpected(std::string{"endpoint must start with http:// or https://"});
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return tl::unexpected(std::string{"endpoint must not contain a query or fragment"});
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return tl::unexpected(std::string{"endpoint must not contain user information"});
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return tl::unexpected(std::string{"endpoint has an unclosed IPv6 literal"});
    e.host = std::string{authority.substr(1, close - 1)};
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return tl::unexpected(std::string{"endpoint has bytes after its IPv6 literal"});
      port_text = after.substr(1);
      if (port_text.empty()) return tl::unexpected(std::string{"endpoint has an empty port"});
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
      if (port_text.empty()) return tl::unexpected(std::string{"endpoint has an empty port"});
    }
    e.host = std::string{authority};
  }
  if (e.host.empty()) return tl::unexpected(std::string{"endpoint has no host"});
  if (!port_text.empty()) {
    std::uint32_t port = 0;
    if (port_text.size() > 5) return tl::unexpected(std::string{"endpoint port must be 1..65535"});
    for (const char c : port_text) {
      if (c < '0' || c > '9') return tl::unexpected(std::string{"endpoint port must be decimal digits"});
      port = port * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (port == 0 || port > 65535) return tl::unexpected(std::string{"endpoint port must be 1..65535"});
    e.port = static_cast<std::uint16_t>(port);
  }
  std::string_view p = path;
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  // No path, or only '/' ("http://host:port/"): the API's own `/v1`. No S2 server
  // answers at the root, so a bare '/' is taken as "no path", not as an empty base path.
  e.base_path = p.empty() ? "/v1" : std::string{p};
  e.basin = std::string{basin};
  e.basin_header = true;
  if (auto why = check_request_target(e, "x", {})) return tl::unexpected(std::move(*why));
  return e;
}

std::string Endpoint::authority() const {
  std::string a = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80)) {
    a += ':';
    text::append_decimal(a, port);
  }
  return a;
}

}  // namespace prodsm::s2
