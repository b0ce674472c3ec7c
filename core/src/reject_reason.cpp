// SPDX-License-Identifier: Apache-2.0
#include "prodsm/producer.hpp"

namespace prodsm {

std::string_view to_string(RejectReason reason) noexcept {
  switch (reason) {
    case RejectReason::closed: return "closed";
    case RejectReason::failed: return "failed";
    case RejectReason::record_too_large: return "record_too_large";
    case RejectReason::invalid_record: return "invalid_record";
    case RejectReason::would_block: return "would_block";
  }
  return "unknown";
}

}  // namespace prodsm
