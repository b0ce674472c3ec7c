// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the harness's simulated server — which sends are unanswered, and how a
// server command (ack, duplicate, fail, invalid_ack) becomes a Response. Shared by the
// built-in core driver and the external (driver-process) driver, so every target gets
// the same answers (documented in docs/conformance.md, "The simulated server").

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "prodsm/conformance/command.hpp"
#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance::detail {

/// A send as the server remembers it until it answers.
struct PendingSend {
  std::size_t index = 0;  ///< position among all sends of the trace
  std::uint64_t batch = 0;
  std::uint32_t attempt = 0;
  std::uint64_t first_ticket = 0;
  std::uint32_t count = 0;
  std::size_t body_bytes = 0;
  TraceStamp stamp;
  std::optional<std::uint64_t> session;  ///< the transport session that carried it, if reported
  /// A stream-close request (C4), not a batch: `index` is its stream_close_index.
  bool stream_close = false;
  std::uint64_t order = 0;  ///< position among every send and stream-close request made
};

class SimServer {
 public:
  explicit SimServer(const TraceConfig& config) : config_{config} {}

  /// A send the producer made.
  void sent(const Observation& send);
  /// A stream-close request the producer made (C4): answered like a send, in the same
  /// order; an ack (or duplicate: a repeated close) closes the stream at the tail.
  void sent_stream_close(const Observation& request);
  [[nodiscard]] std::size_t unanswered() const noexcept { return unanswered_.size(); }

  /// Takes the send a server command answers (oldest or newest unanswered) and builds
  /// the response; nullopt when nothing is unanswered. An invalid_ack of kind
  /// unknown_batch answers no send: it is built by unknown_batch_ack().
  std::optional<std::pair<PendingSend, Response>> answer(const Command& command);

  /// S2: after `failed` was failed by `command`, its append session is dead: takes every
  /// other unanswered send of that session (in send order) and fails it with the same
  /// error code, as a real session fails all its in-flight appends at once. Empty for
  /// Durable Streams, for acks, and for sends without a reported session.
  std::vector<std::pair<PendingSend, Response>> fail_rest_of_session(const Command& command, const PendingSend& failed);

  /// The server restarts (Command::restart_server): takes every unanswered send, in
  /// send order, each failed as connection_lost (indefinite, retryable: the connection
  /// died with it); unless `state_kept`, forgets every producer's acknowledged seqs.
  std::vector<std::pair<PendingSend, Response>> restart(bool state_kept);

  /// Puts back a send whose answer could not be delivered (the target refused the
  /// command), in send order.
  void unanswer(const PendingSend& send);

  /// The response to an ack naming a batch that was never sent (E5).
  static Response unknown_batch_ack();

 private:
  Error failure(const Command& c, const PendingSend& sent) const;
  TraceAck ack(const Command& c, const PendingSend& sent, bool& invalid) const;

  /// The lowest seq of the send's epoch the server has not acknowledged, if below the
  /// send's seq; else seq - 1 (a gap the server invents: fault injection).
  std::uint64_t expected_seq(const PendingSend& sent) const;

  TraceConfig config_;
  std::deque<PendingSend> unanswered_;
  std::uint64_t made_ = 0;  ///< sends and stream-close requests made so far (PendingSend::order)
  std::map<std::uint64_t, std::set<std::uint64_t>> acked_seqs_;        ///< Durable Streams: epoch -> seqs
  std::optional<std::pair<std::uint64_t, std::uint64_t>> last_acked_;  ///< undone by unanswer()
  std::uint64_t tail_bytes_ = 0;                                       ///< Durable Streams: bytes appended so far
  /// Durable Streams: body bytes of every batch sent, by first ticket. A sequenced batch's
  /// next offset is the bytes of every batch up to it: the server appends an idempotent
  /// producer's batches in seq order, whatever order the harness answers them in.
  std::map<std::uint64_t, std::size_t> batch_bytes_;
  bool state_lost_ = false;           ///< a restart forgot producer state: no epoch starts at initial_seq any more
  std::optional<TraceAck> last_ack_;  ///< the last valid acknowledgement given (E5: backwards, overlapping)
  /// (send index, last_ack_ before it): undone by unanswer() like last_acked_
  std::optional<std::pair<std::size_t, std::optional<TraceAck>>> last_ack_undo_;
};

/// The offset text of a Durable Streams tail of `bytes` bytes: 20 decimal digits.
std::string offset_text(std::uint64_t bytes);

}  // namespace prodsm::conformance::detail
