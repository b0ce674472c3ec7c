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
/// A reply's `result` (ticket, barrier, rejected, closed), or none.
SyncResult result_from(const nlohmann::json& r);
/// A hello's `capabilities`; a capability not sent is false.
Capabilities capabilities_from(const nlohmann::json& c);

}  // namespace prodsm::conformance::detail
