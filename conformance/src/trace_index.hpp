// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: a Trace indexed once for the checkers and the model — tickets, sends,
// batches, barriers, completions, each with the step and the global observation order
// (seq) at which it happened.

#include <map>
#include <optional>
#include <vector>

#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance::detail {

struct TicketInfo {
  std::size_t submit_step = 0;
  Instant at{};
  std::size_t size = 0;
  std::uint64_t meter = 0;
  int completions = 0;
  std::size_t done_step = 0;  ///< valid when completions > 0
  std::size_t done_seq = 0;
  bool ok = false;
  TraceAck ack;
  Error error;
  std::optional<std::uint64_t> batch;  ///< the batch that carried it, once sent
};

struct SendInfo {
  std::size_t step = 0;
  std::size_t seq = 0;
  Instant at{};
  const Observation* obs = nullptr;
  std::optional<std::size_t> response_step;
  const Response* response = nullptr;
};

struct BatchInfo {
  std::uint64_t id = 0;
  std::uint64_t first = 0;
  std::uint32_t count = 0;
  std::vector<std::size_t> sends;  ///< send indices, in order
  bool completed = false;
  std::size_t completed_step = 0;
  std::size_t completed_seq = 0;
  bool completed_ok = false;
};

struct FlushInfo {
  std::size_t step = 0;
  bool accepted = false;
  std::uint64_t barrier = 0;
  std::uint64_t cutoff = 0;  ///< covers tickets < cutoff
};

struct DoneInfo {
  std::size_t step = 0;
  std::size_t seq = 0;
  const Observation* obs = nullptr;
};

struct BarrierDoneInfo {
  std::size_t step = 0;
  std::size_t seq = 0;
  const Observation* obs = nullptr;
};

struct ClosedInfo {
  std::size_t step = 0;
  std::size_t seq = 0;
  const Observation* obs = nullptr;
};

struct TraceIndex {
  explicit TraceIndex(const Trace& t);

  const Trace& trace;
  const TraceConfig& config;
  std::vector<TicketInfo> tickets;  ///< by ticket
  std::vector<SendInfo> sends;      ///< by send index
  std::map<std::uint64_t, BatchInfo> batches;
  std::vector<FlushInfo> flushes;
  std::map<std::uint64_t, std::size_t> flush_by_barrier;  ///< barrier id -> flushes index
  std::vector<DoneInfo> dones;
  std::vector<BarrierDoneInfo> barrier_dones;
  std::vector<ClosedInfo> closeds;
  std::vector<std::size_t> close_steps;
  std::vector<std::size_t> abort_steps;
  std::vector<std::size_t> would_block_steps;
  std::vector<std::pair<std::size_t, std::size_t>> capacity;  ///< (step, seq)
  std::vector<std::size_t> ticket_ids_out_of_order;           ///< steps with a non-dense ticket
  /// Steps with a send naming no record or records never accepted; such sends are kept
  /// in `sends` but form no batch (so no checker indexes past the tickets).
  std::vector<std::size_t> malformed_sends;
  /// Steps with a completion naming records never accepted (not indexed either).
  std::vector<std::size_t> malformed_dones;
  std::size_t observations = 0;  ///< total observations (seq runs 0..observations-1)
  /// One past the seq of the last observation of the producer itself: stream-close
  /// requests and results (C4) excluded — a stream close may finish after Closed.
  std::size_t producer_observations_end = 0;
  std::size_t first_seq_of_step(std::size_t step) const { return step_first_seq[step]; }
  std::vector<std::size_t> step_first_seq;
  /// Accepted tickets before step `step` (the cutoff a flush at that step gets).
  std::vector<std::uint64_t> accepted_before;
};

}  // namespace prodsm::conformance::detail
