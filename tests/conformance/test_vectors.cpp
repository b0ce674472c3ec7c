// SPDX-License-Identifier: Apache-2.0
// Every scenario vector in conformance/vectors/ against prodsm's core: every per-step
// and final expectation holds and no trace checker objects. Regression vectors from
// conformance/findings/core/ (shrunk property failures) run here too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {
namespace {

std::vector<std::string> vector_files() {
  std::vector<std::string> files;
  for (const char* dir : {PRODSM_VECTORS_DIR, PRODSM_FINDINGS_DIR}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Vector : public ::testing::TestWithParam<std::string> {};

TEST_P(Vector, HoldsOnTheCore) {
  std::ifstream in(GetParam());
  const auto json = nlohmann::json::parse(in);
  const VectorResult r = run_vector(json, GetParam(), core_driver_factory());
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  for (const auto& v : r.violations) ADD_FAILURE() << render_evidence(r.trace, v);
  EXPECT_TRUE(r.passed) << r.evidence;
}

INSTANTIATE_TEST_SUITE_P(Conformance, Vector, ::testing::ValuesIn(vector_files()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = std::filesystem::path(param_info.param).stem().string();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(ConformanceVectors, EveryClauseWithTraceCoverageHasAVector) {
  std::set<std::string> covered;
  for (const auto& f : vector_files()) {
    std::ifstream in(f);
    for (const auto& c : nlohmann::json::parse(in).value("clauses", std::vector<std::string>{})) covered.insert(c);
  }
  for (const auto& clause : clauses()) {
    if (clause.coverage != Coverage::trace && clause.coverage != Coverage::config) continue;
    if (covered.count(std::string(clause.id)) == 0) ADD_FAILURE() << clause.id << " has no vector";
  }
}

}  // namespace
}  // namespace prodsm::conformance
