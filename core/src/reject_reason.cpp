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
    case RejectReason::sequence_exhausted: return "sequence_exhausted";
  }
  return "unknown";
}

Error to_error(const Rejection& rejection) {
  auto local = [&](ErrorCode code) {
    return make_error(code, Certainty::definite, false, std::string(rejection.detail));
  };
  switch (rejection.reason) {
    case RejectReason::failed: return rejection.terminal ? *rejection.terminal : local(ErrorCode::internal);
    case RejectReason::closed: return local(ErrorCode::closed);
    case RejectReason::would_block: return local(ErrorCode::would_block);
    case RejectReason::sequence_exhausted: return local(ErrorCode::sequence_exhausted);
    case RejectReason::record_too_large:
    case RejectReason::invalid_record: return local(ErrorCode::invalid_record);
  }
  return make_error(ErrorCode::internal, Certainty::definite, false, "unknown rejection");
}

}  // namespace prodsm
