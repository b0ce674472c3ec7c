// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file session_options.hpp
/// The options, counters and request outcome of an adapter's Session, the same for the
/// Asio and the blocking adapter (prodsm::asio::SessionOptions and
/// prodsm::blocking::SessionOptions are this type).

#include <utility>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/header_provider.hpp"
#include "prodsm/http/pool.hpp"

namespace prodsm {

/// How requests share TCP connections (pipelined: one connection; pool: one request per
/// connection).
using ConnectionMode = http::ConnectionMode;

/// Session configuration: how the pool uses connections (http::TransportOptions:
/// connection mode, timeouts, stall detection, limits, TLS; every field bounded,
/// validate() names the first bad one) and the per-request header provider.
struct SessionOptions : http::TransportOptions {
  SessionOptions() = default;
  /// The transport options, with no header provider.
  SessionOptions(http::TransportOptions transport)  // NOLINT(google-explicit-constructor): widening
      : http::TransportOptions(std::move(transport)) {}
  /// Called for every request attempt the session is given, where the session runs (the
  /// Asio session's strand, the blocking session's I/O thread), before the request is
  /// queued (prodsm/header_provider.hpp): e.g. a fresh bearer token. Its headers are
  /// checked like extra headers of the request's protocol (http::Request::header_rule:
  /// s2::check_provided_header for an S2 request, else ds::check_extra_header). Empty: none.
  HeaderProvider header_provider;
};

/// A session's counters since it was created (connections opened, transport failures,
/// stalls, ...).
using SessionStats = http::PoolStats;

/// The outcome of one request: its parsed response, or a classified transport error
/// (definite: never written; indefinite: written, no complete response — E2).
using ExchangeResult = tl::expected<ds::Response, Error>;

}  // namespace prodsm
