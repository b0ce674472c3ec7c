// SPDX-License-Identifier: Apache-2.0
#pragma once
// SIGINT/SIGTERM handling shared by `prodsm produce`, `prodsm bench` and `prodsm read`
// (SIGHUP too, unless it was ignored at start, as nohup does: a closed terminal or ssh
// session is an interrupt, not a kill):
// the first signal prints at once (from the handler) what the command now waits for and
// how to abort, and asks the command to stop its input, flush what was accepted and exit
// 130; a second one kills at once — unless it repeats the first: the same signal from
// the same process within kRepeatWindowMs (timeout(1) signals the command, then its
// process group). `prodsm produce` asks for abort_on_second_interrupt: its second signal
// aborts the producer, so the run still says what was acknowledged; the third kills.

#include <csignal>

namespace prodsm::tools {

/// A second SIGINT/SIGTERM that is the same signal, sent by the same process as the
/// first, within this many ms (1 s) is the same request, not a second one: it does not
/// abort.
inline constexpr long kRepeatWindowMs = 1000;

/// Set by the first SIGINT/SIGTERM once install_interrupt_handler ran.
bool interrupted() noexcept;

/// Set by the second SIGINT/SIGTERM (not a repeat of the first) once
/// abort_on_second_interrupt ran: the command should abort at once (the producer's abort,
/// C5) and still print what it knows. Polled: a command waiting on something that never
/// polls is killed by the third signal.
bool abort_requested() noexcept;

/// Makes the second signal (not a repeat of the first) set abort_requested() and write
/// `message` to stderr (a string literal: it must outlive the handler) instead of
/// killing; the third kills. nullptr: the second kills again. Call from the thread the
/// signals are routed to, or before routing them.
void abort_on_second_interrupt(const char* message) noexcept;

/// The line the first signal writes to stderr at once (from the handler, with write(2)):
/// what the command waits for and how to abort. `message` must outlive the handler (a
/// string literal). Call before route_interrupts_here(true); call again (from the thread
/// the signals are routed to) when what an interrupt would stop changes.
void set_interrupt_message(const char* message) noexcept;

/// `prodsm produce` once no more input is read (Durable Streams and S2 alike): an
/// interrupt from now on stops only the waiting for acknowledgements, and the run ends as
/// it would have without it. `nothing_left_out`: the whole input was read and accepted
/// (no bad line, no failure), so the message says nothing is left out.
void announce_input_read(bool nothing_left_out) noexcept;

/// Makes the first signal also end the reading of stdin, without a race: the handler
/// puts /dev/null over file descriptor 0 (dup2(2)), so a read that starts after the
/// signal, even one just past the caller's interrupted() check, sees end of file at once
/// instead of waiting for input that may never come (a FIFO whose writer stays open).
/// A read already blocked returns EINTR as before. Call before route_interrupts_here(true)
/// in commands that read records from stdin (a FIFO or terminal given with -i is read
/// through stdin too). False when /dev/null cannot be opened (the race then remains).
bool stop_stdin_on_interrupt() noexcept;

/// Installs the handler (a second signal kills, unless it repeats the first, see
/// kRepeatWindowMs, or abort_on_second_interrupt asked it to ask for an abort; no SA_RESTART: a blocked read returns
/// EINTR). Call with `block` true before any other thread starts (threads inherit the blocked mask), then with false
/// once they run, so only this thread takes the signal.
void route_interrupts_here(bool block);

/// Blocks (true) or unblocks (false) SIGINT/SIGTERM on the calling thread only, without
/// touching the handler: around starting a thread after route_interrupts_here ran (the
/// new thread inherits the blocked mask), so the signals keep reaching only the thread
/// that routed them.
void mask_interrupts(bool block);

}  // namespace prodsm::tools
