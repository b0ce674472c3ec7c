// SPDX-License-Identifier: Apache-2.0
// detail::JsonArraySplitter: element boundaries by a byte scanner, validity by
// JsonValidity (simdjson); and long_integers_as_zero, which shares the scanner's steps.
#include "prodsm/ds/detail/json_elements.hpp"

#include "prodsm/ds/detail/json_validity.hpp"

namespace prodsm::ds::detail {
namespace {

constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string element_error(std::uint64_t index, std::string_view what) {
  std::string m = "the body is not a JSON array of valid JSON values: element ";
  m += std::to_string(index);
  m += ": ";
  m += what;
  return m;
}

/// One byte inside a JSON string: follows a backslash escape and the closing quote.
constexpr void string_byte(char c, bool& in_string, bool& escape) noexcept {
  if (escape) {
    escape = false;
  } else if (c == '\\') {
    escape = true;
  } else if (c == '"') {
    in_string = false;
  }
}

/// An integer literal (-?[1-9][0-9]* or 0) of 19 digits or more: one simdjson's DOM
/// may refuse as beyond 64 bits.
bool is_long_integer(std::string_view token) noexcept {
  if (!token.empty() && token.front() == '-') token.remove_prefix(1);
  if (token.size() < 19 || token.front() == '0') return false;
  for (const char c : token) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> long_integers_as_zero(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool changed = false;
  bool in_string = false;
  bool escape = false;
  std::size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (in_string) {
      string_byte(c, in_string, escape);
      out += c;
      ++i;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t end = i;
      while (end < json.size() && !is_space(json[end]) && json[end] != ',' && json[end] != ']' && json[end] != '}' &&
             json[end] != ':') {
        ++end;
      }
      const std::string_view token = json.substr(i, end - i);
      changed |= is_long_integer(token);
      out += is_long_integer(token) ? std::string_view("0") : token;
      i = end;
    } else {
      in_string = c == '"';
      out += c;
      ++i;
    }
  }
  if (!changed) return std::nullopt;
  return out;
}

namespace {

/// The code unit of the `\uXXXX` escape at json[i] (json[i] == '\\'), or -1.
int escaped_unit(std::string_view json, std::size_t i) noexcept {
  if (i + 6 > json.size() || json[i] != '\\' || json[i + 1] != 'u') return -1;
  int unit = 0;
  for (std::size_t k = i + 2; k < i + 6; ++k) {
    const char c = json[k];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

bool is_high_surrogate(int unit) noexcept {
  return unit >= 0xD800 && unit <= 0xDBFF;
}
bool is_low_surrogate(int unit) noexcept {
  return unit >= 0xDC00 && unit <= 0xDFFF;
}

}  // namespace

std::optional<std::string> lone_surrogates_replaced(std::string_view json) {
  if (json.find("\\u") == std::string_view::npos) return std::nullopt;
  std::string out(json);
  bool changed = false;
  bool in_string = false;
  std::size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (!in_string) {
      in_string = c == '"';
      ++i;
    } else if (c == '"') {
      in_string = false;
      ++i;
    } else if (c != '\\') {
      ++i;
    } else if (const int unit = escaped_unit(json, i); unit < 0) {
      i += 2;  // another escape (\n, \\, ...), or a malformed one simdjson will refuse
    } else if (is_high_surrogate(unit) && is_low_surrogate(escaped_unit(json, i + 6))) {
      i += 12;  // a pair: one code point
    } else if (is_high_surrogate(unit) || is_low_surrogate(unit)) {
      out.replace(i, 6, "\\ufffd");
      changed = true;
      i += 6;
    } else {
      i += 6;
    }
  }
  if (!changed) return std::nullopt;
  return out;
}

JsonArraySplitter::JsonArraySplitter(std::size_t max_element_bytes)
    : validity_{std::make_unique<JsonValidity>()}, max_element_bytes_{max_element_bytes} {}
JsonArraySplitter::~JsonArraySplitter() = default;
JsonArraySplitter::JsonArraySplitter(JsonArraySplitter&&) noexcept = default;
JsonArraySplitter& JsonArraySplitter::operator=(JsonArraySplitter&&) noexcept = default;

void JsonArraySplitter::reset() {
  where_ = Where::before_array;
  seen_bytes_ = false;
  not_an_array_ = false;
  in_string_ = false;
  escape_ = false;
  depth_ = 0;
  current_.clear();
  clear_elements();
  count_ = 0;
}

void JsonArraySplitter::clear_elements() noexcept {
  done_.clear();
  ends_.clear();
  views_.clear();
}

std::optional<std::string> JsonArraySplitter::validate(std::string_view element) {
  auto refusal = validity_->check(element);
  if (refusal && !refusal->out_of_memory) {  // a lone surrogate's escape is JSON too
    if (auto replaced = lone_surrogates_replaced(element)) refusal = validity_->check(*replaced);
  }
  if (refusal) return element_error(count_, refusal->reason);
  return std::nullopt;
}

std::optional<std::string> JsonArraySplitter::complete_element() {
  while (!current_.empty() && is_space(current_.back())) current_.pop_back();
  if (current_.empty()) return element_error(count_, "missing (two delimiters in a row)");
  if (auto why = validate(current_)) return why;
  done_ += current_;
  ends_.push_back(done_.size());
  current_.clear();
  ++count_;
  return std::nullopt;
}

std::optional<std::string> JsonArraySplitter::feed(std::span<const char> bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  std::optional<std::string> failure;
  while (p < end && !failure) {
    if (where_ != Where::inside) {
      const char c = *p++;
      if (is_space(c)) continue;
      seen_bytes_ = true;
      switch (where_) {
        case Where::before_array:
          if (c != '[') {
            failure = "the body is not a JSON array (it does not start with '[')";
            not_an_array_ = true;
          }
          where_ = Where::first;
          break;
        case Where::first:
        case Where::next:
          if (c == ']') {
            if (where_ == Where::next) failure = element_error(count_, "missing before the closing ']'");
            where_ = Where::after_array;
          } else {
            where_ = Where::inside;
            --p;  // the element's first byte is scanned below
          }
          break;
        case Where::after_array: failure = "the body has data after the JSON array's closing ']'"; break;
        case Where::inside: break;
      }
      continue;
    }
    // Inside an element: scan a run of its bytes, then copy the run at once.
    const char* run = p;
    bool ended = false;
    bool array_ended = false;
    while (p < end) {
      const char c = *p;
      if (in_string_) {
        string_byte(c, in_string_, escape_);
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '[' || c == '{') {
        ++depth_;
      } else if ((c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      } else if (depth_ == 0 && (c == ',' || c == ']')) {
        ended = true;
        array_ended = c == ']';
        break;
      }
      ++p;
    }
    const auto run_bytes = static_cast<std::size_t>(p - run);
    if (current_.size() + run_bytes > max_element_bytes_) {
      // Valid or not, it is more than this reader holds: say so, not "not valid JSON".
      failure = "element " + std::to_string(count_) + " of the JSON array is larger than the limit of " +
                std::to_string(max_element_bytes_) + " bytes per value (max_element_bytes)";
      break;
    }
    current_.append(run, run_bytes);
    if (ended) {
      ++p;  // the delimiter
      failure = complete_element();
      where_ = array_ended ? Where::after_array : Where::next;
    }
  }
  views_.clear();
  std::size_t begin = 0;
  for (const std::size_t e : ends_) {
    views_.emplace_back(done_.data() + begin, e - begin);
    begin = e;
  }
  return failure;
}

std::optional<std::string> JsonArraySplitter::finish() const {
  if (where_ == Where::after_array || !seen_bytes_) return std::nullopt;
  return "the JSON array ends early (truncated after " + std::to_string(count_) + " elements)";
}

}  // namespace prodsm::ds::detail
