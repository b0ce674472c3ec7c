// SPDX-License-Identifier: Apache-2.0
// Header rules: which caller-supplied headers may be sent; JSON content types; protocol numbers.
#include <array>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/http/detail/text.hpp"

namespace prodsm::ds {
namespace {

/// Names the codec writes itself or whose presence would change the framing or the
/// meaning of a request (compression, interim responses, upgrades).
constexpr std::array<std::string_view, 15> kManagedNames = {
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Keep-Alive",
    "Upgrade",
    "TE",
    "Trailer",
    "Expect",
    "Accept-Encoding",
    "Content-Type",
    "Stream-Closed",
    "Stream-Seq",
    "Stream-TTL",
    "Stream-Expires-At",
};

std::optional<std::string> check(const Header& header) {
  if (header.name.empty()) return std::string{"empty header name"};
  for (const char c : header.name) {
    if (!http::detail::is_tchar(c)) {
      return "header name " + http::detail::quoted(header.name) + " is not an HTTP token";
    }
  }
  for (const std::string_view managed : kManagedNames) {
    if (http::detail::iequals(header.name, managed)) {
      return "header " + http::detail::quoted(header.name) + " is managed by the codec";
    }
  }
  if (http::detail::istarts_with(header.name, "Producer-")) {
    return "header " + http::detail::quoted(header.name) +
           " is managed by the codec (Producer-* headers come from the producer stamp)";
  }
  for (const char c : header.value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7F) {
      return "header " + http::detail::quoted(header.name) + " value contains a control character (CR, LF, NUL, ...)";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_extra_header(const Header& header) {
  try {
    return check(header);
  } catch (...) {
    return std::string{};  // refused, without text: no memory for one
  }
}

std::string_view media_type(std::string_view content_type) noexcept {
  return http::detail::trim_ows(content_type.substr(0, content_type.find(';')));
}

bool is_json_content_type(std::string_view content_type) noexcept {
  const std::string_view media = media_type(content_type);
  constexpr std::string_view kSuffix = "+json";
  return http::detail::iequals(media, "application/json") ||
         (media.size() > kSuffix.size() && http::detail::iequals(media.substr(media.size() - kSuffix.size()), kSuffix));
}

bool stores_json_messages(std::string_view content_type) noexcept {
  return http::detail::iequals(media_type(content_type), "application/json");
}

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
