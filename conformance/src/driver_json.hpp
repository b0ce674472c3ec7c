// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the driver protocol's JSON (docs/conformance.md, "The driver protocol") read
// into the trace's types, shared by the external drivers (external_driver.cpp) and the
// served ones (served_driver.cpp).

#include <nlohmann/json.hpp>

#include "prodsm/conformance/driver.hpp"
#include "prodsm/conformance/trace.hpp"

namespace prodsm::conformance::detail {

/// One entry of a reply's `observed` list (send, done, barrier, closed, capacity).
Observation observation_from(const nlohmann::json& j);
/// A reply's `result` (ticket, barrier, rejected, closed), or none (null). Throws
/// std::invalid_argument for anything else (a driver's failure, not a result).
SyncResult result_from(const nlohmann::json& r);
/// A reply's `observed` list: empty when absent. Throws std::invalid_argument when it is
/// not an array (a driver's failure).
nlohmann::json observed_of(const nlohmann::json& reply);
/// A hello's `capabilities`; a capability not sent is false.
Capabilities capabilities_from(const nlohmann::json& c);

}  // namespace prodsm::conformance::detail
