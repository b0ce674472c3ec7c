// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file text.hpp
/// ASCII helpers shared by the HTTP layer and the protocol codecs (internal: not a
/// stable API).
/// Everything here is locale-free and byte-oriented.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace prodsm::http::detail {

/// ASCII lower case of one byte; other bytes unchanged.
constexpr char ascii_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

/// ASCII case-insensitive equality (header names, "true").
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

/// True when `text` starts with `prefix`, ASCII case-insensitively.
constexpr bool istarts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

/// `text` without leading and trailing spaces and horizontal tabs (HTTP OWS).
constexpr std::string_view trim_ows(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

/// RFC 9110 tchar: the bytes allowed in a header name (token).
constexpr bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~': return true;
    default: return false;
  }
}

/// Appends the decimal digits of `value`.
void append_decimal(std::string& out, std::uint64_t value);

/// Appends `%XX` (upper-case hex) for one byte.
void append_percent_encoded_byte(std::string& out, unsigned char byte);

/// Appends `text` percent-encoded as a URI query component: RFC 3986 unreserved
/// characters (ALPHA, DIGIT, '-', '.', '_', '~') as they are, every other byte as `%XX`.
void append_query_component(std::string& out, std::string_view text);

/// Appends `text` for an error message: at most `max_bytes` bytes, bytes outside
/// printable ASCII written as `\xNN`, and "..." when cut.
void append_excerpt(std::string& out, std::string_view text, std::size_t max_bytes);

/// `'text'` quoted for an error message (see append_excerpt; at most 64 bytes).
std::string quoted(std::string_view text);

}  // namespace prodsm::http::detail
