// SPDX-License-Identifier: Apache-2.0
// ASCII helpers shared by the HTTP layer and the protocol codecs; Response::header.
#include "prodsm/http/detail/text.hpp"

#include <array>
#include <charconv>
#include <optional>

#include "prodsm/http/message.hpp"

namespace prodsm::http {
namespace detail {

namespace {
constexpr std::string_view kHexDigits = "0123456789ABCDEF";
}  // namespace

void append_decimal(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), result.ptr);
}

void append_percent_encoded_byte(std::string& out, unsigned char byte) {
  out += '%';
  out += kHexDigits[byte >> 4U];
  out += kHexDigits[byte & 0x0FU];
}

void append_query_component(std::string& out, std::string_view text) {
  for (const char c : text) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      append_percent_encoded_byte(out, static_cast<unsigned char>(c));
    }
  }
}

void append_excerpt(std::string& out, std::string_view text, std::size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHexDigits[byte >> 4U];
      out += kHexDigits[byte & 0x0FU];
    }
  }
  if (cut) out += "...";
}

std::string quoted(std::string_view text) {
  std::string out = "'";
  append_excerpt(out, text, 64);
  out += '\'';
  return out;
}

}  // namespace detail

std::optional<std::string_view> Response::header(std::string_view name) const {
  for (const Header& h : headers) {
    if (detail::iequals(h.name, name)) return std::string_view{h.value};
  }
  return std::nullopt;
}

}  // namespace prodsm::http
