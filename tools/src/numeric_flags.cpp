// SPDX-License-Identifier: Apache-2.0
#include "numeric_flags.hpp"

#include <cstdio>
#include <cstdlib>

namespace prodsm::tools {
namespace {

/// At most 24 characters of what was typed, for messages.
std::string shown(std::string_view text) {
  if (text.size() <= 24) return std::string(text);
  return std::string(text.substr(0, 20)) + "... (" + std::to_string(text.size()) + " characters)";
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

tl::expected<std::uint64_t, std::string> parse_decimal(std::string_view text, std::uint64_t min, std::uint64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  if (!text.empty() && text.front() == '-' && all_digits(text.substr(1))) {
    return tl::unexpected(shown(text) + " is negative; give a decimal integer in " + range);
  }
  if (!all_digits(text)) {
    return tl::unexpected("'" + shown(text) + "' is not a decimal integer (digits only) in " + range);
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (digit > max || value > (max - digit) / 10) {
      return tl::unexpected(shown(text) + " is too large (at most " + std::to_string(max) + ")");
    }
    value = value * 10 + digit;
  }
  if (value < min) return tl::unexpected(shown(text) + " is out of range (" + range + ")");
  return value;
}

tl::expected<double, std::string> parse_decimal_number(std::string_view text, double max) {
  char max_text[64];
  std::snprintf(max_text, sizeof max_text, "%.15g", max);
  const std::string what = std::string("a decimal number (digits, optionally with a '.' fraction) in 0..") + max_text;
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (!all_digits(whole) || (dot != std::string_view::npos && !all_digits(fraction))) {
    if (!text.empty() && text.front() == '-') return tl::unexpected(shown(text) + " is negative; give " + what);
    return tl::unexpected("'" + shown(text) + "' is not " + what);
  }
  const std::string copy(text);
  const double value = std::strtod(copy.c_str(), nullptr);  // plain decimal: checked above
  if (!(value <= max)) return tl::unexpected(shown(text) + " is too large (at most " + max_text + ")");
  return value;
}

CLI::Option* add_decimal_option(CLI::App& cmd, const std::string& names, std::optional<std::uint64_t>& target,
                                std::uint64_t min, std::uint64_t max, const std::string& help) {
  std::string flag = names.substr(names.rfind(',') == std::string::npos ? 0 : names.rfind(',') + 1);
  auto* option = cmd.add_option_function<std::string>(
      names,
      [&target, min, max, flag](const std::string& text) {
        auto value = parse_decimal(text, min, max);
        if (!value) throw CLI::ValidationError(flag, value.error());
        target = *value;
      },
      help);
  option->type_name("UINT");
  return option;
}

tl::expected<std::uint64_t, std::string> parse_decimal_ms(std::string_view text, std::uint64_t max_ms) {
  const std::string what =
      "a number of milliseconds (digits, optionally with a '.' fraction) in 0.." + std::to_string(max_ms);
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (!all_digits(whole) || (dot != std::string_view::npos && !all_digits(fraction))) {
    if (!text.empty() && text.front() == '-') return tl::unexpected(shown(text) + " is negative; give " + what);
    return tl::unexpected("'" + shown(text) + "' is not " + what);
  }
  auto ms = parse_decimal(whole, 0, max_ms);
  if (!ms) return tl::unexpected(shown(text) + " is too large (at most " + std::to_string(max_ms) + " ms)");
  std::uint64_t ns = *ms * 1'000'000;
  std::uint64_t scale = 100'000;  // the first fraction digit's worth in ns
  for (const char c : fraction) {
    ns += static_cast<std::uint64_t>(c - '0') * scale;  // digits past ns precision add 0
    scale /= 10;
  }
  if (ns > max_ms * 1'000'000)
    return tl::unexpected(shown(text) + " is too large (at most " + std::to_string(max_ms) + " ms)");
  return ns;
}

}  // namespace prodsm::tools
