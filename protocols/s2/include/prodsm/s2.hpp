// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file s2.hpp
/// Producer<S2Policy>: the Producer core speaking S2.

#include "prodsm/producer.hpp"
#include "prodsm/s2_policy.hpp"

namespace prodsm {
extern template class Producer<S2Policy>;
/// The S2 Producer core.
using S2Producer = Producer<S2Policy>;
/// Its configuration.
using S2Config = ProducerConfig<S2Policy>;
}  // namespace prodsm
