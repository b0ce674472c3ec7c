// SPDX-License-Identifier: Apache-2.0
#include "stream_read.hpp"

#include <asio/use_future.hpp>

#include <chrono>

#include "interrupt.hpp"

namespace prodsm::tools {

ds::ReadOptions whole_stream_read(bool json, ds::RequestOptions request, std::uint32_t max_attempts,
                                  Duration retry_timeout_ns) {
  ds::ReadOptions read;
  read.json = json;
  // The produce run's mode, not the stream's: its records are compared in that mode (a
  // run whose mode does not match the stream's fails its appends, and its --verify).
  read.json_from_content_type = false;
  read.request = std::move(request);
  read.max_bytes = std::uint64_t{1} << 62;  // the consumer's bound (the spool's disk, a comparison)
  read.timeout_ns = std::chrono::hours{24};
  read.retry.max_attempts = max_attempts;
  read.retry_timeout_ns = retry_timeout_ns;  // the run's --delivery-timeout-ms, as its appends
  return read;
}

CliReadResult run_cli_read(const std::shared_ptr<asio::Session>& session, const ds::StreamUrl& url,
                           ds::ReadOptions options, asio::ReadHandler on_data, bool watch_interrupts,
                           asio::ReadRetryHandler on_retry) {
  auto future = asio::async_read_stream(session, url, std::move(options), std::move(on_data), std::move(on_retry),
                                        ::asio::use_future);
  CliReadResult r{tl::unexpected(Error{}), false};
  // Waiting in slices only to notice an interrupt (a flag set by the signal handler);
  // the read's own bounds end it otherwise.
  while (future.wait_for(std::chrono::milliseconds{50}) != std::future_status::ready) {
    if (((watch_interrupts && interrupted()) || abort_requested()) && !r.interrupted) {
      r.interrupted = true;
      session->close();  // the request in flight fails, and the read ends with it
    }
  }
  r.outcome = future.get();
  if ((watch_interrupts && interrupted()) || abort_requested()) r.interrupted = true;
  return r;
}

}  // namespace prodsm::tools
