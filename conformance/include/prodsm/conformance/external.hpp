// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file external.hpp
/// Targets other than prodsm's core: another SDK's producer behind a driver process
/// speaking the JSON-lines driver protocol of docs/conformance.md. The harness keeps
/// the trace, the simulated server and the checkers; the driver translates.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "prodsm/conformance/real_time.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {

/// How to start a driver process.
struct ExternalTarget {
  std::string name;                                      ///< e.g. "s2-ts"
  std::vector<std::string> argv;                         ///< e.g. {"node", "<dir>/driver.mjs"}
  Duration reply_timeout_ns = std::chrono::seconds{30};  ///< per request
  /// The driver's stderr (its log) goes to ours when true; otherwise it is kept aside and
  /// its last 4 KiB are appended to the error message if the driver fails.
  bool show_driver_log = false;
};

/// What a driver said about itself (hello).
struct TargetInfo {
  std::string driver;                        ///< the driver's name (default: the target's name)
  std::string sdk;                           ///< the SDK and version, e.g. "@s2-dev/streamstore@0.27.0"; may be empty
  std::vector<Protocol> protocols;           ///< the protocols `start` accepts
  Capabilities capabilities;                 ///< what the SDK can express; a capability not sent is false
  std::map<std::string, std::string> notes;  ///< why a capability is false
};

/// A factory of drivers for `target`. The driver process is started on first use and
/// reused (one producer at a time; `start` gives a fresh one). `info`, when non-null, is
/// filled from the driver's hello. On failure (the process cannot start, says nothing)
/// the factory returns nullptr with an error.
DriverFactory external_driver_factory(const ExternalTarget& target, TargetInfo* info, std::string* error);

/// The built-in external targets: "s2-ts" and "ds-ts" (node drivers under
/// `<source_dir>/conformance/drivers/`) and "librdkafka" (a C++ driver built with the
/// project: conformance/drivers/librdkafka).
std::optional<ExternalTarget> builtin_target(const std::string& name, const std::string& source_dir);

/// Served runs (`prodsm conform --serve`): a factory of drivers that run `target`'s SDK
/// over its own HTTP client and clock against the harness's simulated server on a
/// loopback port (a receiving HTTP/1.1 server per run; docs/conformance.md, "Wire
/// targets"). The driver must say `capabilities.serve` in its hello; each run sends a
/// driver process (reused run after run; a second one only while the first is busy)
/// `start` carrying `serve.url`, and the driver then only
/// submits, flushes, closes, aborts and reports outcomes (`poll`). Durable Streams only.
/// Error (nullptr): the driver cannot start or cannot serve.
DriverFactory served_driver_factory(const ExternalTarget& target, RealTimeOptions rt, TargetInfo* info,
                                    std::string* error);

/// Prefix of a factory error meaning "the target cannot express this" (not applicable).
inline constexpr std::string_view kUnsupportedPrefix = "unsupported: ";
/// Prefix of a factory error meaning "the target itself failed": its driver died, did not
/// answer within the reply timeout, or answered something that is not a reply. Nothing
/// can be judged; `prodsm conform` exits 3 (never a pass, never n/a).
inline constexpr std::string_view kTargetFailedPrefix = "target failed: ";

}  // namespace prodsm::conformance
