// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `prodsm produce` (Durable Streams and s2:// targets) tells stderr while it
// retries (E4). Retries end at --delivery-timeout-ms (120 s by default), so a server that
// is down or refusing would otherwise leave a run silent for minutes; librdkafka's
// clients log such failures the same way.

#include <chrono>
#include <string>

#include "prodsm/producer_event.hpp"

namespace prodsm::tools {

/// Event options whose hook prints warning events (a retry, a failed connect, an epoch
/// claim) to stderr as "<prefix>: <ProducerEvent::describe()>": the first at once, then at
/// most one line per `interval`, which also says how many events came since the last line.
/// Terminal events are left to the run's own error line. `quiet`: no hook, no events.
EventOptions retry_notices(std::string prefix, bool quiet,
                           std::chrono::milliseconds interval = std::chrono::seconds{1});

}  // namespace prodsm::tools
