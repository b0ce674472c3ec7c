// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_setup.hpp
/// Internal: what every adapter producer's create() and attach() share, the same for
/// both adapters and both protocols: the client with the URL of the session it owns,
/// attach()'s checks (C4: a producer attached to a session it does not own) and the
/// session URL of an S2 endpoint. Errors name the field, as option validation does.
/// Not part of the public API; included by the adapters only (they link
/// prodsm::durable_streams and prodsm::s2).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <tl/expected.hpp>

#include "prodsm/ds/client.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/header_provider.hpp"
#include "prodsm/s2/client.hpp"
#include "prodsm/s2/http_codec.hpp"

namespace prodsm::detail {

/// Before the client is built: a session is given, it is not closed (a producer attached
/// to a closed one accepted records only to fail them at the first flush), and the
/// producer has no header provider of its own (an attached producer uses its session's).
/// Session: an adapter's.
template <class Session>
std::optional<std::string> attach_refusal(const std::shared_ptr<Session>& session, const HeaderProvider& provider) {
  if (!session) return std::string{"session: null"};
  if (session->closed()) return std::string{"session: it is closed (its close() was called): attach to an open one"};
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

/// create(): the client for `options` (validated by the client's create: errors name the
/// field) and the URL of the server its own session connects to — the stream's
/// (Durable Streams) or the endpoint's (S2). Client: ds::ProducerClient or
/// s2::ProducerClient.
template <class Client, class Options>
tl::expected<std::pair<Client, ds::StreamUrl>, std::string> owned_client(const Options& options) {
  if constexpr (std::is_same_v<Client, ds::ProducerClient>) {
    auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
    if (!client) return tl::unexpected(client.error());
    ds::StreamUrl url = client->url();
    return std::pair{std::move(*client), std::move(url)};
  } else {
    auto client = s2::ProducerClient::create(options);
    if (!client) return tl::unexpected(client.error());
    auto url = s2_server_url(options.endpoint);
    if (!url) return tl::unexpected(url.error());
    return std::pair{std::move(*client), std::move(*url)};
  }
}

/// attach(): the client for `options` on `session` (an adapter's), or why it may not
/// attach — attach_refusal(), the client's own validation against the session's
/// transport (the session's mode and stall detection are the ones that run: E4's refusal
/// of plain appends with more than one in flight over pooled connections, S2's
/// validate_attached()), server_mismatch().
template <class Client, class Options, class Session>
tl::expected<Client, std::string> attached_client(const std::shared_ptr<Session>& session, const Options& options) {
  if (auto why = attach_refusal(session, options.header_provider)) return tl::unexpected(*why);
  if constexpr (std::is_same_v<Client, ds::ProducerClient>) {
    ds::ProducerOptions on_session = options;  // validated as it runs: on the session's transport
    on_session.session = session->options();
    auto client = ds::ProducerClient::create(on_session, std::chrono::system_clock::now());
    if (!client) return tl::unexpected(client.error());
    const ds::StreamUrl& url = client->url();
    if (auto why = server_mismatch("url", url.host, url.port, url.authority(), *session)) return tl::unexpected(*why);
    return client;
  } else {
    if (auto why = s2::validate_attached(options, session->options())) return tl::unexpected(*why);
    auto client = s2::ProducerClient::create(options);
    if (!client) return tl::unexpected(client.error());
    const s2::Endpoint& e = options.endpoint;
    if (auto why = server_mismatch("endpoint", e.host, e.port, e.authority(), *session)) return tl::unexpected(*why);
    return client;
  }
}

}  // namespace prodsm::detail
