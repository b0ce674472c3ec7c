// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file kafka_wire.hpp
/// The little of the Kafka wire protocol the librdkafka conformance driver reads and
/// writes: request/response framing, the request header, ProduceRequest v3..v8 (the
/// non-flexible versions; librdkafka 2.0.2 speaks up to v7 to its mock cluster) with
/// RecordBatch v2 (magic 2, no compression), and ProduceResponse v3..v8. It is the
/// conformance harness reading the wire — never a Kafka client: nothing here is sent to
/// a broker. Sources: the Kafka protocol guide (https://kafka.apache.org/protocol) and
/// the record-batch format (https://kafka.apache.org/documentation/#recordbatch).
///
/// Every parser takes a whole frame as bytes and returns either the decoded value or an
/// error text naming what is wrong (truncated, bad magic, CRC mismatch, compressed,
/// flexible version); none of them throws.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace prodsm::kafka_wire {

/// A decoding failure: what was wrong and where.
struct WireError {
  std::string message;  ///< e.g. "ProduceRequest: truncated at byte 42"
};

/// A decoded value or a WireError.
template <class T>
using Parsed = std::variant<T, WireError>;

/// Kafka API keys the driver cares about.
inline constexpr std::int16_t kApiProduce = 0;
inline constexpr std::int16_t kApiInitProducerId = 22;

/// Kafka error codes the driver renders or reads (the protocol guide's table).
inline constexpr std::int16_t kErrNone = 0;
inline constexpr std::int16_t kErrUnknownTopicOrPartition = 3;
inline constexpr std::int16_t kErrRequestTimedOut = 7;
inline constexpr std::int16_t kErrNotEnoughReplicas = 19;
inline constexpr std::int16_t kErrOutOfOrderSequenceNumber = 45;
inline constexpr std::int16_t kErrInvalidProducerEpoch = 47;
inline constexpr std::int16_t kErrInvalidRecord = 87;

/// Bytes of a complete frame at the start of `buffered` (the 4-byte big-endian size plus
/// that many bytes), or nullopt while the frame is incomplete. A declared size above
/// `max_frame_bytes` (or negative) is an error: the stream cannot be framed any more.
Parsed<std::optional<std::size_t>> frame_size(std::string_view buffered, std::size_t max_frame_bytes);

/// The fixed start of a request header (header v1 and v2 begin alike).
struct RequestHeader {
  std::int16_t api_key = 0;         ///< which API (kApiProduce, ...)
  std::int16_t api_version = 0;     ///< the version the client chose for this request
  std::int32_t correlation_id = 0;  ///< echoed by the response; pairs them on a connection
};

/// Reads the request header of `frame` (a whole frame, size prefix included).
Parsed<RequestHeader> parse_request_header(std::string_view frame);

/// The correlation id of a response `frame` (size prefix included): every response
/// header starts with it.
Parsed<std::int32_t> parse_response_correlation_id(std::string_view frame);

/// One record of a RecordBatch v2. A null key or value (length -1) is nullopt.
struct Record {
  std::int64_t timestamp_ms = 0;     ///< the batch's base timestamp + the record's delta (CreateTime)
  std::int32_t offset_delta = 0;     ///< its index in the batch as the producer numbered it
  std::optional<std::string> key;    ///< the record key (bytes); nullopt = null
  std::optional<std::string> value;  ///< the record value (bytes); nullopt = null
  std::size_t header_count = 0;      ///< record headers (not decoded further)
};

/// A RecordBatch v2 (magic 2) as a producer writes it.
struct RecordBatch {
  std::int64_t base_offset = 0;        ///< 0 from a producer; the broker assigns offsets
  std::int16_t attributes = 0;         ///< bits 0-2 compression, bit 4 transactional, bit 5 control
  std::int32_t last_offset_delta = 0;  ///< offset delta of the last record (count - 1 from a producer)
  std::int64_t base_timestamp_ms = 0;  ///< the first record's timestamp (ms since the epoch)
  std::int64_t producer_id = -1;       ///< -1 when the producer is not idempotent
  std::int16_t producer_epoch = -1;    ///< -1 when the producer is not idempotent
  std::int32_t base_sequence = -1;     ///< sequence of the first record; -1 when not idempotent
  std::vector<Record> records;         ///< in offset-delta order
};

/// One partition's data in a ProduceRequest.
struct PartitionData {
  std::int32_t partition = 0;        ///< the partition index
  std::vector<RecordBatch> batches;  ///< the `records` field: zero or more record batches
};

/// One topic's data in a ProduceRequest.
struct TopicData {
  std::string name;                       ///< the topic
  std::vector<PartitionData> partitions;  ///< in request order
};

/// A ProduceRequest v3..v8 (non-flexible).
struct ProduceRequest {
  RequestHeader header;                         ///< api key 0, version 3..8
  std::optional<std::string> transactional_id;  ///< null unless transactional
  std::int16_t acks = 0;                        ///< -1 = all in-sync replicas
  std::int32_t timeout_ms = 0;                  ///< the broker's replication wait
  std::vector<TopicData> topics;                ///< in request order
};

/// Decodes a whole ProduceRequest frame (size prefix included). Refuses versions outside
/// 3..8 (v9+ is flexible; below 3 carries no RecordBatch v2), a record batch with another
/// magic, a compressed batch, a CRC-32C mismatch, a record count that disagrees with the
/// bytes, and any truncation.
Parsed<ProduceRequest> parse_produce_request(std::string_view frame);

/// Decodes the RecordBatch v2 sequence of a `records` field (possibly several batches).
Parsed<std::vector<RecordBatch>> parse_record_batches(std::string_view records);

/// One partition's answer in a ProduceResponse.
struct PartitionResponse {
  std::int32_t partition = 0;            ///< the partition index
  std::int16_t error_code = kErrNone;    ///< a Kafka error code; kErrNone = appended
  std::int64_t base_offset = -1;         ///< offset of the batch's first record; -1 on error
  std::int64_t log_append_time_ms = -1;  ///< -1 = CreateTime topic (v2+)
  std::int64_t log_start_offset = -1;    ///< v5+
};

/// Encodes a ProduceResponse frame (size prefix included) for `version` 3..8, one topic.
/// (v8's record_errors are empty and its error_message null.)
std::string encode_produce_response(std::int32_t correlation_id, std::int16_t version, std::string_view topic,
                                    const std::vector<PartitionResponse>& partitions,
                                    std::int32_t throttle_time_ms = 0);

/// Encodes a ProduceRequest frame v3..v8 with one topic (the tests' byte scripts; the
/// driver never sends one). Batches are written with encode_record_batch.
std::string encode_produce_request(const ProduceRequest& request, std::string_view client_id);

/// Encodes a RecordBatch v2 (uncompressed, CRC-32C filled in) from `batch`; the records'
/// offset deltas and timestamps are written as given.
std::string encode_record_batch(const RecordBatch& batch);

/// CRC-32C (Castagnoli) of `bytes`, as RecordBatch v2 uses.
std::uint32_t crc32c(std::string_view bytes);

}  // namespace prodsm::kafka_wire
