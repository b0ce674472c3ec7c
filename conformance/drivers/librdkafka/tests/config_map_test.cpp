// SPDX-License-Identifier: Apache-2.0
// The config mapping (config_map.hpp): what a vector's config becomes in librdkafka and
// which keys are not expressible. The README's "Configuration" table, as tests.
#include "config_map.hpp"

#include <gtest/gtest.h>

namespace lk = prodsm::librdkafka_driver;
using nlohmann::json;

namespace {

std::string property(const lk::MappedConfig& m, const std::string& key) {
  for (const auto& [k, v] : m.properties) {
    if (k == key) return v;
  }
  return "<unset>";
}

json base() {
  return {{"linger_ms", 3600000}, {"delivery_timeout_ms", 7200000}};
}

/// base() with `extra`'s keys added.
json with(const json& extra) {
  json j = base();
  j.update(extra);
  return j;
}

}  // namespace

// B2 on a real clock: only a linger of 0 or one no run reaches is deterministic.
TEST(ConfigMap, LingerIsZeroOrLongerThanAnyRun) {
  auto m = lk::map_config(base());
  EXPECT_FALSE(m.unsupported);
  EXPECT_EQ(property(m, "linger.ms"), "900000");  // 1 h applied as librdkafka's longest, 15 min
  m = lk::map_config({{"linger_ms", 0}});
  EXPECT_FALSE(m.unsupported);
  EXPECT_EQ(property(m, "linger.ms"), "0");
  for (const json& linger : {json(1), json(5), json(59999), json("disabled")}) {
    m = lk::map_config({{"linger_ms", linger}, {"delivery_timeout_ms", 7200000}});
    ASSERT_TRUE(m.unsupported) << linger;
    EXPECT_EQ(m.unsupported->rfind("linger_ms: ", 0), 0U);
    EXPECT_EQ(property(m, "linger.ms"), "<unset>");  // an unsupported key sets nothing
  }
  EXPECT_TRUE(lk::map_config(json::object()).unsupported);  // absent = the contract's 5 ms
  // Past the contract's 1 h: handed to librdkafka as is, which refuses it (B3).
  EXPECT_EQ(property(lk::map_config({{"linger_ms", 3600001}}), "linger.ms"), "3600001");
}

// B4: librdkafka refuses a record when 36 + length > message.max.bytes; S2 meters 8 + length.
TEST(ConfigMap, MaxBatchBytesPutsTheRecordLimitWhereS2MetersIt) {
  auto m = lk::map_config(base());
  EXPECT_EQ(property(m, "message.max.bytes"), "1048604");  // the contract's 1 MiB + 28
  EXPECT_EQ(property(m, "batch.size"), "1048604");
  m = lk::map_config(with({{"max_batch_bytes", 1000}}));
  EXPECT_EQ(property(m, "message.max.bytes"), "1028");
  m = lk::map_config(with({{"max_batch_bytes", 100}}));
  ASSERT_TRUE(m.unsupported);
  EXPECT_EQ(m.unsupported->rfind("max_batch_bytes: ", 0), 0U);
  EXPECT_TRUE(lk::map_config(with({{"max_batch_bytes", 1048577}})).unsupported);  // S2's cap
  // Below the contract's minimum: librdkafka judges (and refuses) it.
  EXPECT_EQ(property(lk::map_config(with({{"max_batch_bytes", 0}})), "message.max.bytes"), "28");
}

TEST(ConfigMap, LimitsAndRetries) {
  auto m = lk::map_config(with({{"max_batch_records", 7},
                                {"max_in_flight", 2},
                                {"max_unacked_bytes", 4096},
                                {"max_attempts", 3},
                                {"backoff_initial_ms", 0.001},
                                {"backoff_max_ms", 9},
                                {"jitter_seed", 1}}));
  EXPECT_FALSE(m.unsupported);
  EXPECT_EQ(property(m, "batch.num.messages"), "7");
  EXPECT_EQ(property(m, "max.in.flight"), "2");
  EXPECT_EQ(property(m, "queue.buffering.max.kbytes"), "4");
  EXPECT_EQ(property(m, "retries"), "2");
  EXPECT_EQ(property(m, "retry.backoff.ms"), "1");  // whole ms, rounded up
  EXPECT_EQ(m.ignored, (std::vector<std::string>{"backoff_max_ms", "jitter_seed"}));
  // Defaults are the contract's.
  m = lk::map_config(base());
  EXPECT_EQ(property(m, "batch.num.messages"), "1000");
  EXPECT_EQ(property(m, "max.in.flight"), "5");
  EXPECT_EQ(property(m, "queue.buffering.max.kbytes"), "5120");
  EXPECT_EQ(property(m, "retries"), "9");  // not the contract's 1000: see the README's max_attempts row
  EXPECT_EQ(property(m, "retry.backoff.ms"), "5");
  EXPECT_EQ(property(m, "message.timeout.ms"), "7200000");
  // Not expressible.
  for (const json& extra : {json{{"max_unacked_bytes", 1000}}, json{{"max_unacked_batches", 3}},
                            json{{"max_pending_barriers", 2}}, json{{"retry_mode", "no_side_effects"}},
                            json{{"delivery_timeout_ms", 1000}}, json{{"max_batch_records", 1001}}}) {
    EXPECT_TRUE(lk::map_config(with(extra)).unsupported) << extra;
  }
}

// S1: match_seq_num 0 is Kafka's idempotent producer; absent is the plain producer.
TEST(ConfigMap, SequencingIsIdempotence) {
  auto m = lk::map_config(with({{"match_seq_num", 0}}));
  EXPECT_TRUE(m.idempotent);
  EXPECT_EQ(property(m, "enable.idempotence"), "true");
  m = lk::map_config(base());
  EXPECT_FALSE(m.idempotent);
  EXPECT_EQ(property(m, "enable.idempotence"), "false");
  EXPECT_TRUE(lk::map_config(with({{"match_seq_num", 100}})).unsupported);
  EXPECT_TRUE(lk::map_config(with({{"fencing_token", "f"}})).unsupported);
  EXPECT_TRUE(lk::map_config(with({{"bogus", 1}})).unsupported);
}

// B3: a librdkafka refusal names the contract's field.
TEST(ConfigMap, RefusalsNameTheContractField) {
  EXPECT_EQ(lk::key_of_librdkafka_error("`max.in.flight` must be set <= 5 when `enable.idempotence` is true"),
            "max_in_flight");
  EXPECT_EQ(lk::key_of_librdkafka_error("`message.timeout.ms` must be greater than `linger.ms`"),
            "delivery_timeout_ms");
  EXPECT_EQ(lk::key_of_librdkafka_error("`retries` must be set >= 1 when `enable.idempotence` is true"),
            "max_attempts");
  EXPECT_EQ(lk::key_of_librdkafka_error("nothing known"), "");
  EXPECT_EQ(lk::contract_field("linger_ms"), "linger");
  EXPECT_EQ(lk::contract_field("max_attempts"), "retry.max_attempts");
  EXPECT_EQ(lk::contract_field("max_in_flight"), "max_in_flight");
}
