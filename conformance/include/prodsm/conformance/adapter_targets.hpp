// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file adapter_targets.hpp
/// prodsm's own adapters as conformance targets (`--target prodsm-asio`,
/// `--target prodsm-blocking`): the vectors and properties drive the real Asio or
/// blocking Durable Streams producer over loopback sockets against the simulated server
/// put behind the Durable Streams wire (a receiving HTTP/1.1 server of the harness's).
/// What the producer sends is read off the wire; its completions are observed in its
/// callbacks, with how each ran (thread, overlap, the producer's lock, exceptions), so
/// the adapter clauses A1–A4 and C4 get verdicts. Time is real: see RealTimeOptions and
/// docs/conformance.md ("Wire targets").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/real_time.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {

/// One of prodsm's adapters run as a wire target.
enum class AdapterTarget : std::uint8_t { asio, blocking };
/// The adapter behind a target name: "prodsm-asio" or "prodsm-blocking"; nullopt otherwise.
std::optional<AdapterTarget> adapter_target(std::string_view name);

/// A factory of drivers running prodsm's `target` adapter as a wire target (Durable
/// Streams only; an S2 vector is not applicable). Each driver starts its own receiving
/// server on 127.0.0.1 (a free port) and its own producer. `info`, when non-null, gets
/// the driver name, the build, the protocols and the capabilities (measured_time,
/// adapter_callbacks; capacity_signal false) with notes.
DriverFactory adapter_driver_factory(AdapterTarget target, RealTimeOptions options, TargetInfo* info);

}  // namespace prodsm::conformance
