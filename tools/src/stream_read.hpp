// SPDX-License-Identifier: Apache-2.0
#pragma once
// The streamed catch-up read as `prodsm read` and `prodsm produce --verify` run it: the
// shared ds::StreamReader over an Asio session (asio::read_stream), data handed on as it
// arrives, the first SIGINT/SIGTERM stopping it at once.

#include <memory>

#include "prodsm/asio/stream_ops.hpp"

namespace prodsm::tools {

/// How a CLI read ended.
struct CliReadResult {
  ds::ReadOutcome outcome;   ///< where the read ended, or why it failed
  bool interrupted = false;  ///< a SIGINT/SIGTERM (or an abort) stopped it (the session was closed)
};

/// The options of a read of the whole stream whose consumer keeps bounded memory however
/// much arrives (--resume's spool, --verify's comparison): `json` mode, `request`'s
/// headers, no byte limit short of 2^62 bytes (ds::ReadOptions' default of 4 GiB failed a
/// --verify of a larger stream), 24 h for the whole read, and a lost connection, 429 or
/// 5xx retried up to `max_attempts` times at one offset (the run's --max-attempts, as its
/// appends: ds::ReadOptions' default of 10, about 2.5 s of outage, failed the read-back
/// of a run that a server restart of a few seconds did not fail) and for at most
/// `retry_timeout_ns` from the first failure there (the run's --delivery-timeout-ms: 1000
/// attempts alone are hours of backoff).
ds::ReadOptions whole_stream_read(bool json, ds::RequestOptions request, std::uint32_t max_attempts,
                                  Duration retry_timeout_ns);

/// Runs asio::read_stream on `session` to its end; `on_data` runs on the session's I/O
/// thread as data arrives. With `watch_interrupts`, the first interrupt (interrupt.hpp)
/// closes the session, which ends the read at once; without, an abort asked for by a
/// second interrupt (abort_on_second_interrupt) does. `on_retry` is told each retry
/// (read_retry_notices prints them).
CliReadResult run_cli_read(const std::shared_ptr<asio::Session>& session, const ds::StreamUrl& url,
                           ds::ReadOptions options, asio::ReadHandler on_data, bool watch_interrupts,
                           asio::ReadRetryHandler on_retry);

}  // namespace prodsm::tools
