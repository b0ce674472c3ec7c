// SPDX-License-Identifier: Apache-2.0
// A broken invariant aborts (prodsm/detail/invariants.hpp; builds with
// PRODSM_CHECK_INVARIANTS only). The core prints nothing (D1): which invariant broke is
// left where a debugger or a core dump shows it.
#include "prodsm/detail/invariants.hpp"

#include <cstdlib>

/// The last broken invariant's sentence, for a debugger (`print prodsm_broken_invariant`).
extern "C" {
const char* volatile prodsm_broken_invariant = nullptr;
}

namespace prodsm::detail {

void invariant_failed(const char* what) noexcept {
  prodsm_broken_invariant = what;
  std::abort();
}

}  // namespace prodsm::detail
