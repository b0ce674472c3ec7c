// SPDX-License-Identifier: Apache-2.0
#pragma once
// Ctrl-C while `prodsm produce` waits for input (Durable Streams and S2 alike).

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace prodsm::test {

/// Runs `prodsm <args>` reading a FIFO the test keeps open — as stdin, or named with
/// `-i FIFO` (appended to args) while stdin is /dev/null — writes the lines "a" and "b",
/// waits (bounded, 30 s) until `read_back()` returns "a\nb\n", then, with `partial`,
/// writes "part" without a newline and waits until the CLI has read it; then sends SIGINT
/// while the CLI is blocked reading and checks (gtest assertions): it exits 130 within
/// 30 s, says it stopped after 2 records (and, with `partial`, that the fragment's 4 bytes
/// were dropped, not sent), and `read_back()` is still "a\nb\n" (the fragment never sent).
/// `read_back`: the stream's records, each followed by '\n'.
/// `signal_number`: the signal sent (SIGINT; SIGHUP is taken the same way).
void interrupt_produce_reading_a_fifo(std::vector<std::string> args, const std::function<std::string()>& read_back,
                                      bool named_with_dash_i, bool partial, int signal_number = SIGINT);

/// Runs `prodsm <args>` (stdin /dev/null: args name the input with -i), waits (bounded,
/// 30 s) until `sent()` — the input was read whole and its batch reached the server, which
/// holds it — then sends SIGINT and checks (gtest assertions): the CLI exits 0 (every
/// record was appended), says "interrupted after the whole input was read: nothing is
/// left out" and never "input stopped".
void interrupt_produce_after_the_whole_input(std::vector<std::string> args, const std::function<bool()>& sent);

/// How an aborted run ended: exit status (-1: killed or not run), stdout, stderr.
struct AbortedRun {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `prodsm <args>` (stdin /dev/null: args name the input with -i), waits (bounded,
/// 30 s) until `ready(pid)`, sends SIGINT, waits (bounded) until stderr holds
/// `first_line` (the first signal was handled), then sends SIGTERM (a different signal:
/// never a repeat of the first). Checks (gtest assertions) that the run aborts instead of
/// being killed — it ends within 30 s, exit 130, "aborting: ..." on stderr — and returns
/// how it ended, so the caller can check the summary.
AbortedRun abort_produce(std::vector<std::string> args, const std::function<bool(pid_t)>& ready,
                         const std::string& first_line);

/// Bytes the process `pid` read so far (rchar of /proc/PID/io), 0 when unknown.
std::uint64_t bytes_read_by(pid_t pid);

}  // namespace prodsm::test
