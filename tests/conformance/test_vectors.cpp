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

// A vector's expectation that no target could ever meet — a typo such as "tickt" or
// "okay" — is a malformed vector (exit 2), named, never a FAIL charged to the target
// that ran it (prodsm's own core was reported failing B1 on such a vector).
TEST(Vectors, AnExpectationNoResultCanMeetIsAMalformedVector) {
  const auto step_vector = [](const std::string& expect) {
    return nlohmann::json{{"protocol", "durable_streams"},
                          {"steps", nlohmann::json::array({{{"do", "submit"}, {"record", "a"}, {"expect", expect}}})}};
  };
  for (const std::string bad : {"tickt", "refused:banana", "closed:nonsense", "refused:failed:x"}) {
    const auto why = check_vector_shape(step_vector(bad));
    ASSERT_TRUE(why.has_value()) << bad;
    EXPECT_NE(why->find("steps[0].expect: \"" + bad + "\" is no result a step can have"), std::string::npos) << *why;
  }
  for (const std::string good : {"ticket", "refused", "refused:failed", "refused:stream_closed", "closed:ok",
                                 "closed:stream_closed", "barrier", "none"}) {
    EXPECT_EQ(check_vector_shape(step_vector(good)), std::nullopt) << good;
  }
  nlohmann::json outcomes = step_vector("ticket");
  outcomes["expect"] = {{"outcomes", {"ok", "okay"}}};
  const auto why = check_vector_shape(outcomes);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("expect.outcomes: \"okay\" is no outcome a record can have"), std::string::npos) << *why;
  outcomes["expect"] = {{"outcomes", {"ok", "ok:duplicate", "failed", "failed:stream_closed:indefinite", "pending"}}};
  EXPECT_EQ(check_vector_shape(outcomes), std::nullopt);
}

// B3: a config the contract refuses (linger_ms -5) is the vector's mistake unless the
// vector is about that refusal (expect.config_error). It used to run, and the reference
// core was charged with a B1 failure (conformance red team).
TEST(Vectors, AConfigTheContractRefusesIsMalformedUnlessTheVectorExpectsTheRefusal) {
  nlohmann::json v = {{"clauses", {"B1"}},
                      {"protocol", "durable_streams"},
                      {"config", {{"linger_ms", -5}}},
                      {"steps", nlohmann::json::array({{{"do", "submit"}, {"record", "a"}}})}};
  const auto why = check_vector_shape(v);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("config: the contract refuses it ("), std::string::npos) << *why;
  EXPECT_NE(why->find("linger"), std::string::npos) << "names the field: " << *why;
  EXPECT_NE(why->find("expect.config_error"), std::string::npos) << *why;
  v["expect"] = {{"config_error", "linger"}};
  EXPECT_EQ(check_vector_shape(v), std::nullopt);
  v["expect"] = {{"config_error", ""}};  // found in every refusal: it passed whatever was refused
  const auto empty = check_vector_shape(v);
  ASSERT_TRUE(empty.has_value());
  EXPECT_NE(empty->find("expect.config_error: must name the field"), std::string::npos) << *empty;
  v.erase("expect");
  v["config"] = {{"linger_ms", 5}};
  EXPECT_EQ(check_vector_shape(v), std::nullopt);
  // A Durable Streams key on S2 is named as given (it used to be called `idempotent`).
  for (const char* key : {"json", "idempotent", "stream_operations"}) {
    const nlohmann::json s2 = {{"protocol", "s2"}, {"config", {{key, true}}}};
    const auto named = check_vector_shape(s2);
    ASSERT_TRUE(named.has_value()) << key;
    EXPECT_NE(named->find(std::string("config.") + key + ": Durable Streams only"), std::string::npos) << *named;
  }
}

}  // namespace
}  // namespace prodsm::conformance
