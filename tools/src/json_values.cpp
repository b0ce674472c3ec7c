// SPDX-License-Identifier: Apache-2.0
// JSON values as a JSON-mode server keeps them (json_values.hpp), on nlohmann/json: its
// SAX interface hands every number over with its text, which the exactness check needs.
#include "json_values.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace prodsm::tools {
namespace {

/// The fewest significant digits that read back as `d`, in scientific form: what a
/// JavaScript server keeps and writes (1e20 as 100000000000000000000, 2^63 as
/// 9223372036854776000). Not to_chars' default form: where fixed notation is shorter, it
/// writes every digit of the integer (9223372036854775808), more digits than the double
/// holds.
std::string fewest_digits(double d) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), d, std::chars_format::scientific);
  return {buf.data(), r.ptr};
}

/// A decimal number's value as 0.DIGITS × 10^exponent: no leading or trailing zero in
/// `digits`; zero (of either sign) has no digits. Two JSON number texts have the same
/// value exactly when their Decimals are equal.
struct Decimal {
  bool negative = false;
  std::string digits;
  std::int64_t exponent = 0;
  bool operator==(const Decimal&) const = default;
};

/// The Decimal of a JSON number text (or of to_chars' output: the same grammar, with
/// "e+NN"). The exponent saturates at ±10^12, far past any double.
Decimal decimal_of(std::string_view text) {
  Decimal d;
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::int64_t point = 0;  // digits kept before the decimal point
  bool after_point = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    const char c = text[i];
    if (c == '.') {
      after_point = true;
      continue;
    }
    if (c == '0' && d.digits.empty()) {
      if (after_point) --point;  // a leading zero after the point shifts the value down
      continue;
    }
    d.digits.push_back(c);
    if (!after_point) ++point;
  }
  std::int64_t exponent = 0;
  if (i < text.size()) {
    ++i;  // 'e' or 'E'
    bool negative_exponent = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative_exponent = text[i++] == '-';
    constexpr std::int64_t kSaturated = 1'000'000'000'000;
    for (; i < text.size(); ++i) exponent = std::min(kSaturated, exponent * 10 + (text[i] - '0'));
    if (negative_exponent) exponent = -exponent;
  }
  while (!d.digits.empty() && d.digits.back() == '0') d.digits.pop_back();
  if (d.digits.empty()) return Decimal{};
  d.exponent = point + exponent;
  return d;
}

/// `d` as a JavaScript server writes it (Number.prototype.toString): its fewest digits,
/// in fixed notation from 1e-6 up to below 1e21, else as d.ddde±x. For messages only.
std::string javascript_text(double d) {
  const Decimal dec = decimal_of(fewest_digits(d));  // value = 0.digits × 10^n
  if (dec.digits.empty()) return "0";
  const std::string& digits = dec.digits;
  const auto k = static_cast<std::int64_t>(digits.size());
  const std::int64_t n = dec.exponent;
  std::string out = dec.negative ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits + std::string(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<std::size_t>(n)) + "." + digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0." + std::string(static_cast<std::size_t>(-n), '0') + digits;
  } else {
    out += digits.substr(0, 1) + (k > 1 ? "." + digits.substr(1) : std::string{}) + "e" + (n - 1 >= 0 ? "+" : "-") +
           std::to_string(n - 1 >= 0 ? n - 1 : 1 - n);
  }
  return out;
}

std::string loss_message(std::string_view number, double held) {
  std::string m = "the number ";
  m += number;
  m += " is not exactly a double: a JSON server keeps it as ";
  m += javascript_text(held);
  m += " (RFC 8259 section 6); quote it as a string to keep it exactly";
  return m;
}

/// Finds the first number a double does not hold exactly.
struct LossFinder {
  using json = nlohmann::json;
  std::optional<std::string> loss;

  template <class Integer>
  bool integer(Integer v) {
    const auto d = static_cast<double>(v);
    // 2^63 / 2^64 are past the type's range, so compare there before converting back.
    constexpr double kPastRange = static_cast<double>(std::numeric_limits<Integer>::max() / 2 + 1) * 2.0;
    if (d >= kPastRange || static_cast<Integer>(d) != v) loss = loss_message(std::to_string(v), d);
    return !loss;
  }

  bool null() { return true; }
  bool boolean(bool /*unused*/) { return true; }
  bool number_integer(json::number_integer_t v) { return integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return integer(v); }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    if (decimal_of(text) != decimal_of(fewest_digits(v))) loss = loss_message(text, v);
    return !loss;
  }
  bool string(json::string_t& /*unused*/) { return true; }
  bool binary(json::binary_t& /*unused*/) { return true; }
  bool start_object(std::size_t /*unused*/) { return true; }
  bool key(json::string_t& /*unused*/) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t /*unused*/) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t /*unused*/, const std::string& /*unused*/,
                   const nlohmann::detail::exception& /*unused*/) {
    return false;
  }
};

/// Every number of `j` as a double (-0 as 0), recursively (the depth is bounded by the parse).
void numbers_as_doubles(nlohmann::json& j) {
  if (j.is_structured()) {
    for (auto& child : j) numbers_as_doubles(child);
  } else if (j.is_number_integer() || j.is_number_unsigned() || j.is_number_float()) {
    const double d = j.get<double>();
    j = d == 0.0 ? 0.0 : d;
  }
}

}  // namespace

bool has_long_digit_run(std::string_view text) noexcept {
  constexpr int kLongRun = 16;  // DBL_DIG (15) significant digits always survive
  int run = 0;
  for (const char c : text) {
    if (c >= '0' && c <= '9') {
      if (++run >= kLongRun) return true;
    } else if (c != '.') {
      run = 0;
    }
  }
  return false;
}

bool has_large_negative_exponent(std::string_view text) noexcept {
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if ((text[i] != 'e' && text[i] != 'E') || text[i + 1] != '-') continue;
    std::size_t digits = 0;
    for (std::size_t k = i + 2; k < text.size() && text[k] >= '0' && text[k] <= '9'; ++k) ++digits;
    if (digits >= 3) return true;
  }
  return false;
}

std::optional<std::string> double_loss(std::string_view text) {
  LossFinder finder;
  nlohmann::json::sax_parse(text.begin(), text.end(), &finder);
  return finder.loss;
}

std::optional<std::string> canonical_json(std::string_view text) {
  bool too_deep = false;
  const auto depth_check = [&too_deep](int depth, nlohmann::json::parse_event_t event, nlohmann::json& /*unused*/) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      too_deep = true;
    }
    return !too_deep;
  };
  auto value = nlohmann::json::parse(text.begin(), text.end(), depth_check, false);
  if (too_deep || value.is_discarded()) return std::nullopt;
  numbers_as_doubles(value);
  return value.dump();
}

}  // namespace prodsm::tools
