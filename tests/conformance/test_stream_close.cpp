// SPDX-License-Identifier: Apache-2.0
// C4 through the harness: the close_stream step runs prodsm's Durable Streams producer
// client against the simulated server on the wire, and check_c4 can fail — each test
// breaks a real trace the way a faulty producer would and expects C4 to be reported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {
namespace {

using nlohmann::json;

const json kConfig = {{"linger_ms", 3600000}, {"delivery_timeout_ms", 7200000}, {"stream_operations", true}};

Trace run(const std::vector<json>& steps) {
  std::string error;
  auto driver = core_driver_factory()(Protocol::durable_streams, kConfig, &error);
  EXPECT_NE(driver, nullptr) << error;
  if (!driver) return {};
  for (const auto& s : steps) {
    auto c = command_from_json(s, &error);
    EXPECT_TRUE(c.has_value()) << error;
    EXPECT_TRUE(c && driver->run(*c)) << s.dump() << " " << driver->unsupported_reason();
  }
  for (const auto& v : check_trace(driver->trace(), {})) ADD_FAILURE() << "the unbroken trace must pass: " << v.message;
  return driver->trace();
}

std::vector<std::string> c4_messages(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& v : check_trace(t, {})) {
    if (v.clause == "C4") out.push_back(v.message);
  }
  return out;
}

/// Where the first observation of `kind` is: (step, index in the step).
std::pair<std::size_t, std::size_t> where(const Trace& t, Observation::Kind kind) {
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    for (std::size_t k = 0; k < t.steps[i].observed.size(); ++k) {
      if (t.steps[i].observed[k].kind == kind) return {i, k};
    }
  }
  ADD_FAILURE() << "no such observation";
  return {0, 0};
}

const std::vector<json> kCloseAfterTwo = {
    {{"do", "submit"}, {"record", "a"}},
    {{"do", "submit"}, {"record", "b"}},
    {{"do", "close_stream"}},
    {{"do", "ack"}},
    {{"do", "ack"}},
};

TEST(C4, TheStreamCloseRequestFollowsItsRecordsAndCarriesNone) {
  const Trace t = run(kCloseAfterTwo);
  const auto [step, index] = where(t, Observation::Kind::stream_close);
  EXPECT_EQ(step, 3U) << "sent in the step that acknowledged the covered batch";
  EXPECT_TRUE(t.steps[step].observed[index].body.empty());
  const auto [done_step, done_index] = where(t, Observation::Kind::stream_closed);
  EXPECT_EQ(done_step, 4U);
  EXPECT_TRUE(t.steps[done_step].observed[done_index].ok);
  EXPECT_EQ(t.steps[done_step].observed[done_index].final_offset, "00000000000000000002");
}

TEST(C4, ARequestSentBeforeACoveredRecordCompletedIsReported) {
  Trace t = run(kCloseAfterTwo);
  const auto [step, index] = where(t, Observation::Kind::stream_close);
  Observation early = t.steps[step].observed[index];
  t.steps[step].observed.erase(t.steps[step].observed.begin() + static_cast<std::ptrdiff_t>(index));
  t.steps[2].observed.push_back(early);  // in the close_stream step, before the batch's ack
  const auto m = c4_messages(t);
  ASSERT_FALSE(m.empty());
  EXPECT_NE(m.front().find("before ticket 0 completed"), std::string::npos) << m.front();
}

TEST(C4, ARequestCarryingRecordBytesIsReported) {
  Trace t = run(kCloseAfterTwo);
  const auto [step, index] = where(t, Observation::Kind::stream_close);
  t.steps[step].observed[index].body = "a";
  EXPECT_FALSE(c4_messages(t).empty());
}

TEST(C4, ASuccessWithoutAnAcknowledgedRequestIsReported) {
  Trace t = run(kCloseAfterTwo);
  Response& answer = t.steps[4].input.response;
  ASSERT_EQ(t.steps[4].input.kind, Input::Kind::respond_stream_close);
  answer.kind = Response::Kind::fail;
  answer.error = make_error(ErrorCode::rejected, Certainty::definite, false, "harness: rejected");
  const auto m = c4_messages(t);
  ASSERT_FALSE(m.empty());
  EXPECT_NE(m.front().find("without an acknowledged"), std::string::npos) << m.front();
}

