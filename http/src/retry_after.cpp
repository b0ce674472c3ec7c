// SPDX-License-Identifier: Apache-2.0
// Retry-After (RFC 9110 section 10.2.3): delay-seconds, or an IMF-fixdate measured from
// the response's Date. Calendar arithmetic with <chrono>'s civil dates: no clock, no
// locale (D1).
#include "prodsm/http/retry_after.hpp"

#include <algorithm>
#include <string>

#include "prodsm/http/detail/text.hpp"

namespace prodsm::http {
namespace {

constexpr std::int64_t kMaxSeconds = std::chrono::duration_cast<std::chrono::seconds>(kMaxRetryAfter).count();

/// The decimal number of `n` digits at `at` in `text`, or -1.
int digits_at(std::string_view text, std::size_t at, std::size_t n) {
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

/// An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT": RFC 9110 section 5.6.7, the form a
/// sender must generate) as seconds since the Unix epoch, or nullopt. The obsolete
/// RFC 850 and asctime forms are not taken.
std::optional<std::int64_t> imf_fixdate(std::string_view t) {
  t = detail::trim_ows(t);
  if (t.size() != 29 || t.substr(3, 2) != ", " || t[7] != ' ' || t[11] != ' ' || t[16] != ' ' || t[19] != ':' ||
      t[22] != ':' || t.substr(25) != " GMT") {
    return std::nullopt;
  }
  constexpr std::string_view kDays = "MonTueWedThuFriSatSun";
  constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  const std::size_t day_name = kDays.find(t.substr(0, 3));
  const std::size_t month = kMonths.find(t.substr(8, 3));
  if (day_name == std::string_view::npos || day_name % 3 != 0 || month == std::string_view::npos || month % 3 != 0) {
    return std::nullopt;
  }
  const int day = digits_at(t, 5, 2);
  const int year = digits_at(t, 12, 4);
  const int hour = digits_at(t, 17, 2);
  const int minute = digits_at(t, 20, 2);
  const int second = digits_at(t, 23, 2);
  if (day < 0 || year < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month / 3 + 1)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) return std::nullopt;
  const auto days = std::chrono::sys_days{date}.time_since_epoch();
  return std::chrono::duration_cast<std::chrono::seconds>(days).count() + hour * 3600 + minute * 60 + second;
}

/// Decimal digits only, saturating at what any wait is capped to; nullopt otherwise.
std::optional<std::int64_t> delay_seconds(std::string_view text) {
  text = detail::trim_ows(text);
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v <= kMaxSeconds) v = v * 10 + (c - '0');  // past the cap the value no longer matters
  }
  return v;
}

}  // namespace

std::optional<RetryAfter> retry_after(const Response& response) {
  const auto value = response.header("Retry-After");
  if (!value) return std::nullopt;
  RetryAfter out;
  std::int64_t seconds = 0;
  if (const auto delay = delay_seconds(*value)) {
    seconds = *delay;
  } else {
    const auto until = imf_fixdate(*value);
    const auto date = response.header("Date");
    const auto now = date ? imf_fixdate(*date) : std::nullopt;
    if (!until || !now) return std::nullopt;
    seconds = std::max<std::int64_t>(0, *until - *now);
    out.from_date = true;
  }
  if (seconds > kMaxSeconds) {
    seconds = kMaxSeconds;
    out.capped = true;
  }
  out.delay_ns = std::chrono::seconds{seconds};
  return out;
}

std::string describe(const RetryAfter& retry_after) {
  std::string out = "Retry-After ";
  detail::append_decimal(
      out, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(retry_after.delay_ns).count()));
  out += " s";
  if (retry_after.from_date) out += " (an HTTP-date)";
  if (retry_after.capped) out += " (capped: the server asked for longer)";
  return out;
}

}  // namespace prodsm::http
