// SPDX-License-Identifier: Apache-2.0
// ASCII helpers shared by the HTTP codec, and parse_protocol_number.
#include "text.hpp"

#include <array>
#include <charconv>
#include <optional>

#include "prodsm/ds/http_codec.hpp"

namespace prodsm::ds {
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

std::optional<std::uint64_t> parse_protocol_number(std::string_view text) noexcept {
  // Plain decimal digits only: no sign, no space, no exponent. Leading zeros are still
  // decimal (the reference server accepts them). 2^53 - 1 has 16 digits.
  constexpr std::uint64_t kMax = (std::uint64_t{1} << 53U) - 1;
  if (text.empty() || text.size() > 16) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');  // < 10^16: no overflow
  }
  if (value > kMax) return std::nullopt;
  return value;
}

}  // namespace prodsm::ds
