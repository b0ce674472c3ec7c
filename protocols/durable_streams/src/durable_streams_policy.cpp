// SPDX-License-Identifier: Apache-2.0
#include "prodsm/durable_streams_policy.hpp"

#include "prodsm/ds/detail/json_validity.hpp"

namespace prodsm {

std::optional<ConfigError> DurableStreamsPolicy::validate(const Options& options) {
  if (options.body_format != BodyFormat::bytes && options.body_format != BodyFormat::json) {
    return ConfigError{"protocol.body_format", "must be BodyFormat::bytes or BodyFormat::json"};
  }
  if (!options.idempotent) return std::nullopt;
  const IdempotentOptions& id = *options.idempotent;
  if (id.producer_id.empty() || id.producer_id.size() > 256) {
    return ConfigError{"protocol.idempotent.producer_id",
                       "must be 1..256 bytes (got " + std::to_string(id.producer_id.size()) + ")"};
  }
  for (const char c : id.producer_id) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e) {
      return ConfigError{"protocol.idempotent.producer_id",
                         "must be visible ASCII (0x21..0x7e) to travel in the Producer-Id header"};
    }
  }
  if (id.first_attempt_duplicates != FirstAttemptDuplicates::accept &&
      id.first_attempt_duplicates != FirstAttemptDuplicates::fail) {
    return ConfigError{"protocol.idempotent.first_attempt_duplicates", "must be accept or fail"};
  }
  if (id.epoch > kMaxSequenceValue) {
    return ConfigError{"protocol.idempotent.epoch",
                       "must be in 0..9007199254740991 (got " + std::to_string(id.epoch) + ")"};
  }
  if (id.seq > kMaxSequenceValue) {
    return ConfigError{"protocol.idempotent.seq",
                       "must be in 0..9007199254740991 (got " + std::to_string(id.seq) + ")"};
  }
  return std::nullopt;
}

DurableStreamsPolicy::DurableStreamsPolicy(const Options& options)
    : options_{options},
      epoch_{options.idempotent ? options.idempotent->epoch : 0},
      next_seq_{options.idempotent ? options.idempotent->seq : 0} {
  if (options_.body_format == BodyFormat::json && options_.validate_json) {
    json_validity_ = std::make_unique<ds::detail::JsonValidity>();
  }
}
DurableStreamsPolicy::~DurableStreamsPolicy() = default;
DurableStreamsPolicy::DurableStreamsPolicy(DurableStreamsPolicy&&) noexcept = default;
DurableStreamsPolicy& DurableStreamsPolicy::operator=(DurableStreamsPolicy&&) noexcept = default;

std::optional<std::string_view> DurableStreamsPolicy::check_json(std::span<const std::byte> record) const {
  const auto refusal = json_validity_->check({reinterpret_cast<const char*>(record.data()), record.size()});
  if (!refusal) return std::nullopt;
  if (refusal->out_of_memory) return "no memory to validate the JSON record";
  if (refusal->number) {
    return "record is not exactly one JSON value: a number is malformed or beyond the double range (1e400), which a "
           "JSON server cannot keep";
  }
  return "record is not exactly one JSON value";
}

void DurableStreamsPolicy::frame_seal(BatchBody& body) const {
  if (json()) body.push_back(std::byte{']'});
}

DurableStreamsPolicy::Stamp DurableStreamsPolicy::stamp(std::uint32_t record_count) {
  (void)record_count;  // Durable Streams sequences per batch, not per record (S2)
  if (!options_.idempotent) return Stamp{};
  return Stamp{true, epoch_, next_seq_++};
}

std::optional<std::string> DurableStreamsPolicy::claim_epoch(std::uint64_t server_epoch) {
  if (!options_.idempotent) return std::string{"not an idempotent producer"};
  if (server_epoch < epoch_) {
    return "server reported epoch " + std::to_string(server_epoch) + " below ours (" + std::to_string(epoch_) + ")";
  }
  if (server_epoch >= kMaxSequenceValue) {
    return "cannot claim an epoch above 2^53-1 (server epoch " + std::to_string(server_epoch) + ")";
  }
  epoch_ = server_epoch + 1;  // S5: one step claims server epoch + 1 ...
  next_seq_ = 0;              // ... and a new epoch starts at seq 0
  return std::nullopt;
}

std::optional<std::string> DurableStreamsPolicy::check_ack(const Stamp& stamp, std::uint32_t record_count,
                                                           const Ack& ack) const {
  (void)record_count;
  if (ack.duplicate && !stamp.sequenced) {
    return std::string{"duplicate reported for a plain (unsequenced) append"};
  }
  if (!ack.duplicate && ack.next_offset.empty()) {
    return std::string{"acknowledgement without Stream-Next-Offset"};
  }
  return std::nullopt;
}

}  // namespace prodsm
