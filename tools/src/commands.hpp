// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `prodsm` subcommands. Each registers its options on a CLI11 app and returns the
// process exit status when run.

#include <CLI/CLI.hpp>

#include <functional>

namespace prodsm::tools {

/// Exit statuses shared by every subcommand (documented in README.md).
enum ExitStatus : int {
  kExitOk = 0,             ///< success
  kExitFailure = 1,        ///< a check failed (e.g. conformance verdicts, verification)
  kExitBadInput = 2,       ///< bad usage, bad option value, unreadable input, invalid record
  kExitServerError = 3,    ///< the server or the network failed the run
  kExitOutputFailed = 4,   ///< writing the output failed (-o /dev/full, a closed stdout pipe)
  kExitInterrupted = 130,  ///< SIGINT/SIGTERM: input stopped, what was accepted was flushed
};

/// True when the process started with file descriptor 1 closed (`prodsm read URL >&-`):
/// main opened /dev/null on it, so what a command writes to stdout would be lost without
/// an error. `read` refuses to write its data there (exit 4).
bool stdout_closed_at_start() noexcept;

/// Adds `produce` to `app`; `run` is set to the function that executes it.
void add_produce_command(CLI::App& app, std::function<int()>& run);
/// Adds `read` to `app`.
void add_read_command(CLI::App& app, std::function<int()>& run);
/// Adds `bench` to `app`: a producer load test against a server (throughput, latency).
void add_bench_command(CLI::App& app, std::function<int()>& run);
/// Adds `conform` to `app`.
void add_conform_command(CLI::App& app, std::function<int()>& run);

}  // namespace prodsm::tools
