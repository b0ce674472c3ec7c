// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file header_provider.hpp
/// The per-request header provider both adapters' sessions call (prodsm/http/
/// request_fields.hpp says what it may add and where): for every request attempt a
/// session is given — retries included, since each is a new request — just before the
/// request is queued for a connection, on the session's strand (Asio) or I/O thread
/// (blocking). Never from the sans-IO layers (D1).
///
/// A provider that fails, throws, or gives a header or parameter that cannot be sent
/// fails that attempt with ErrorCode::header_provider_failed — definite (nothing was
/// sent), retryable within the retry policy — never the process.
/// Source: issue "Production endpoints" (per-request headers).

#include <exception>
#include <functional>
#include <optional>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/error.hpp"
#include "prodsm/http/connection.hpp"
#include "prodsm/http/request_fields.hpp"

namespace prodsm {

/// Called for every request attempt: the fields to add, or why there are none (the
/// attempt then fails with header_provider_failed carrying this text). Must be safe to
/// call from the session's I/O thread or strand; every request waits while it runs, so
/// slow work (fetching a token) belongs behind a cache. Empty: nothing is added.
using HeaderProvider = std::function<tl::expected<http::RequestFields, std::string>(const http::RequestInfo& request)>;

/// Asks `provider` (when set) for the fields of `request` and adds them
/// (http::add_request_fields with `rule`, the protocol's own header rule). Never throws.
/// nullopt when the request may be sent; otherwise the attempt's error:
/// header_provider_failed, definite, retryable, "header provider: <why>" (the provider's
/// text, its exception's what(), or the field that cannot be sent).
inline std::optional<Error> apply_header_provider(const HeaderProvider& provider, http::Request& request,
                                                  http::HeaderRule rule) noexcept {
  if (!provider) return std::nullopt;
  auto bare = [] {  // no memory for a message: the code says enough
    Error e;
    e.code = ErrorCode::header_provider_failed;
    e.retryable = true;
    return e;
  };
  auto fail = [&](const std::string& why) noexcept {
    try {
      return make_error(ErrorCode::header_provider_failed, Certainty::definite, true, "header provider: " + why);
    } catch (...) {
      return bare();
    }
  };
  try {
    const std::string_view bytes = request.bytes;
    const std::size_t method_end = bytes.find(' ');
    const std::size_t target_end = method_end == std::string_view::npos ? method_end : bytes.find(' ', method_end + 1);
    http::RequestInfo info;
    if (target_end != std::string_view::npos) {
      info.method = bytes.substr(0, method_end);
      info.target = bytes.substr(method_end + 1, target_end - method_end - 1);
    }
    auto fields = provider(info);
    if (!fields) return fail(fields.error().empty() ? "failed (no reason given)" : fields.error());
    if (auto added = http::add_request_fields(request.bytes, *fields, rule); !added) return fail(added.error());
    return std::nullopt;
  } catch (const std::exception& e) {
    try {
      return fail(std::string{"threw: "} + e.what());
    } catch (...) {
      return bare();
    }
  } catch (...) {
    return fail("threw a non-standard exception");
  }
}

}  // namespace prodsm
