// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON values as a Durable Streams server keeps them, for `prodsm produce --json`,
// `--verify` and `--resume`. A JSON-mode server parses every message and stores the
// value, not the text: the reference server (JavaScript) holds every number as an
// IEEE-754 double and writes it back in its shortest form, so `1.0` comes back as `1`,
// `1e20` as `100000000000000000000`, and `9007199254740993` as `9007199254740992`
// (RFC 8259 §6: numbers beyond a double's precision are not interoperable). So:
//  - a record whose number a double cannot hold exactly is refused before it is sent
//    (double_loss), since the server would store another number and nothing would say so;
//  - two forms of one value compare equal (canonical_json): numbers as doubles, object
//    members in name order (a JavaScript server moves integer-like names first), no
//    whitespace.

#include <optional>
#include <string>
#include <string_view>

namespace prodsm::tools {

/// Nesting deeper than this many levels is refused (simdjson's default depth, which
/// every other JSON check of the CLI uses).
inline constexpr int kMaxJsonDepth = 1024;

/// For one valid JSON value `text`: nullopt when every number in it is exactly an
/// IEEE-754 double (so a server that holds numbers as doubles stores this value); else
/// a message naming the first number that is not and the double it would become, e.g.
/// "the number 9007199254740993 is not exactly a double: a JSON server keeps it as
/// 9007199254740992 (RFC 8259 section 6); quote it as a string to keep it exactly".
/// Exact means the number's decimal value is that of the fewest digits that read back as
/// its double (what a JavaScript server writes), so `0.1`, `1e20`, `100000000000000000000`
/// and `9.223372036854776e18` pass and `0.30000000000000001` (kept as `0.3`) does not.
/// The double named is written as a JavaScript server writes it. Invalid
/// JSON: nullopt (the caller validated it).
std::optional<std::string> double_loss(std::string_view text);

/// True when `text` has a run of 16 or more decimal digits (dots between them allowed):
/// with fewer significant digits, a number in the normal double range is exact.
/// Looks at every byte, strings included (a false alarm only costs double_loss's time).
bool has_long_digit_run(std::string_view text) noexcept;

/// True when `text` has an exponent of at least -100 (`e-` or `E-` and three or more
/// digits): the only other way a number can lose precision (a subnormal or an underflow
/// to zero; DBL_MIN is about 2.2e-308). Strings included, as has_long_digit_run.
bool has_large_negative_exponent(std::string_view text) noexcept;

/// The cheap test run on every JSON line: double_loss can find something only when
/// this is true (has_long_digit_run or has_large_negative_exponent).
inline bool may_lose_precision(std::string_view text) noexcept {
  return has_long_digit_run(text) || has_large_negative_exponent(text);
}

/// The canonical form of one JSON value: minified, every number as the shortest form of
/// its double (-0 as 0), every object's members sorted by name (a repeated name keeps
/// its last value, as JavaScript's JSON.parse does). Two texts with equal canonical forms
/// are the same value to a JSON server. Nullopt when `text` is not exactly one JSON value
/// or nests deeper than kMaxJsonDepth.
std::optional<std::string> canonical_json(std::string_view text);

}  // namespace prodsm::tools
