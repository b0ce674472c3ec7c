// SPDX-License-Identifier: Apache-2.0
#pragma once
// How a `prodsm produce` run to a Durable Streams stream ends, once its records are
// flushed and the producer is closed: the summary on stdout, and on stderr what went wrong
// with what to do about it (the command that appends exactly the rest after an indefinite
// failure, E2; the way out of a fenced restart, S5; a verification that differs or could
// not read the stream back), and the exit status that goes with it (README, "The CLI").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/adapter_stats.hpp"
#include "prodsm/error.hpp"
#include "producer_flags.hpp"
#include "record_reader.hpp"
#include "verify.hpp"

namespace prodsm::tools {

/// Everything the summary and the exit status of a produce run depend on.
/// --resume, bytes mode: the stream ended inside input line `line`, holding its first
/// `held_bytes`; the other `sent_bytes` were produced (StreamPrefix::held_part).
struct CompletedLine {
  std::uint64_t line = 0;
  std::uint64_t held_bytes = 0;
  std::uint64_t sent_bytes = 0;
};

struct ProduceEnd {
  // ---- the run's flags ----
  bool quiet = false;                       ///< -q: no summary
  bool close_stream = false;                ///< --close-stream was asked
  bool verify = false;                      ///< --verify was asked
  bool create = false;                      ///< --create was asked
  std::string url;                          ///< the stream's URL, as given
  const ProducerFlags* producer = nullptr;  ///< the producer flags (never null when reported)
  /// The idempotent producer's id (generated or --producer-id); empty for plain appends.
  std::string producer_id;

  // ---- what happened ----
  std::uint64_t records = 0;                     ///< records accepted by the producer
  std::uint64_t input_records = 0;               ///< input records, those --resume skipped included
  std::uint64_t record_bytes = 0;                ///< bytes of the accepted records
  double elapsed_s = 0;                          ///< from the first record to the producer's close (s)
  std::vector<double> flush_latencies_ms;        ///< each flush's latency (ms)
  std::uint64_t skipped_blank_lines = 0;         ///< JSON mode's blank lines
  std::uint64_t dropped_partial_bytes = 0;       ///< a line an interrupt cut short (bytes), never sent
  std::uint64_t unterminated_line = 0;           ///< the last line, produced without a newline (0: none)
  bool bytes_mode = true;                        ///< records are the input's bytes (not --json)
  std::optional<CompletedLine> completed_line;   ///< --resume: a line the stream held only part of
  std::optional<std::uint64_t> resumed_skipped;  ///< --resume: records the stream held already
  std::optional<std::string> closed_at;          ///< --close-stream: the stream's final offset
  std::optional<LineError> bad_line;             ///< the input line that stopped the run
  std::optional<Error> failure;                  ///< the producer's terminal error
  std::optional<std::string> resume_problem;     ///< --resume: the stream is not a prefix of the input
  std::optional<VerifyProblem> verify_problem;   ///< --verify: a difference, or no read-back
  bool interrupted = false;                      ///< an interrupt stopped the input
  bool aborted = false;                          ///< a second interrupt aborted the flush or close

  /// Verified: --verify asked, and the stream read back holds exactly the input.
  [[nodiscard]] bool verified() const noexcept {
    return verify && !verify_problem && !failure && !bad_line && !interrupted && !resume_problem;
  }
};

/// Prints the summary (unless quiet) and what went wrong, and returns the exit status:
/// 0 ok, 1 verification failed, 2 bad input (a refused line with nothing failed, a
/// --resume stream that is not a prefix before anything was appended), 3 server or network
/// failure (also "not verified": the stream could not be read back), 130 interrupted.
[[nodiscard]] int report_produce_end(ProduceEnd& end, const ProducerAdapterStats& stats);

}  // namespace prodsm::tools
