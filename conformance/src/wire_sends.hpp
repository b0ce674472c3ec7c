// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: what a Durable Streams producer's requests on the wire were, as the trace
// records them (docs/conformance.md, "Wire targets"). A wire target — prodsm's adapters,
// or any SDK over its own HTTP client (`--serve`) — says nothing about its batches; the
// harness reads them off the requests it receives:
//  - a POST with `Stream-Closed: true` is a stream-close request (C4) of the oldest
//    stream close still running;
//  - any other POST is a batch attempt: its stamp from Producer-Id / Producer-Epoch /
//    Producer-Seq (S2), its records by matching the body against the records the target
//    accepted, which a batch holds consecutively (bytes: concatenated; JSON: `[r,r,...]`).
//    A body equal to an earlier batch's whose last attempt was answered is that batch's
//    resend (attempt + 1; with the idempotent producer, the same epoch and seq, or a new
//    epoch after a claim, S5); otherwise it is a new batch, from the lowest ticket no
//    batch holds yet (or, for a producer that sends a later batch first, the first run of
//    records no batch holds that frames to it). A body that matches nothing is recorded
//    with no records (B5 then names it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/conformance/trace.hpp"
#include "wire_server.hpp"

namespace prodsm::conformance::detail {

class WireSends {
 public:
  explicit WireSends(const TraceConfig& config) : config_{config} {}

  /// The target accepted a record (its ticket is the count so far).
  void accepted(std::string record) { records_.push_back(std::move(record)); }
  /// The target took a flush barrier (or a close) after every record accepted so far: no
  /// batch of a conforming producer spans it (B5). Where bytes alone cannot say which
  /// records a batch holds (empty records), the reading that spans no cut is taken.
  void cut() { cuts_.push_back(records_.size()); }
  /// Records accepted so far.
  [[nodiscard]] std::size_t accepted_count() const noexcept { return records_.size(); }
  /// A stream close started (C4): its requests carry op `op`.
  void stream_close_started(std::uint64_t op) { stream_close_ops_.push_back(op); }
  /// Stream close `op` finished: later stream-close requests belong to a later op.
  void stream_close_finished(std::uint64_t op);
  /// The harness answered the attempt that was send `send_index`: acknowledged (an ack or
  /// a duplicate: the batch is never sent again), or failed (it may be resent).
  void answered(std::size_t send_index, bool acknowledged);

  /// The observation request `r` is: a send (`send_index` = the next send index) or a
  /// stream-close request (`stream_close_index`); nullopt for anything else (a GET, a
  /// PUT, a sequenced close carrying no record), which is not part of the trace.
  std::optional<Observation> decode(const WireRequest& r, std::size_t send_index, std::size_t stream_close_index);

 private:
  struct Batch {
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::string body;
    std::uint32_t attempts = 0;
    TraceStamp last_stamp;
    std::optional<std::size_t> outstanding;  ///< send index of an attempt not yet answered
    bool done = false;
  };

  /// The framed body of records [first, first + count).
  std::string frame(std::uint64_t first, std::uint32_t count) const;
  /// The count c >= 1 such that records [first, first + c) frame to `body`, if any; of
  /// several (empty records), the largest that spans no cut and keeps max_batch_records.
  std::optional<std::uint32_t> match_new(std::uint64_t first, const std::string& body) const;

  TraceConfig config_;
  std::vector<std::string> records_;
  std::vector<std::size_t> cuts_;  ///< tickets accepted before each barrier or close
  std::vector<Batch> batches_;     ///< in first-send order (= seal order)
  std::vector<std::uint64_t> stream_close_ops_;
};

}  // namespace prodsm::conformance::detail
