// SPDX-License-Identifier: Apache-2.0
// Instantiates the Producer core for the S2 policy.
#include "prodsm/detail/producer_impl.hpp"
#include "prodsm/s2.hpp"

namespace prodsm {
template class Producer<S2Policy>;
}  // namespace prodsm
