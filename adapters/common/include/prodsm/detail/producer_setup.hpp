// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_setup.hpp
/// Internal: what every adapter producer's create() and attach() share, the same for
/// both adapters and both protocols: attach()'s checks (C4: a producer attached to a
/// session it does not own) and the session URL of an S2 endpoint. Errors name the
/// field, as option validation does. Not part of the public API; included by the
/// adapters only (they link prodsm::durable_streams and prodsm::s2).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/header_provider.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace prodsm::detail {

/// Before the client is built: a session is given, and the producer has no header
/// provider of its own (an attached producer uses its session's). Session: an adapter's.
template <class Session>
std::optional<std::string> attach_refusal(const std::shared_ptr<Session>& session, const HeaderProvider& provider) {
  if (!session) return std::string{"session: null"};
  if (provider) return std::string{"header_provider: an attached producer uses its session's (SessionOptions)"};
  return std::nullopt;
}

/// "FIELD: AUTHORITY is not the session's server HOST:PORT" when the producer's server
/// (`host`, `port`, shown as `authority`) is not the session's; nothing when it is.
template <class Session>
std::optional<std::string> server_mismatch(std::string_view field, const std::string& host, std::uint16_t port,
                                           const std::string& authority, const Session& session) {
  if (host == session.host() && port == session.port()) return std::nullopt;
  return std::string(field) + ": " + authority + " is not the session's server " + session.host() + ":" +
         std::to_string(session.port());
}

/// The URL of an S2 endpoint's server, for Session::create (https for TLS endpoints);
/// the error names the endpoint.
inline tl::expected<ds::StreamUrl, std::string> s2_server_url(const s2::Endpoint& e) {
  auto url = ds::StreamUrl::parse(std::string(e.tls ? "https://" : "http://") + e.authority() + "/");
  if (!url) return tl::unexpected("endpoint: " + url.error());
  return url;
}

}  // namespace prodsm::detail
