// SPDX-License-Identifier: Apache-2.0
#pragma once
// The producer options `prodsm produce` and `prodsm bench` share, their CLI11
// registration, and the one place that turns them into asio::ProducerOptions; plus the
// `-H 'Name: value'` parsing every subcommand uses.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "connection_flags.hpp"
#include "prodsm/asio/producer.hpp"

namespace prodsm::tools {

/// Producer flags as given on the command line (validated by apply_producer_flags).
struct ProducerFlags {
  std::string producer_id;                      ///< --producer-id; empty = generated per run
  bool no_producer_id = false;                  ///< --no-producer-id: plain appends (no S1–S5)
  std::uint64_t epoch = 0;                      ///< --epoch, 0..2^53-1 (checked by the core, B3)
  bool epoch_given = false;                     ///< --epoch was on the command line: exactly that epoch
  bool auto_claim = false;                      ///< --auto-claim (S5)
  std::string linger = "5";                     ///< --linger-ms: milliseconds (fractions allowed) or "off"
  std::uint64_t max_batch_bytes = 1 << 20;      ///< --max-batch-bytes (bytes, B2)
  std::uint32_t max_in_flight = 5;              ///< --max-in-flight (batches, R1)
  bool max_in_flight_given = false;             ///< --max-in-flight was on the command line
  std::vector<std::string> headers;             ///< -H 'Name: value', repeatable
  std::string connection_mode = "pipelined";    ///< --connection-mode: pipelined | pool
  std::uint64_t request_timeout_ms = 30'000;    ///< --request-timeout-ms, 1..600000 (ms)
  std::uint64_t delivery_timeout_ms = 120'000;  ///< --delivery-timeout-ms, 1..86400000 (ms, E6)
  /// --max-attempts: sends per batch including the first, 1..1000 (retry.max_attempts, E4);
  /// default the library's 1000 (the delivery timeout ends retries first).
  std::uint32_t max_attempts = RetryPolicy{}.max_attempts;
  ConnectionFlags connection;  ///< TLS and per-request header flags
};

/// Registers the flags above (and the connection flags) on `cmd` (range checks that need no context are CLI11
/// checks; the rest is checked by apply_producer_flags and the core's validation).
void add_producer_flags(CLI::App& cmd, ProducerFlags& flags);

/// --linger-ms of `flags`: a linger in ms (0..3600000), checked to be below
/// --delivery-timeout-ms; or 'off' (also 'disabled'): no linger timer, a partial batch
/// waits for more input, but at most half of --delivery-timeout-ms (at most 1 h), so no
/// record reaches its delivery timeout (E6) only because the input paused (B1). The
/// error names the flag. For Durable Streams and S2 targets alike.
tl::expected<Linger, std::string> linger_flag(const ProducerFlags& flags);

/// Fills `options.producer` (linger, batch bytes, in-flight, delivery timeout,
/// idempotent producer), `options.start` (a fresh epoch, or exactly --epoch when given:
/// then a reused id and epoch fails at the first batch, before anything is appended),
/// `options.session` (mode, connections, request timeout, TLS, per-request headers:
/// apply_connection_flags) and `options.extra_headers` from `flags`. Returns the message naming the bad flag
/// (e.g. "--linger-ms: 'x' is not a number of milliseconds in 0..3600000 or 'off'").
std::optional<std::string> apply_producer_flags(const ProducerFlags& flags, asio::ProducerOptions& options);

/// Rewrites a terminal failure's text to name the flags that bound it: the config field
/// delivery_timeout_ns becomes "--delivery-timeout-ms (N ms)" (E6), and "gave up after N
/// attempts" gets "(--max-attempts N; ...)" (E4), and a 413 (a body over the server's or a
/// proxy's limit) names --max-batch-bytes, so the user sees which flag to change.
void name_retry_flags(Error& failure, const ProducerFlags& flags);

/// Parses `-H 'Name: value'` (value's leading blanks dropped) and checks it with `rule`,
/// the target protocol's (ds::check_extra_header, s2::check_extra_header, or for headers
/// a header provider adds, s2::check_provided_header); the error text names what is wrong.
tl::expected<ds::Header, std::string> parse_header_flag(const std::string& text,
                                                        http::HeaderRule rule = &ds::check_extra_header);

/// A producer id unique enough for one run: "prodsm-<host>-<pid>-<random hex>".
std::string generated_producer_id();

}  // namespace prodsm::tools
