// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file command.hpp
/// The harness's command language: what a scenario vector or a generated property
/// asks a producer and its simulated server to do. Language-neutral (JSON in vectors,
/// JSON lines in the driver protocol): sends are named by their position among the
/// sends not yet answered, never by an SDK's internal ids.

#include <cstdint>
#include <optional>
#include <string>

#include "prodsm/error.hpp"
#include "prodsm/time.hpp"

namespace prodsm::conformance {

/// One harness command: a client call (submit, flush, close, abort), a move of virtual
/// time, or the simulated server's answer to one unanswered send.
struct Command {
  /// What the command does.
  enum class Kind : std::uint8_t {
    submit,       ///< client: submit `record`
    flush,        ///< client: flush barrier
    close,        ///< client: close
    abort,        ///< client: abort
    advance,      ///< time: move `advance_ns` forward, firing every timer due on the way
    ack,          ///< server: acknowledge an unanswered send
    duplicate,    ///< server: acknowledge it as a duplicate (Durable Streams 204, S3)
    fail,         ///< server/transport: fail it with `fail_code`
    invalid_ack,  ///< server: answer it with an acknowledgement that breaks the protocol (E5)
    /// server: restarts. Every unanswered send fails as connection_lost (indefinite) in the
    /// same instant; with `server_state_kept` false the server also forgets every
    /// producer's state (acknowledged seqs), so a later sequence_gap reports expected seq 0.
    restart_server,
    /// client: closes the *stream* on the server (C4, S6), as opposed to closing the
    /// producer: a flush barrier, then — only if every covered record succeeded — one
    /// stream-close request carrying no record; the producer stays open. Durable Streams
    /// with config `stream_operations: true` (on the core target that runs prodsm's
    /// Durable Streams producer client: the bare core has no stream).
    close_stream,
  };
  /// Which unanswered send a server command answers.
  enum class Which : std::uint8_t { oldest, newest };
  /// How an invalid acknowledgement is wrong.
  enum class Invalid : std::uint8_t {
    wrong_count,    ///< S2: range length differs from the record count; DS: no offset
    unknown_batch,  ///< an ack for a batch that was never sent
    /// positions go backwards: S2 -> the range starts one record before the previous
    /// ack's end (count right); Durable Streams -> a next offset below the previous ack's
    backwards,
    /// S2: the range overlaps the previous ack's by one record and ends one past it (count
    /// right, start wrong); Durable Streams: the previous ack's next offset again
    overlapping,
  };

  Kind kind = Kind::submit;                      ///< which command
  std::string record;                            ///< submit
  Duration advance_ns{};                         ///< advance
  Which which = Which::oldest;                   ///< ack / duplicate / fail / invalid_ack
  ErrorCode fail_code = ErrorCode::unavailable;  ///< fail
  std::optional<Duration> retry_after_ns;        ///< fail with unavailable
  Invalid invalid = Invalid::wrong_count;        ///< invalid_ack
  bool server_state_kept = true;                 ///< restart_server: producer state survives

  /// A client submit of `record` (its bytes).
  static Command submit_record(std::string record) {
    Command c;
    c.kind = Kind::submit;
    c.record = std::move(record);
    return c;
  }
  /// A command of `kind` with every other field at its default (server answers: the oldest send).
  static Command of(Kind kind) {
    Command c;
    c.kind = kind;
    return c;
  }
  /// Moves virtual time forward by `d` (ns), firing every timer due on the way.
  static Command advance_by(Duration d) {
    Command c;
    c.kind = Kind::advance;
    c.advance_ns = d;
    return c;
  }
  /// Fails the `which` unanswered send with error `code` (no Retry-After); the simulated
  /// server fills in the rest of the error.
  static Command fail_with(ErrorCode code, Which which = Which::oldest) {
    Command c;
    c.kind = Kind::fail;
    c.fail_code = code;
    c.which = which;
    return c;
  }
};

/// "submit(3B)", "fail(oldest, stream_closed)", ... for counterexamples.
std::string describe(const Command& command);

}  // namespace prodsm::conformance
