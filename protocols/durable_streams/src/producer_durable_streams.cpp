// SPDX-License-Identifier: Apache-2.0
// Instantiates the Producer core for the Durable Streams policy.
#include "prodsm/detail/producer_impl.hpp"
#include "prodsm/durable_streams.hpp"

namespace prodsm {
template class Producer<DurableStreamsPolicy>;
}  // namespace prodsm
