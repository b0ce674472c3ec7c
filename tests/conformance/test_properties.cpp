// SPDX-License-Identifier: Apache-2.0
// The conformance properties (conformance/src/properties.cpp) against prodsm's core:
// generated configurations and command sequences, every clause checked after every
// command, the whole run replayed for D2. RC_PARAMS sets the count and reproduces a
// failure (e.g. RC_PARAMS="max_success=5000" or the printed "reproduce=...").
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "prodsm/conformance/properties.hpp"

namespace prodsm::conformance {
namespace {

const PropertySpec& spec(const char* name) {
  for (const auto& s : default_properties()) {
    if (s.name == name) return s;
  }
  throw std::logic_error("no property named " + std::string(name));
}

// A clause a property's runs cannot break holds vacuously on its traces: `prodsm conform`
// reports it n/a, not pass, unless a vector about it ran (a driver speaking plain Durable
// Streams only was shown S1–S5 "pass").
TEST(Conformance, PropertyExercisesOnlyTheClausesItsRunsCanBreak) {
  EXPECT_FALSE(property_exercises(spec("durable_streams/plain"), "S1"));
  EXPECT_FALSE(property_exercises(spec("durable_streams/plain"), "S2"));
  EXPECT_FALSE(property_exercises(spec("durable_streams/plain"), "S5"));
  EXPECT_FALSE(property_exercises(spec("durable_streams/plain"), "S8"));
  EXPECT_TRUE(property_exercises(spec("durable_streams/plain"), "S6"));
  EXPECT_TRUE(property_exercises(spec("durable_streams/idempotent"), "S4"));
  EXPECT_TRUE(property_exercises(spec("durable_streams/auto_claim"), "S5"));
  EXPECT_TRUE(property_exercises(spec("s2/match_seq_num"), "S1"));
  EXPECT_TRUE(property_exercises(spec("s2/match_seq_num"), "S8"));
  EXPECT_FALSE(property_exercises(spec("s2/plain"), "S3"));
  EXPECT_FALSE(property_exercises(spec("s2/plain"), "B3")) << "config vectors only";
  for (const auto& s : default_properties()) {
    EXPECT_TRUE(property_exercises(s, "P1")) << s.name;
    EXPECT_TRUE(property_exercises(s, "E4")) << s.name;
  }
}

RC_GTEST_PROP(Conformance, DurableStreamsPlain, ()) {
  conformance_property(spec("durable_streams/plain"), core_driver_factory());
}
RC_GTEST_PROP(Conformance, DurableStreamsIdempotent, ()) {
  conformance_property(spec("durable_streams/idempotent"), core_driver_factory());
}
RC_GTEST_PROP(Conformance, DurableStreamsAutoClaim, ()) {
  conformance_property(spec("durable_streams/auto_claim"), core_driver_factory());
}
/// The Durable Streams producer client (the core with request encoding and response
/// classification, answered on the wire) with stream closes among the commands (C4).
RC_GTEST_PROP(Conformance, DurableStreamsProducerClientWithStreamCloses, ()) {
  static const PropertySpec client{"durable_streams/client", Protocol::durable_streams, Sequencing::ds_idempotent, true,
                                   true};
  conformance_property(client, core_driver_factory());
}
RC_GTEST_PROP(Conformance, S2Plain, ()) {
  conformance_property(spec("s2/plain"), core_driver_factory());
}
RC_GTEST_PROP(Conformance, S2MatchSeqNum, ()) {
  conformance_property(spec("s2/match_seq_num"), core_driver_factory());
}

}  // namespace
}  // namespace prodsm::conformance
