// SPDX-License-Identifier: Apache-2.0
#include "prodsm/s2_policy.hpp"

#include <algorithm>

#include "prodsm/s2/detail/protobuf.hpp"
#include "prodsm/s2/records.hpp"

namespace prodsm {

std::optional<ConfigError> S2Policy::validate(const Options& options) {
  if (options.fencing_token && options.fencing_token->size() > kMaxFencingTokenBytes) {
    return ConfigError{"protocol.fencing_token",
                       "must be at most 36 bytes (got " + std::to_string(options.fencing_token->size()) + ")"};
  }
  if (options.fencing_token && !s2::detail::is_valid_utf8(*options.fencing_token)) {
    return ConfigError{"protocol.fencing_token", "must be valid UTF-8 (s2.proto: optional string fencing_token)"};
  }
  return std::nullopt;
}

std::optional<std::string_view> S2Policy::check_framed_record(std::span<const std::byte> record) noexcept {
  return s2::check_framed_record({reinterpret_cast<const char*>(record.data()), record.size()});
}

S2Policy::S2Policy(const Options& options) : options_{options}, next_match_{options.match_seq_num} {}

S2Policy::Stamp S2Policy::stamp(std::uint32_t record_count) {
  Stamp s;
  if (next_match_) {  // S1: stamped at seal, advancing by the record count
    s.match_seq_num = *next_match_;
    *next_match_ += record_count;
  }
  if (options_.fencing_token) {  // S1: the same token on every batch
    s.fenced = true;
    s.token_size = static_cast<std::uint8_t>(options_.fencing_token->size());
    std::copy(options_.fencing_token->begin(), options_.fencing_token->end(), s.token.begin());
  }
  return s;
}

std::optional<std::string> S2Policy::check_ack(const Stamp& stamp, std::uint32_t record_count, const Ack& ack) {
  if (ack.end_seq_num < ack.start_seq_num || ack.end_seq_num - ack.start_seq_num != record_count) {
    return "ack covers seq_nums [" + std::to_string(ack.start_seq_num) + ", " + std::to_string(ack.end_seq_num) +
           ") but the batch has " + std::to_string(record_count) + " records";
  }
  if (stamp.match_seq_num && ack.start_seq_num != *stamp.match_seq_num) {
    return "ack starts at seq_num " + std::to_string(ack.start_seq_num) + " but the batch was stamped match_seq_num " +
           std::to_string(*stamp.match_seq_num);
  }
  return std::nullopt;
}

std::optional<std::string> S2Policy::check_order(const Ack& previous, const Ack& next) {
  if (next.start_seq_num < previous.end_seq_num) {
    return "positions went backwards: ack starts at " + std::to_string(next.start_seq_num) +
           " before the previous batch's end " + std::to_string(previous.end_seq_num);
  }
  return std::nullopt;
}

}  // namespace prodsm
