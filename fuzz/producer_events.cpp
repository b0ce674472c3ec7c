// SPDX-License-Identifier: Apache-2.0
// Fuzz target: arbitrary bytes -> a configuration and a sequence of core inputs (client
// commands, time, server answers of every kind), run on prodsm's core through the
// conformance driver. The core checks its invariants after every input (the fuzz preset
// sets PRODSM_CHECK_INVARIANTS: a broken one aborts inside the core), and every trace
// checker runs once over the whole trace at the end: a contract violation is a crash
// (abort with the evidence), as is any sanitizer finding.
// fuzz/producer_events.dict holds command sequences as tokens (see there).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/driver.hpp"

namespace cf = prodsm::conformance;
using namespace std::chrono_literals;

namespace {

constexpr int kMaxSteps = 200;  ///< core inputs per execution at most

cf::CoreConfig config_from(FuzzedDataProvider& in) {
  cf::CoreConfig c;
  c.protocol = in.ConsumeBool() ? cf::Protocol::s2 : cf::Protocol::durable_streams;
  auto fill = [&](auto& cfg, std::uint64_t min_bytes) {
    const int linger = in.ConsumeIntegralInRange(0, 3);
    cfg.linger = linger == 3 ? prodsm::Linger::disabled()
                             : prodsm::Linger::after(std::chrono::milliseconds{linger == 0   ? 0
                                                                               : linger == 1 ? 1
                                                                                             : 50});
    cfg.max_batch_records = in.ConsumeIntegralInRange<std::uint32_t>(1, 8);
    cfg.max_batch_bytes = in.ConsumeIntegralInRange<std::uint64_t>(min_bytes, 128);
    cfg.max_unacked_bytes = cfg.max_batch_bytes * in.ConsumeIntegralInRange<std::uint64_t>(1, 8);
    cfg.max_in_flight = in.ConsumeIntegralInRange<std::uint32_t>(1, 5);
    cfg.max_unacked_batches = cfg.max_in_flight + in.ConsumeIntegralInRange<std::uint32_t>(0, 6);
    cfg.max_pending_barriers = in.ConsumeIntegralInRange<std::uint32_t>(1, 4);
    cfg.delivery_timeout_ns = cfg.linger.duration_ns() + std::chrono::milliseconds{in.ConsumeIntegralInRange(1, 500)};
    cfg.retry.max_attempts = in.ConsumeIntegralInRange<std::uint32_t>(1, 5);
    cfg.retry.backoff_initial_ns = std::chrono::microseconds{in.ConsumeIntegralInRange(1, 2000)};
    cfg.retry.backoff_max_ns =
        cfg.retry.backoff_initial_ns + std::chrono::milliseconds{in.ConsumeIntegralInRange(0, 4)};
    cfg.retry.mode = in.ConsumeBool() ? prodsm::RetryMode::all : prodsm::RetryMode::no_side_effects;
    cfg.retry.jitter_seed = in.ConsumeIntegral<std::uint64_t>();
  };
  if (c.protocol == cf::Protocol::durable_streams) {
    auto& d = c.durable_streams;
    d.protocol.body_format = in.ConsumeBool() ? prodsm::DurableStreamsPolicy::BodyFormat::json
                                              : prodsm::DurableStreamsPolicy::BodyFormat::bytes;
    fill(d, prodsm::DurableStreamsPolicy::kMinBatchBytes);
    if (in.ConsumeBool()) {
      d.protocol.idempotent = prodsm::DurableStreamsPolicy::IdempotentOptions{
          "fuzz", in.ConsumeIntegralInRange<std::uint64_t>(0, 3), in.ConsumeBool()};
    }
  } else {
    fill(c.s2, 8);
    if (in.ConsumeBool()) c.s2.protocol.match_seq_num = in.ConsumeIntegralInRange<std::uint64_t>(0, 1000);
    if (in.ConsumeBool()) c.s2.protocol.fencing_token = "tok";
  }
  return c;
}

cf::Command command_from(FuzzedDataProvider& in, bool json) {
  using K = cf::Command::Kind;
  cf::Command c;
  const auto which = in.ConsumeBool() ? cf::Command::Which::newest : cf::Command::Which::oldest;
  switch (in.ConsumeIntegralInRange(0, 9)) {
    case 0:
    case 1:
    case 2: {
      const auto size = in.ConsumeIntegralInRange<std::size_t>(0, 140);
      c = cf::Command::submit_record(json ? (size == 0 ? std::string{} : "1" + std::string(size - 1, '0'))
                                          : in.ConsumeBytesAsString(size));
      break;
    }
    case 3: c = cf::Command::of(K::flush); break;
    case 4: c = cf::Command::advance_by(std::chrono::milliseconds{in.ConsumeIntegralInRange(0, 60)}); break;
    case 5:
    case 6:
      c = cf::Command::of(in.ConsumeBool() ? K::ack : K::duplicate);
      c.which = which;
      break;
    case 7: {
      static constexpr prodsm::ErrorCode kCodes[] = {
          prodsm::ErrorCode::unavailable,   prodsm::ErrorCode::connection_lost, prodsm::ErrorCode::condition_failed,
          prodsm::ErrorCode::conflict,      prodsm::ErrorCode::sequence_gap,    prodsm::ErrorCode::stale_epoch,
          prodsm::ErrorCode::stream_closed, prodsm::ErrorCode::not_found,       prodsm::ErrorCode::rejected,
          prodsm::ErrorCode::protocol_error};
      c = cf::Command::fail_with(in.PickValueInArray(kCodes), which);
      if (in.ConsumeBool()) c.retry_after_ns = std::chrono::milliseconds{in.ConsumeIntegralInRange(0, 5)};
      break;
    }
    case 8:
      c = cf::Command::of(K::invalid_ack);
      c.which = which;
      c.invalid = in.ConsumeBool() ? cf::Command::Invalid::wrong_count : cf::Command::Invalid::unknown_batch;
      break;
    default: c = cf::Command::of(in.ConsumeBool() ? K::close : K::abort); break;
  }
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const cf::CoreConfig config = config_from(in);
  std::string error;
  auto driver = cf::make_core_driver(config, &error);
  if (!driver) {
    std::fprintf(stderr, "generated an invalid config: %s\n", error.c_str());
    std::abort();  // the generator only builds valid configs: refusing one is a bug
  }
  const bool json = config.protocol == cf::Protocol::durable_streams &&
                    config.durable_streams.protocol.body_format == prodsm::DurableStreamsPolicy::BodyFormat::json;
  for (int i = 0; i < kMaxSteps && in.remaining_bytes() > 0; ++i) (void)driver->run(command_from(in, json));
  // Every clause once, over the whole trace: the checkers compare what happened with the
  // model's prediction, which a later step never changes for an earlier one, so what is
  // wrong in a prefix stays wrong in the whole trace; checking once keeps an execution
  // linear in its steps instead of quadratic (the core's invariants ran after each one).
  const auto violations = cf::check_trace(driver->trace(), driver->capabilities());
  if (!violations.empty()) {
    std::fprintf(stderr, "%s", cf::render_evidence(driver->trace(), violations.front()).c_str());
    std::abort();
  }
  return 0;
}
