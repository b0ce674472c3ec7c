// SPDX-License-Identifier: Apache-2.0
#include "s2_target.hpp"

#include <cstdlib>

#include "numeric_flags.hpp"

namespace prodsm::tools {

bool is_s2_target(std::string_view target) {
  return target.substr(0, 5) == "s2://";
}

tl::expected<S2Target, std::string> parse_s2_target(std::string_view target) {
  if (!is_s2_target(target)) return tl::unexpected(std::string{"not an s2://BASIN/STREAM target"});
  const std::string_view rest = target.substr(5);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    return tl::unexpected("'" + std::string(target) + "' names no stream: s2://BASIN/STREAM");
  }
  S2Target t{std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
  if (auto why = s2::check_basin_name(t.basin)) return tl::unexpected("basin '" + t.basin + "': " + *why);
  if (auto why = s2::check_stream_name(t.stream)) return tl::unexpected("stream '" + t.stream + "': " + *why);
  return t;
}

void add_s2_flags(CLI::App& cmd, S2Flags& flags) {
  cmd.add_option("--endpoint", flags.endpoint,
                 "s2:// targets: the basin's endpoint URL, e.g. http://127.0.0.1:8080 (s2-lite; the basin goes in "
                 "the s2-basin header). Default: S2's cloud, https://BASIN.b.s2.dev/v1");
  cmd.add_option("--fencing-token", flags.fencing_token,
                 "s2:// targets: the fencing token on every append (at most 36 bytes); an append to a stream fenced "
                 "with another token fails");
  add_decimal_option(cmd, "--match-seq-num", flags.match_seq_num, 0, UINT64_MAX,
                     "s2:// targets: the seq_num the first append must start at, advancing by each batch's records; "
                     "makes resends safe and allows --max-in-flight above 1 (the appends pipelined behind one the "
                     "server refused are resent after it)");
}

std::optional<std::string> apply_s2_flags(const S2Target& target, const S2Flags& s2f, const ProducerFlags& f,
                                          bool identity_given, asio::S2ProducerOptions& options) {
  if (identity_given) {
    return std::string{
        "--producer-id, --epoch and --auto-claim are Durable Streams flags; s2:// targets use "
        "--fencing-token and --match-seq-num"};
  }
  auto endpoint =
      s2f.endpoint.empty() ? s2::Endpoint::cloud(target.basin) : s2::Endpoint::custom(s2f.endpoint, target.basin);
  if (!endpoint) return (s2f.endpoint.empty() ? "basin: " : "--endpoint: ") + endpoint.error();
  options.endpoint = std::move(*endpoint);
  options.stream = target.stream;
  if (f.connection.bearer_token_file.empty()) {
    if (const char* token = std::getenv("S2_ACCESS_TOKEN"); token != nullptr && *token != '\0') {
      options.access_token = token;
      if (auto why = s2::check_access_token(options.access_token)) return "S2_ACCESS_TOKEN: " + *why;
    }
  }
  auto& core = options.producer;
  core.protocol.fencing_token = s2f.fencing_token;
  core.protocol.match_seq_num = s2f.match_seq_num;
  if (auto bad = S2Policy::validate(core.protocol)) {  // named by the flag, not the option field
    return (bad->field == "protocol.fencing_token" ? std::string{"--fencing-token"} : bad->field) + ": " + bad->reason;
  }
  auto linger = linger_flag(f);
  if (!linger) return linger.error();
  core.linger = *linger;
  if (f.max_batch_bytes < S2Policy::kMinBatchBytes || f.max_batch_bytes > S2Policy::kMaxBatchBytesCap) {
    return "--max-batch-bytes: s2:// targets take 8..1048576 (S2's limit per append; got " +
           std::to_string(f.max_batch_bytes) + ")";
  }
  core.max_batch_bytes = f.max_batch_bytes;
  core.max_unacked_bytes = std::max<std::uint64_t>(core.max_unacked_bytes, f.max_batch_bytes);
  core.max_in_flight = f.max_in_flight_given ? f.max_in_flight : 1;
  if (core.max_in_flight > 1 && !core.protocol.match_seq_num) {
    return "--max-in-flight: more than one S2 append in flight needs --match-seq-num (a resend without it could "
           "append twice or out of order)";
  }
  core.delivery_timeout_ns = std::chrono::milliseconds{f.delivery_timeout_ms};
  core.retry.max_attempts = f.max_attempts;
  options.session.mode =
      f.connection_mode == "pipelined" ? http::ConnectionMode::pipelined : http::ConnectionMode::pool;
  if (core.max_in_flight > 1 && options.session.mode != http::ConnectionMode::pipelined) {
    return std::string{"--max-in-flight: more than one S2 append in flight needs --connection-mode pipelined"};
  }
  options.session.max_connections = core.max_in_flight;
  options.session.request_timeout_ns = std::chrono::milliseconds{f.request_timeout_ms};
  for (const auto& h : f.headers) {
    auto header = parse_header_flag(h, &s2::check_extra_header);
    if (!header) return "--header: " + header.error();
    options.extra_headers.push_back(std::move(*header));
  }
  std::vector<FixedHeader> fixed;
  for (const auto& h : options.extra_headers) fixed.push_back({h.name, "-H"});
  if (!options.access_token.empty()) fixed.push_back({"Authorization", "S2_ACCESS_TOKEN"});
  return apply_connection_flags(f.connection, options.endpoint.tls, options.session, options.header_provider, fixed,
                                &s2::check_provided_header);
}

}  // namespace prodsm::tools
