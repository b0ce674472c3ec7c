// SPDX-License-Identifier: Apache-2.0
// Fuzz target: configuration validation on arbitrary field values (B2, B3). Every
// config is either refused with an error naming a field, or accepted — and then a
// producer built from it accepts a record and flushes without crashing.
#include <fuzzer/FuzzedDataProvider.h>

#include "prodsm/durable_streams.hpp"
#include "prodsm/s2.hpp"

namespace {

template <class Config>
void fill(FuzzedDataProvider& in, Config& c) {
  const auto linger = in.ConsumeIntegral<std::int64_t>();
  c.linger = in.ConsumeBool() ? prodsm::Linger::disabled() : prodsm::Linger::after(prodsm::Duration{linger});
  c.max_batch_records = in.ConsumeIntegral<std::uint32_t>();
  c.max_batch_bytes = in.ConsumeIntegral<std::uint64_t>();
  c.max_unacked_bytes = in.ConsumeIntegral<std::uint64_t>();
  c.max_unacked_batches = in.ConsumeIntegral<std::uint32_t>();
  c.max_in_flight = in.ConsumeIntegral<std::uint32_t>();
  c.max_pending_barriers = in.ConsumeIntegral<std::uint32_t>();
  c.delivery_timeout_ns = prodsm::Duration{in.ConsumeIntegral<std::int64_t>()};
  c.retry.max_attempts = in.ConsumeIntegral<std::uint32_t>();
  c.retry.backoff_initial_ns = prodsm::Duration{in.ConsumeIntegral<std::int64_t>()};
  c.retry.backoff_max_ns = prodsm::Duration{in.ConsumeIntegral<std::int64_t>()};
  c.retry.mode = static_cast<prodsm::RetryMode>(in.ConsumeIntegral<std::uint8_t>());
  c.retry.jitter_seed = in.ConsumeIntegral<std::uint64_t>();
}

template <class Producer>
void exercise(const typename Producer::Config& config) {
  auto created = Producer::create(config);
  if (!created) {
    if (created.error().field.empty() || created.error().reason.empty()) __builtin_trap();
    return;
  }
  // Accepted: the limits hold together (B3) and the producer works.
  if (config.max_unacked_bytes < config.max_batch_bytes) __builtin_trap();
  if (config.max_unacked_batches < config.max_in_flight) __builtin_trap();
  (void)created->submit(prodsm::Instant{}, std::string_view{"1"});
  (void)created->flush(prodsm::Instant{});
  while (created->poll_action()) {
  }
  (void)created->next_deadline();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    prodsm::DurableStreamsConfig c;
    fill(in, c);
    c.protocol.body_format =
        static_cast<prodsm::DurableStreamsPolicy::BodyFormat>(in.ConsumeIntegral<std::uint8_t>() % 3);
    if (in.ConsumeBool()) {
      c.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{
          in.ConsumeRandomLengthString(300), in.ConsumeIntegral<std::uint64_t>(), in.ConsumeBool()};
    }
    exercise<prodsm::DurableStreamsProducer>(c);
  } else {
    prodsm::S2Config c;
    fill(in, c);
    if (in.ConsumeBool()) c.protocol.match_seq_num = in.ConsumeIntegral<std::uint64_t>();
    if (in.ConsumeBool()) c.protocol.fencing_token = in.ConsumeRandomLengthString(64);
    exercise<prodsm::S2Producer>(c);
  }
  return 0;
}
