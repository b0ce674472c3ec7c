// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file config_map.hpp
/// How a vector's `config` object (docs/conformance.md, protocol `s2`) becomes librdkafka
/// configuration properties, and which keys librdkafka cannot express. The table and the
/// reasons are in conformance/drivers/librdkafka/README.md ("Configuration").

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace prodsm::librdkafka_driver {

/// librdkafka refuses a record when 36 + its length exceeds message.max.bytes
/// (RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD, rd_kafka_msg_new0); S2 meters a record as 8 + its
/// length. message.max.bytes = max_batch_bytes + this puts both limits at the same length.
inline constexpr std::int64_t kMessageOverheadBeyondS2Meter = 36 - 8;

/// A linger shorter than this (other than 0) is not run: on the real clock it would
/// expire while the harness's clock stands still (README, "Time").
inline constexpr std::int64_t kShortestRealLingerMs = 60'000;
/// The longest linger.ms librdkafka accepts (15 min).
inline constexpr std::int64_t kLongestLibrdkafkaLingerMs = 900'000;
/// The contract's longest linger (1 h, prodsm::Linger::kMaxLinger).
inline constexpr std::int64_t kContractLongestLingerMs = 3'600'000;
/// A delivery timeout shorter than this is not run (README, "Time").
inline constexpr std::int64_t kShortestRealDeliveryTimeoutMs = 60'000;

/// The outcome of mapping one config object.
struct MappedConfig {
  /// librdkafka global properties, in the order they are set.
  std::vector<std::pair<std::string, std::string>> properties;
  bool idempotent = false;  ///< match_seq_num given (0): enable.idempotence=true
  /// Set when a key cannot be expressed: "<key>: why" (the driver answers `unsupported`
  /// once librdkafka has validated the rest). An unsupported key sets no property.
  std::optional<std::string> unsupported;
  /// The linger the harness reads (ms; 0 = none); the delivery deadline the harness's
  /// model uses (ms), for the driver's advance rules.
  std::int64_t linger_ms = 5;
  std::int64_t delivery_timeout_ms = 120'000;
  std::int64_t retry_backoff_ms = 100;  ///< retry.backoff.ms in effect
  std::int64_t max_in_flight = 5;       ///< max.in.flight in effect
  /// Keys accepted but with no librdkafka property (listed in the start reply).
  std::vector<std::string> ignored;
};

/// Maps `config` (a vector's config object). Never throws: a value of the wrong JSON type
/// is reported through `unsupported` naming the key.
MappedConfig map_config(const nlohmann::json& config);

/// The contract's field name (prodsm::ConfigError::field, what vectors' `config_error`
/// names) for a config key: linger_ms -> linger, max_attempts -> retry.max_attempts, ...
std::string contract_field(const std::string& key);

/// The config key a librdkafka configuration error is about, found from the librdkafka
/// property it names (e.g. "`max.in.flight` must be ..." -> "max_in_flight"); empty when
/// none is recognised.
std::string key_of_librdkafka_error(const std::string& message);

}  // namespace prodsm::librdkafka_driver