TEST(C4, AStreamClosedAfterAFailedRecordIsReported) {
  Trace t =
      run({{{"do", "submit"}, {"record", "a"}}, {{"do", "close_stream"}}, {{"do", "fail"}, {"code", "rejected"}}});
  const auto [step, index] = where(t, Observation::Kind::stream_closed);
  EXPECT_FALSE(t.steps[step].observed[index].ok) << "the record failed: the stream close fails with it";
  EXPECT_EQ(t.steps[step].observed[index].error.code, ErrorCode::rejected);
  Observation request;
  request.kind = Observation::Kind::stream_close;
  request.op = t.steps[1].result.value;
  t.steps[2].observed.push_back(request);
  EXPECT_FALSE(c4_messages(t).empty());
}

TEST(C4, ClosingTheProducerNeverSendsAStreamClose) {
  Trace t = run({{{"do", "submit"}, {"record", "a"}}, {{"do", "close"}}, {{"do", "ack"}}});
  Observation request;
  request.kind = Observation::Kind::stream_close;
  request.op = 7;
  t.steps[1].observed.push_back(request);
  const auto m = c4_messages(t);
  ASSERT_FALSE(m.empty());
  EXPECT_NE(m.front().find("closing the producer closed the stream"), std::string::npos) << m.front();
}

TEST(C4, ACloseStreamStepNeedsStreamOperations) {
  const json v = {{"protocol", "durable_streams"},
                  {"config", {{"linger_ms", 10}}},
                  {"steps", json::array({{{"do", "close_stream"}}})}};
  const auto why = check_vector_shape(v);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("stream_operations"), std::string::npos) << *why;
  json not_a_flag = v;  // a value of the wrong type is a malformed vector, never a crash
  not_a_flag["config"]["stream_operations"] = "yes";
  const auto why_not_a_flag = check_vector_shape(not_a_flag);
  ASSERT_TRUE(why_not_a_flag.has_value());
  EXPECT_NE(why_not_a_flag->find("stream_operations"), std::string::npos) << *why_not_a_flag;
  std::string error;
  EXPECT_FALSE(core_config_from_json(Protocol::s2, {{"stream_operations", true}}, &error).has_value());
  EXPECT_NE(error.find("stream_operations: Durable Streams only"), std::string::npos) << error;
}

}  // namespace
}  // namespace prodsm::conformance

namespace prodsm::conformance {
namespace {

/// Every Durable Streams vector through the producer client (the core plus request
/// encoding and response classification): it must hold the contract as the bare core
/// does, or be n/a for a reason the wire explains.
TEST(ProducerClientTarget, HoldsEveryDurableStreamsVector) {
  const DriverFactory client = [](Protocol p, const json& config, std::string* error) -> std::unique_ptr<Driver> {
    auto core = core_config_from_json(p, config, error);
    if (!core) return nullptr;
    if (p != Protocol::durable_streams) {
      if (error) *error = "unsupported: s2 (the producer client is Durable Streams')";
      return nullptr;
    }
    return make_client_driver(*core, error);
  };
  std::size_t ran = 0;
  for (const char* dir : {PRODSM_VECTORS_DIR, PRODSM_FINDINGS_DIR}) {
    for (const auto& r : run_vectors(dir, client)) {
      if (r.not_applicable) {  // S2 vectors; invalid_ack(unknown_batch), which no response can express
        if (r.not_applicable_reason.rfind("s2", 0) != 0) {
          std::printf("n/a %s: %s\n", r.name.c_str(), r.not_applicable_reason.c_str());
        }
        continue;
      }
      if (!r.passed) ADD_FAILURE() << r.name << ": " << r.evidence;
      ++ran;
    }
  }
  EXPECT_GT(ran, 30U);
}

}  // namespace
}  // namespace prodsm::conformance
