// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file results.hpp
/// The outcomes both adapters report for Durable Streams records, flushes and stream
/// closes (P4, E1, E2, C5): one set of result types for the Asio and the blocking
/// producer.

#include <cstdint>
#include <memory>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/durable_streams_policy.hpp"
#include "prodsm/error.hpp"
#include "prodsm/ids.hpp"

namespace prodsm::ds {

/// What a successful record completion carries (P4): its ticket, its index in the
/// batch, and the batch acknowledgement (next offset, duplicate flag) shared by every
/// record of the batch.
struct RecordAck {
  Ticket ticket;            ///< the record's ticket (P2), as submit returned it
  std::uint64_t index = 0;  ///< index of the record in its batch (P4)
  /// The batch's acknowledgement (P4, S3), shared by every record of the batch; never null.
  std::shared_ptr<const DurableStreamsPolicy::Ack> batch_ack;
  /// Stream-Next-Offset after the record's batch (opaque; empty on a duplicate, S3).
  [[nodiscard]] const std::string& next_offset() const { return batch_ack->next_offset; }
  /// The batch was a duplicate of one already appended (S3).
  [[nodiscard]] bool duplicate() const { return batch_ack->duplicate; }
  /// A duplicate answering the batch's first attempt: an earlier incarnation with the
  /// same producer id and epoch appended those seqs, not this producer (S3; only with
  /// ProducerStart::resume — the other start modes fail instead).
  [[nodiscard]] bool earlier_incarnation() const { return batch_ack->earlier_incarnation; }
};

/// A record's outcome: durable, or the error that failed it (E1, E2, C5).
using RecordResult = tl::expected<RecordAck, Error>;
/// A flush's or close's outcome (F5, C1).
using VoidResult = tl::expected<void, Error>;
/// A stream close's outcome: the stream's final offset (empty when the server sent
/// none), or the error (S6).
using CloseStreamResult = tl::expected<CloseResult, Error>;
/// create_stream's outcome: created (201) or already there with the same configuration
/// (200), or the error (409 conflict: another configuration).
using CreateStreamResult = tl::expected<CreateResult, Error>;
/// head_stream's outcome: content type, next offset, closed flag, or the error.
using HeadStreamResult = tl::expected<HeadResult, Error>;
/// delete_stream's outcome.
using DeleteStreamResult = tl::expected<void, Error>;

}  // namespace prodsm::ds
