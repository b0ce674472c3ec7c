// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm produce s2://BASIN/STREAM`: one record per input line (its bytes without the
// newline; protobuf on the wire) into an S2 stream through asio::S2Producer; flushes at
// the end and prints a summary. Exit statuses as `prodsm produce` (commands.hpp).

#include <cstdint>
#include <string>

#include "producer_flags.hpp"
#include "s2_target.hpp"

namespace prodsm::tools {

/// What `prodsm produce` was given for an S2 target.
struct S2ProduceArgs {
  std::string target;             ///< s2://BASIN/STREAM
  std::string input = "-";        ///< input file, "-" = stdin
  bool create = false;            ///< --create: create the stream first (exists: fine)
  std::uint64_t flush_every = 0;  ///< --flush-every N (0: only at the end)
  bool quiet = false;             ///< -q
  ProducerFlags producer;         ///< the shared producer flags
  S2Flags s2;                     ///< --endpoint, --fencing-token, --match-seq-num
  bool identity_given = false;    ///< a Durable Streams identity flag was given (refused)
  std::string unsupported;        ///< a Durable Streams-only flag that was given, or empty
};

/// Runs the produce; returns the exit status.
int run_produce_s2(const S2ProduceArgs& args);

}  // namespace prodsm::tools
