// SPDX-License-Identifier: Apache-2.0
// `prodsm conform --matrix` (tools/src/conform_matrix.cpp, issue 18 item 4): one column per
// target, each exactly the verdicts `--target` gives. The SDK columns must be the verdicts
// the test command pins for them (conformance/findings/<sdk>.verdicts.json); the core
// column must fail nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"

namespace prodsm::test {
namespace {

using nlohmann::json;

TEST(ConformMatrix, EveryColumnIsWhatTargetGives) {
  const CliRun r = prodsm("conform --matrix --skip-properties --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json m = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(m.is_object()) << r.out;
  ASSERT_EQ(m.at("targets"), json({"core", "s2-ts", "ds-ts"})) << "unavailable: " << m.at("unavailable").dump();
  const json& clauses = m.at("clauses");
  for (const char* sdk : {"s2-ts", "ds-ts"}) {
    const json pinned =
        json::parse(slurp(std::string(PRODSM_SOURCE_DIR) + "/conformance/findings/" + sdk + ".verdicts.json"));
    ASSERT_TRUE(pinned.contains("clauses")) << sdk;
    int compared = 0;
    for (const auto& [id, verdict] : pinned.at("clauses").items()) {
      EXPECT_EQ(clauses.at(id).at(sdk), verdict) << sdk << " " << id;
      ++compared;
    }
    EXPECT_EQ(compared, static_cast<int>(clauses.size())) << sdk << ": every clause has a pinned verdict";
  }
  int core_passes = 0;
  for (const auto& [id, row] : clauses.items()) {
    EXPECT_NE(row.at("core"), "FAIL") << id;  // P1..S8: the core is conformant
    core_passes += row.at("core") == "pass" ? 1 : 0;
  }
  EXPECT_GE(core_passes, 30) << "the core column judged the clauses, not only n/a";
}

TEST(ConformMatrix, MarkdownHasOneRowPerClauseAndAColumnPerTarget) {
  const CliRun r = prodsm("conform --matrix --skip-properties");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| clause | core | s2-ts | ds-ts |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| E1 | pass | FAIL |"), std::string::npos) << r.out;  // s2-ts's E1 finding
  EXPECT_NE(r.out.find("3 of 3 targets judged (vectors only)"), std::string::npos) << r.out;
}

TEST(ConformMatrix, RefusesOptionsThatNameOneTarget) {  // exit 2: bad usage, nothing run
  EXPECT_EQ(prodsm("conform --matrix --target core").status, 2);
  EXPECT_EQ(prodsm("conform --matrix --expect /dev/null").status, 2);
  const CliRun json_alone = prodsm("conform --json");
  EXPECT_EQ(json_alone.status, 2);
  EXPECT_NE(json_alone.err.find("--matrix"), std::string::npos) << json_alone.err;
}

}  // namespace
}  // namespace prodsm::test
