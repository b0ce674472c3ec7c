// SPDX-License-Identifier: Apache-2.0
// Per-request headers and query parameters: checks and insertion into a request's bytes.
#include "prodsm/http/request_fields.hpp"

#include <array>

#include "prodsm/http/detail/text.hpp"

namespace prodsm::http {
namespace {

/// Names that frame the message or belong to one connection (RFC 9110 §7.6.1, RFC 9112
/// §6): a provider may never set them.
constexpr std::array<std::string_view, 10> kFramingNames = {
    "Host",    "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "TE",
    "Trailer", "Expect",         "Proxy-Connection",
};

/// True when the head (request line and header lines, without the final blank line)
/// carries a header named `name`.
bool head_has(std::string_view head, std::string_view name) {
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const std::size_t start = pos + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end == std::string_view::npos ? head.npos : end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && detail::iequals(line.substr(0, colon), name)) return true;
    pos = end;
  }
  return false;
}

std::optional<std::string> check_header(std::string_view head, const Header& h, HeaderRule rule) {
  if (h.name.empty()) return std::string{"empty header name"};
  for (const char c : h.name) {
    if (!detail::is_tchar(c)) return "header name " + detail::quoted(h.name) + " is not an HTTP token";
  }
  for (const std::string_view framing : kFramingNames) {
    if (detail::iequals(h.name, framing)) {
      return "header " + detail::quoted(h.name) + " frames the message: it cannot be provided per request";
    }
  }
  for (const char c : h.value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7F) {
      return "header " + detail::quoted(h.name) + " value contains a control character (CR, LF, NUL, ...)";
    }
  }
  if (head_has(head, h.name)) {
    return "header " + detail::quoted(h.name) + " is already set on the request (it cannot be replaced per request)";
  }
  if (rule != nullptr) {
    if (auto why = rule(h)) return why->empty() ? "header " + detail::quoted(h.name) + " refused" : *why;
  }
  return std::nullopt;
}

/// The bound on how many headers or query parameters a request is given (`what`), or nullopt.
std::optional<std::string> count_bound(std::size_t count, std::string_view what) {
  if (count <= kMaxProvidedFields) return std::nullopt;
  return "more than " + std::to_string(kMaxProvidedFields) + " " + std::string(what) + " (got " +
         std::to_string(count) + ")";
}

/// The bound on the bytes of what a request is given (`what` says which), or nullopt.
std::optional<std::string> bytes_bound(std::size_t bytes, std::string_view what) {
  if (bytes <= kMaxProvidedBytes) return std::nullopt;
  return "more than " + std::to_string(kMaxProvidedBytes) + " bytes " + std::string(what) + " (got " +
         std::to_string(bytes) + ")";
}

}  // namespace

tl::expected<void, std::string> add_request_fields(std::string& bytes, const RequestFields& fields, HeaderRule rule) {
  if (fields.headers.empty() && fields.query_params.empty()) return {};
  const std::size_t head_end = bytes.find("\r\n\r\n");
  const std::size_t line_end = bytes.find("\r\n");
  const std::size_t target_start = bytes.find(' ');
  const std::size_t target_end = target_start == std::string::npos ? target_start : bytes.find(' ', target_start + 1);
  if (head_end == std::string::npos || target_end == std::string::npos || target_end > line_end) {
    return tl::unexpected(std::string{"the request is not an HTTP request head"});
  }
  if (auto why = count_bound(fields.headers.size(), "headers")) return tl::unexpected(std::move(*why));
  if (auto why = count_bound(fields.query_params.size(), "query parameters")) return tl::unexpected(std::move(*why));
  const std::string_view head{bytes.data(), head_end};
  std::string query;
  for (const QueryParam& p : fields.query_params) {
    if (p.name.empty()) return tl::unexpected(std::string{"empty query parameter name"});
    const std::string_view target{bytes.data() + target_start + 1, target_end - target_start - 1};
    query += (query.empty() && target.find('?') == std::string_view::npos) ? '?' : '&';
    detail::append_query_component(query, p.name);
    query += '=';
    detail::append_query_component(query, p.value);
  }
  std::string lines;
  for (const Header& h : fields.headers) {
    if (auto why = check_header(head, h, rule)) return tl::unexpected(std::move(*why));
    lines += h.name;
    lines += ": ";
    lines += h.value;
    lines += "\r\n";
  }
  if (auto why = bytes_bound(query.size() + lines.size(), "of headers and parameters")) {
    return tl::unexpected(std::move(*why));
  }
  // Headers first (they go after the query's insertion point, so its offset holds).
  bytes.insert(head_end + 2, lines);
  bytes.insert(target_end, query);
  return {};
}

std::optional<std::string> check_extra_header_bounds(const Headers& headers) {
  if (auto why = count_bound(headers.size(), "headers")) return why;
  std::size_t bytes = 0;
  for (const Header& h : headers) bytes += h.name.size() + 2 + h.value.size() + 2;
  return bytes_bound(bytes, "as written");
}

}  // namespace prodsm::http
