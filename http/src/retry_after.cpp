// SPDX-License-Identifier: Apache-2.0
// Retry-After (RFC 9110 section 10.2.3): delay-seconds, or an HTTP-date measured from
// the response's Date. Dates are read with std::get_time in the classic locale (whatever
// the program's locale) and turned into seconds with timegm(3).
#include "prodsm/http/retry_after.hpp"

#include <algorithm>
#include <ctime>
#include <iomanip>
#include <locale>
#include <sstream>
#include <string>

#include "prodsm/http/detail/text.hpp"

namespace prodsm::http {
namespace {

constexpr std::int64_t kMaxSeconds = std::chrono::duration_cast<std::chrono::seconds>(kMaxRetryAfter).count();

/// An HTTP-date (RFC 9110 section 5.6.7) as seconds since the Unix epoch, or nullopt.
std::optional<std::int64_t> http_date(std::string_view text) {
  text = detail::trim_ows(text);
  if (text.empty() || text.size() > 64) return std::nullopt;
  // IMF-fixdate, then the obsolete forms a recipient must accept: RFC 850 and asctime.
  for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y"}) {
    std::istringstream in{std::string(text)};
    in.imbue(std::locale::classic());
    std::tm tm{};
    in >> std::get_time(&tm, format);
    if (in.fail()) continue;
    in >> std::ws;
    if (!in.eof()) continue;  // trailing bytes: not this form
    const std::time_t t = ::timegm(&tm);
    if (t == static_cast<std::time_t>(-1)) continue;
    return static_cast<std::int64_t>(t);
  }
  return std::nullopt;
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
    const auto until = http_date(*value);
    const auto date = response.header("Date");
    const auto now = date ? http_date(*date) : std::nullopt;
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
