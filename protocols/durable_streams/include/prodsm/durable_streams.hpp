// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file durable_streams.hpp
/// Producer<DurableStreamsPolicy>: the Producer core speaking Durable Streams.

#include "prodsm/durable_streams_policy.hpp"
#include "prodsm/producer.hpp"

namespace prodsm {
extern template class Producer<DurableStreamsPolicy>;
/// The Durable Streams Producer core.
using DurableStreamsProducer = Producer<DurableStreamsPolicy>;
/// Its configuration.
using DurableStreamsConfig = ProducerConfig<DurableStreamsPolicy>;
}  // namespace prodsm
