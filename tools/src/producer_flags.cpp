// SPDX-License-Identifier: Apache-2.0
#include "producer_flags.hpp"

#include "prodsm/http/detail/text.hpp"

#include <unistd.h>

#include <cstdio>
#include <random>

#include "numeric_flags.hpp"

namespace prodsm::tools {

void add_producer_flags(CLI::App& cmd, ProducerFlags& f) {
  auto* id =
      cmd.add_option("--producer-id", f.producer_id,
                     "Idempotent producer id (default: generated per run). Every run starts a fresh epoch "
                     "(microseconds since the Unix epoch), so a restart under a fixed id never has its "
                     "records deduplicated away and fences older runs of that id")
          ->check(CLI::Validator(
              [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "NONEMPTY"));
  auto* epoch = add_decimal_option(cmd, "--epoch", f.epoch, 0, DurableStreamsPolicy::kMaxSequenceValue,
                                   "Exactly this producer epoch, 0..2^53-1 (default: a fresh one). An id and epoch "
                                   "used before fail at the first batch, before anything is appended");
  auto* claim = cmd.add_flag("--auto-claim", f.auto_claim, "On a stale epoch, claim server epoch + 1 (S5)");
  cmd.add_flag("--no-producer-id", f.no_producer_id,
               "Plain appends without producer headers (no deduplication; one batch in flight unless "
               "--max-in-flight is given, as only then are they kept in order)")
      ->excludes(id)
      ->excludes(epoch)
      ->excludes(claim);
  cmd.add_option("--linger-ms", f.linger,
                 "Linger in ms (0 = no delay; 'off' = no linger timer: a partial batch waits for more input, "
                 "at most half of --delivery-timeout-ms)")
      ->capture_default_str();
  add_decimal_option(cmd, "--max-batch-bytes", f.max_batch_bytes, DurableStreamsPolicy::kMinBatchBytes,
                     DurableStreamsPolicy::kMaxBatchBytesCap,
                     "Most bytes per batch, 3..67108864 (s2:// targets: 8..1048576)");
  add_decimal_option(cmd, "--max-in-flight", f.max_in_flight, 1, Bounds::kMaxInFlightCap,
                     "Most batches in flight, 1..64 (default 5 with a producer id; 1 with --no-producer-id and for "
                     "s2:// targets, unless given)");
  cmd.add_option("-H,--header", f.headers, "Extra request header 'Name: value' (repeatable)");
  cmd.add_option("--connection-mode", f.connection_mode,
                 "pipelined (one connection) or pool (one request per connection)")
      ->check(CLI::IsMember({"pool", "pipelined"}))
      ->capture_default_str();
  add_decimal_option(cmd, "--request-timeout-ms", f.request_timeout_ms, 1, 600'000, "Per-request timeout, 1..600000");
  add_decimal_option(cmd, "--delivery-timeout-ms", f.delivery_timeout_ms, 1, 86'400'000,
                     "Per-record delivery deadline, 1..86400000 (above --linger-ms); retries also stop after "
                     "--max-attempts");
  add_decimal_option(cmd, "--max-attempts", f.max_attempts, 1, Bounds::kMaxAttemptsCap,
                     "Sends per batch including the first, 1..1000 (default 1000: --delivery-timeout-ms ends "
                     "the retries first; 10 gives up after about 2.5 s of outage)");
  add_connection_flags(cmd, f.connection);
}

void name_retry_flags(Error& failure, const ProducerFlags& f) {
  if (failure.code == ErrorCode::delivery_timeout) {
    const std::string field = "delivery_timeout_ns";
    if (const auto at = failure.message.find(field); at != std::string::npos) {
      failure.message.replace(at, field.size(),
                              "--delivery-timeout-ms (" + std::to_string(f.delivery_timeout_ms) + " ms)");
    }
  }
  if (failure.http_status == 413) {  // the server's or a proxy's body limit is below a batch
    failure.message += " (a batch is up to --max-batch-bytes " + std::to_string(f.max_batch_bytes) +
                       " bytes: lower it below the server's or proxy's request body limit)";
  }
  const std::string gave_up = "gave up after ";
  if (const auto at = failure.message.rfind(gave_up); at != std::string::npos) {
    if (const auto end = failure.message.find(" attempts", at); end != std::string::npos) {
      failure.message.insert(end + 9, " (--max-attempts " + std::to_string(f.max_attempts) +
                                          "; more ride out a longer outage, up to --delivery-timeout-ms)");
    }
  }
}

tl::expected<Linger, std::string> linger_flag(const ProducerFlags& f) {
  const Duration delivery_timeout_ns = std::chrono::milliseconds{f.delivery_timeout_ms};
  if (f.linger == "off" || f.linger == "disabled") {
    // No linger timer in the core (Linger::disabled) would keep a partial batch until the
    // next line came, however long the input paused: its records would fail at their
    // delivery timeout without ever being sent (E6).
    return Linger::after(std::min<Duration>(Linger::kMaxLinger, delivery_timeout_ns / 2));
  }
  const auto max_ms =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Linger::kMaxLinger).count());
  auto ns = parse_decimal_ms(f.linger, max_ms);
  if (!ns) return tl::unexpected("--linger-ms: " + ns.error() + ", or 'off'");
  const Linger linger = Linger::after(std::chrono::nanoseconds{static_cast<std::int64_t>(*ns)});
  if (delivery_timeout_ns <= linger.duration_ns()) {
    return tl::unexpected("--delivery-timeout-ms: must be above --linger-ms (" + f.linger + " ms)");
  }
  return linger;
}

std::optional<std::string> apply_producer_flags(const ProducerFlags& f, asio::ProducerOptions& options) {
  auto& core = options.producer;
  if (!f.no_producer_id) {
    core.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{
        f.producer_id.empty() ? generated_producer_id() : f.producer_id, f.epoch, f.auto_claim};
    options.start = f.epoch_given ? ds::ProducerStart::given_epoch : ds::ProducerStart::fresh_epoch;
  }
  auto linger = linger_flag(f);
  if (!linger) return linger.error();
  core.linger = *linger;
  core.max_batch_bytes = f.max_batch_bytes;
  core.max_unacked_bytes = std::max<std::uint64_t>(core.max_unacked_bytes, f.max_batch_bytes);
  // Plain appends keep their order only one batch at a time: batches pipelined behind one
  // the server refuses (503, 429) may be appended before its resend (contract E4). So
  // --no-producer-id sends one batch at a time unless --max-in-flight says otherwise.
  core.max_in_flight = f.no_producer_id && !f.max_in_flight_given ? 1 : f.max_in_flight;
  core.delivery_timeout_ns = std::chrono::milliseconds{f.delivery_timeout_ms};
  core.retry.max_attempts = f.max_attempts;
  options.session.mode =
      f.connection_mode == "pipelined" ? asio::ConnectionMode::pipelined : asio::ConnectionMode::pool;
  options.session.max_connections = core.max_in_flight;
  options.session.request_timeout_ns = std::chrono::milliseconds{f.request_timeout_ms};
  for (const auto& h : f.headers) {
    auto header = parse_header_flag(h);
    if (!header) return "--header: " + header.error();
    options.extra_headers.push_back(std::move(*header));
  }
  std::vector<FixedHeader> fixed;
  for (const auto& h : options.extra_headers) fixed.push_back({h.name, "-H"});
  return apply_connection_flags(f.connection, http::detail::istarts_with(options.url, "https://"), options.session,
                                options.header_provider, fixed);
}

tl::expected<ds::Header, std::string> parse_header_flag(const std::string& text, http::HeaderRule rule) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0) return tl::unexpected("'" + text + "' is not 'Name: value'");
  std::string value = text.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  ds::Header header{text.substr(0, colon), value};
  if (auto why = rule(header)) return tl::unexpected(why->empty() ? "header '" + header.name + "' refused" : *why);
  return header;
}

std::string generated_producer_id() {
  char host[64] = {0};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  char buf[160];
  std::snprintf(buf, sizeof buf, "prodsm-%s-%d-%08x", host, static_cast<int>(::getpid()), rd());
  std::string id = buf;
  for (char& c : id) {
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '_';
  }
  return id;
}

}  // namespace prodsm::tools
