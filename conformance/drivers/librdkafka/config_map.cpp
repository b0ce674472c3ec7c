// SPDX-License-Identifier: Apache-2.0
// The config mapping of config_map.hpp (the README's "Configuration" table).
#include "config_map.hpp"

#include <cmath>
#include <set>
#include <sstream>

namespace prodsm::librdkafka_driver {
namespace {

using nlohmann::json;

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace

std::string contract_field(const std::string& key) {
  if (key == "linger_ms") return "linger";
  if (key == "delivery_timeout_ms") return "delivery_timeout_ns";
  if (key == "max_attempts") return "retry.max_attempts";
  if (key == "backoff_initial_ms") return "retry.backoff_initial_ns";
  if (key == "backoff_max_ms") return "retry.backoff_max_ns";
  return key;
}

std::string key_of_librdkafka_error(const std::string& message) {
  // librdkafka property -> config key; the property named first in the message wins.
  static const std::vector<std::pair<std::string, std::string>> properties = {
      {"queue.buffering.max.ms", "linger_ms"},
      {"linger.ms", "linger_ms"},
      {"batch.num.messages", "max_batch_records"},
      {"message.max.bytes", "max_batch_bytes"},
      {"batch.size", "max_batch_bytes"},
      {"queue.buffering.max.kbytes", "max_unacked_bytes"},
      {"max.in.flight", "max_in_flight"},
      {"message.timeout.ms", "delivery_timeout_ms"},
      {"message.send.max.retries", "max_attempts"},
      {"retries", "max_attempts"},
      {"retry.backoff.ms", "backoff_initial_ms"},
  };
  std::size_t best = std::string::npos;
  std::string key;
  for (const auto& [property, k] : properties) {
    const auto at = message.find(property);
    if (at != std::string::npos && (best == std::string::npos || at < best)) {
      best = at;
      key = k;
    }
  }
  return key;
}

MappedConfig map_config(const json& config) {
  MappedConfig m;
  auto unsupported = [&](const std::string& key, const std::string& why) {
    if (!m.unsupported) m.unsupported = key + ": " + why;
  };
  auto set = [&](const std::string& property, const std::string& value) { m.properties.emplace_back(property, value); };
  if (!config.is_object()) {
    unsupported("config", "not an object");
    return m;
  }
  static const std::set<std::string> known = {"linger_ms",
                                              "max_batch_records",
                                              "max_batch_bytes",
                                              "max_unacked_bytes",
                                              "max_unacked_batches",
                                              "max_in_flight",
                                              "max_pending_barriers",
                                              "delivery_timeout_ms",
                                              "max_attempts",
                                              "backoff_initial_ms",
                                              "backoff_max_ms",
                                              "retry_mode",
                                              "jitter_seed",
                                              "json",
                                              "idempotent",
                                              "match_seq_num",
                                              "fencing_token",
                                              "stream_operations"};
  for (const auto& [key, value] : config.items()) {
    if (known.count(key) == 0) unsupported(key, "not a config key of docs/conformance.md");
  }
  auto number = [&](const char* key) -> std::optional<double> {
    if (!config.contains(key) || config.at(key).is_null()) return std::nullopt;
    if (!config.at(key).is_number()) {
      unsupported(key, "not a number");
      return std::nullopt;
    }
    return config.at(key).get<double>();
  };

  // Fixed: what every run needs, none of them a contract knob (README "Configuration").
  set("compression.codec", "none");     // the proxy reads uncompressed RecordBatch v2 only
  set("acks", "all");                   // the idempotent producer requires it; the plain one gets the same
  set("request.timeout.ms", "900000");  // librdkafka's own ack timeout: held requests wait for the harness
  set("socket.timeout.ms", "300000");
  set("reconnect.backoff.ms", "10");  // a lost connection is replaced within the driver's settle wait
  set("reconnect.backoff.max.ms", "100");

  // Sequencing: S2's match_seq_num <-> Kafka's idempotent producer (baseSequence).
  for (const char* ds : {"json", "idempotent", "stream_operations"}) {
    if (config.contains(ds) && !config.at(ds).is_null()) unsupported(ds, "a Durable Streams key; the driver speaks s2");
  }
  if (config.contains("fencing_token") && !config.at("fencing_token").is_null()) {
    unsupported("fencing_token",
                "Kafka has no client-chosen fencing token (the producer epoch is assigned by the broker)");
  }
  if (auto msn = number("match_seq_num")) {
    if (*msn != 0) {
      unsupported("match_seq_num", "a new Kafka producer id starts at sequence 0; only match_seq_num 0 is expressible");
    }
    m.idempotent = true;
  }
  set("enable.idempotence", m.idempotent ? "true" : "false");

  // Linger (B1, B2): 0, or long enough that no run reaches it.
  if (!config.contains("linger_ms")) {
    unsupported("linger_ms",
                "absent means the contract's 5 ms, which librdkafka's real clock would expire while the harness's "
                "clock stands still (only 0 and lingers of 60000 ms or more run)");
  } else if (config.at("linger_ms").is_string()) {
    unsupported("linger_ms", "\"disabled\": librdkafka always has a linger timer (linger.ms 0..900000)");
  } else if (auto linger = number("linger_ms")) {
    if (*linger > 0 && *linger < kShortestRealLingerMs) {
      unsupported("linger_ms", number_text(*linger) +
                                   " ms: librdkafka's real clock would expire it while the harness's clock stands "
                                   "still (only 0 and lingers of 60000 ms or more run)");
    } else {
      double applied = *linger;
      if (applied > kLongestLibrdkafkaLingerMs && applied <= kContractLongestLingerMs) {
        applied = kLongestLibrdkafkaLingerMs;  // indistinguishable within a run (README "Time")
      }
      set("linger.ms", number_text(applied));
    }
    m.linger_ms = static_cast<std::int64_t>(*linger);
  }

  // Batching (B1, B4). Absent keys get the contract's defaults (S2: 1000 records, 1 MiB),
  // so the harness and librdkafka judge the same limits (README "Configuration").
  const double records = number("max_batch_records").value_or(1000);
  if (records > 1000) {
    unsupported("max_batch_records", "above S2's 1000-record cap, a limit of S2 Kafka does not have");
  } else {
    set("batch.num.messages", number_text(records));
  }
  const double bytes = number("max_batch_bytes").value_or(static_cast<double>(1U << 20));
  if (bytes > static_cast<double>(1U << 20)) {
    unsupported("max_batch_bytes", "above S2's 1 MiB cap, a limit of S2 Kafka does not have");
  } else if (bytes >= 8 && bytes + kMessageOverheadBeyondS2Meter < 1000) {
    unsupported("max_batch_bytes", number_text(bytes) +
                                       ": message.max.bytes = max_batch_bytes + 28 would be below librdkafka's "
                                       "minimum of 1000");
  } else {
    const std::string limit = number_text(bytes + kMessageOverheadBeyondS2Meter);
    set("message.max.bytes", limit);
    set("batch.size", limit);
  }

  // Capacity (R1, R3).
  const double unacked = number("max_unacked_bytes").value_or(static_cast<double>(5U << 20));
  if (std::fmod(unacked, 1024) != 0) {
    unsupported("max_unacked_bytes",
                "librdkafka bounds queued bytes in whole KiB (queue.buffering.max.kbytes); only multiples of 1024 "
                "run");
  } else {
    set("queue.buffering.max.kbytes", number_text(unacked / 1024));
  }
  if (auto batches = number("max_unacked_batches"); batches && *batches != 1024) {
    unsupported("max_unacked_batches", "librdkafka has no bound on batches (only the default 1024 is run)");
  }
  if (auto barriers = number("max_pending_barriers"); barriers && *barriers != 1024) {
    unsupported("max_pending_barriers", "rd_kafka_flush() calls are not bounded (only the default 1024 is run)");
  }
  const double in_flight = number("max_in_flight").value_or(5);
  set("max.in.flight", number_text(in_flight));
  m.max_in_flight = static_cast<std::int64_t>(in_flight);

  // Deadlines and retries (E4, E6, R3).
  const double timeout = number("delivery_timeout_ms").value_or(120'000);
  if (timeout < kShortestRealDeliveryTimeoutMs) {
    unsupported("delivery_timeout_ms", number_text(timeout) +
                                           " ms: librdkafka's real clock would expire it while the harness's "
                                           "clock stands still (only 60000 ms or more run)");
  } else {
    set("message.timeout.ms", number_text(timeout));
  }
  m.delivery_timeout_ms = static_cast<std::int64_t>(timeout);
  // Absent: 10 attempts, not the contract's default of 1000 (bounded by the delivery
  // timeout): librdkafka runs on a real clock, and a failing vector would run for hours.
  set("retries", number_text(number("max_attempts").value_or(10) - 1));
  const double backoff = std::ceil(number("backoff_initial_ms").value_or(5));  // whole ms (1..300000)
  set("retry.backoff.ms", number_text(backoff));
  m.retry_backoff_ms = static_cast<std::int64_t>(backoff);
  if (config.contains("backoff_max_ms")) m.ignored.emplace_back("backoff_max_ms");
  if (config.contains("jitter_seed")) m.ignored.emplace_back("jitter_seed");
  if (config.contains("retry_mode") && !config.at("retry_mode").is_null()) {
    if (!config.at("retry_mode").is_string() || config.at("retry_mode") != "all") {
      unsupported("retry_mode",
                  "librdkafka retries possibly-persisted batches whenever retries remain; it has no "
                  "no_side_effects mode");
    }
  }
  return m;
}

}  // namespace prodsm::librdkafka_driver
