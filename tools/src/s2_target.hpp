// SPDX-License-Identifier: Apache-2.0
#pragma once
// S2 targets of `prodsm produce` and `prodsm bench`: `s2://BASIN/STREAM`, against S2's
// cloud (https://BASIN.b.s2.dev/v1) or `--endpoint URL` (basin in the s2-basin header);
// the token from S2_ACCESS_TOKEN (as S2's own CLI) unless --bearer-token-file is given;
// --fencing-token and --match-seq-num; the shared producer flags. Turns them into
// asio::S2ProducerOptions.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/asio/s2_producer.hpp"
#include "producer_flags.hpp"

namespace prodsm::tools {

/// True when `target` names an S2 stream (`s2://...`).
[[nodiscard]] bool is_s2_target(std::string_view target);

/// The basin and stream of `s2://BASIN/STREAM` (the stream is everything after the first
/// '/', checked by s2::check_stream_name; the basin by s2::check_basin_name).
struct S2Target {
  std::string basin;   ///< the basin's name
  std::string stream;  ///< the stream's name
};
/// Parses `s2://BASIN/STREAM`; the error says what is wrong.
tl::expected<S2Target, std::string> parse_s2_target(std::string_view target);

/// The S2-only flags, as given on the command line.
struct S2Flags {
  std::string endpoint;                        ///< --endpoint URL; empty: S2's cloud
  std::optional<std::string> fencing_token;    ///< --fencing-token T (S1)
  std::optional<std::uint64_t> match_seq_num;  ///< --match-seq-num N (S1)
};

/// Registers --endpoint, --fencing-token and --match-seq-num on `cmd`.
void add_s2_flags(CLI::App& cmd, S2Flags& flags);

/// Fills `options` for `target` from the S2 flags and the shared producer flags: the
/// endpoint, the stream, the token (S2_ACCESS_TOKEN unless --bearer-token-file), the
/// fencing token and match_seq_num, linger, batch bytes, in-flight (1 unless
/// `flags.max_in_flight_given`), timeouts, TLS and header flags. Refuses the Durable Streams
/// identity flags. Returns the message naming the bad flag, or nullopt.
std::optional<std::string> apply_s2_flags(const S2Target& target, const S2Flags& s2, const ProducerFlags& flags,
                                          bool identity_given, asio::S2ProducerOptions& options);

}  // namespace prodsm::tools
