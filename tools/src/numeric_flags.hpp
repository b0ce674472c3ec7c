// SPDX-License-Identifier: Apache-2.0
#pragma once
// Strict numeric command-line flags, shared by every subcommand: a number is plain
// decimal digits — no sign, no "0x", no exponent, no spaces — within the flag's range.
// Nothing wraps (`-1` is refused, not 2^64-1), nothing saturates (out of range is
// refused), and the message names the flag as it is typed and says what it accepts in
// a few words (never a 309-digit range).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace prodsm::tools {

/// `text` as a decimal integer in [min, max]. Errors: "'0x10' is not a decimal
/// integer", "-1 is negative", "12345678901234567890123 is too large (at most 64)",
/// "0 is out of range (1..64)".
tl::expected<std::uint64_t, std::string> parse_decimal(std::string_view text, std::uint64_t min, std::uint64_t max);

/// `text` as a decimal number of milliseconds with an optional fraction (`5`, `0.25`)
/// in [0, max_ms]: digits, at most one '.', nothing else. Returns nanoseconds.
tl::expected<std::uint64_t, std::string> parse_decimal_ms(std::string_view text, std::uint64_t max_ms);

/// `text` as a plain decimal number with an optional fraction (`2`, `1.5`) in [0, max]:
/// digits, at most one '.', nothing else (no exponent, no hex, no inf/nan).
tl::expected<double, std::string> parse_decimal_number(std::string_view text, double max);

/// Registers `names` (CLI11 syntax, e.g. "-n,--records") as an option parsed with
/// parse_decimal into `target`; a bad value is a CLI11 validation error naming the long
/// flag ("--records: ..."). The default shown in --help is `target`'s value now. `max`
/// must fit T (a signed T takes non-negative values only).
/// The same for an optional target (no default).
CLI::Option* add_decimal_option(CLI::App& cmd, const std::string& names, std::optional<std::uint64_t>& target,
                                std::uint64_t min, std::uint64_t max, const std::string& help);

template <class T>
CLI::Option* add_decimal_option(CLI::App& cmd, const std::string& names, T& target, std::uint64_t min,
                                std::uint64_t max, const std::string& help) {
  static_assert(std::is_integral_v<T>, "decimal flags are integers");
  std::string flag = names.substr(names.rfind(',') == std::string::npos ? 0 : names.rfind(',') + 1);
  auto* option = cmd.add_option_function<std::string>(
      names,
      [&target, min, max, flag](const std::string& text) {
        auto value = parse_decimal(text, min, max);
        if (!value) throw CLI::ValidationError(flag, value.error());
        target = static_cast<T>(*value);  // max is within T (the caller's range)
      },
      help);
  option->default_str(std::to_string(target));
  option->type_name("UINT");
  return option;
}

}  // namespace prodsm::tools
