// SPDX-License-Identifier: Apache-2.0
// `prodsm conform --matrix` (tools/src/conform_matrix.hpp): why a target is listed as
// unavailable is its own failure message. It used to be the child's first stderr line:
// "Using configuration: seed=1" (RapidCheck's) for librdkafka with properties.
#include <gtest/gtest.h>

#include <string>

#include "conform_matrix.hpp"

namespace prodsm::tools {
namespace {

TEST(ConformMatrixReason, TheTargetsOwnFailureNotALibrarysLineNorAProgressLine) {
  const std::string err =
      "Using configuration: seed=1\n"
      "prodsm conform: property s2/plain: up to 30 sequences on real time\n"
      "prodsm conform: target librdkafka failed running property s2/plain: the driver answered ...\n"
      "prodsm conform: nothing more was judged\n";
  EXPECT_EQ(unavailable_reason(err, "fallback"),
            "target librdkafka failed running property s2/plain: the driver answered ...");
}

TEST(ConformMatrixReason, WithoutAMessageOfItsOwnTheFirstLineOrTheFallback) {
  EXPECT_EQ(unavailable_reason("\nnode: not found\nmore\n", "fallback"), "node: not found");
  EXPECT_EQ(unavailable_reason("prodsm conform: property s2/plain: up to 1 sequences on real time", "fallback"),
            "prodsm conform: property s2/plain: up to 1 sequences on real time");
  EXPECT_EQ(unavailable_reason("", "its driver could not start"), "its driver could not start");
  EXPECT_EQ(unavailable_reason("\n\n", "fallback"), "fallback");
}

}  // namespace
}  // namespace prodsm::tools
