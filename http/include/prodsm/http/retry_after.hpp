// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file retry_after.hpp
/// A response's Retry-After (RFC 9110 section 10.2.3): how long the server asks a client
/// to wait before its next request, given as delay-seconds or as an HTTP-date. Shared by
/// the protocol codecs' response classification (contract E4: a retry waits at least
/// that long). Sans-IO and clock-free: an HTTP-date is measured from the response's own
/// `Date` header (RFC 9110 section 6.6.1), both the server's clock.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "prodsm/http/message.hpp"
#include "prodsm/time.hpp"

namespace prodsm::http {

/// The longest wait taken from a Retry-After: 24 h (the longest delivery timeout, E6). A
/// server asking for longer is taken to ask for this long.
inline constexpr Duration kMaxRetryAfter = std::chrono::hours{24};

/// A Retry-After as the client honours it.
struct RetryAfter {
  Duration delay_ns{};     ///< how long to wait (ns), 0..kMaxRetryAfter, whole seconds
  bool capped = false;     ///< the server asked for longer than kMaxRetryAfter
  bool from_date = false;  ///< given as an HTTP-date (measured from the response's Date)
};

/// The Retry-After of `response`: delay-seconds (decimal digits; any number, capped at
/// kMaxRetryAfter), or an HTTP-date in the IMF-fixdate form senders must use ("Sun, 06
/// Nov 1994 08:49:37 GMT") minus the response's `Date` (0 when it is not later). nullopt
/// when there is no Retry-After, when it is neither (the obsolete RFC 850 and asctime
/// date forms included), or when it is a date and the response has no IMF-fixdate `Date`
/// to measure it from (then the caller's own backoff applies).
[[nodiscard]] std::optional<RetryAfter> retry_after(const Response& response);

/// For error messages: "Retry-After 30 s", with " (an HTTP-date)" and " (capped: the
/// server asked for longer)" as they apply.
[[nodiscard]] std::string describe(const RetryAfter& retry_after);

}  // namespace prodsm::http
