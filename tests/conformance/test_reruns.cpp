// SPDX-License-Identifier: Apache-2.0
// Real-time reruns (docs/conformance.md, "Reruns (real-time tolerances)"): on a target whose
// trace is measured (TraceConfig::measured_time), a failed vector runs again, up to
// kRealTimeAttempts runs, and a generated sequence's violation fails the property only when
// replays on fresh producers show it again. A defect on every run still fails; a target
// on virtual time is never run again. The target here is the core behind a wrapper that
// marks its trace measured and, on the runs it is told to, completes every record twice (a
// P2 violation the trace checkers see).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "prodsm/conformance/properties.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {
namespace {

using nlohmann::json;

/// The core, its trace marked measured (or not), each `done` observed twice on a broken run.
class Wrapped final : public Driver {
 public:
  Wrapped(std::unique_ptr<Driver> inner, bool measured, bool broken, int* broken_producers)
      : inner_{std::move(inner)}, measured_{measured}, broken_{broken}, broken_producers_{broken_producers} {
    refresh();
  }
  bool run(const Command& command) override {
    const bool ran = inner_->run(command);
    refresh();
    return ran;
  }
  [[nodiscard]] const Trace& trace() const override { return trace_; }
  [[nodiscard]] Capabilities capabilities() const override {
    Capabilities c = inner_->capabilities();
    c.measured_time = measured_;
    return c;
  }
  [[nodiscard]] std::size_t unanswered_sends() const override { return inner_->unanswered_sends(); }

 private:
  void refresh() {
    trace_ = inner_->trace();
    trace_.config.measured_time = measured_;
    if (!broken_) return;
    for (auto& step : trace_.steps) {
      std::vector<Observation> doubled;
      for (const auto& o : step.observed) {
        doubled.push_back(o);
        if (o.kind != Observation::Kind::done) continue;
        doubled.push_back(o);
        if (!counted_ && broken_producers_ != nullptr) ++*broken_producers_;  // it shows
        counted_ = true;
      }
      step.observed = std::move(doubled);
    }
  }
  std::unique_ptr<Driver> inner_;
  bool measured_;
  bool broken_;
  int* broken_producers_;  ///< counts the producers whose trace the doubling broke
  bool counted_ = false;
  Trace trace_;
};

/// A factory of Wrapped cores: run k (from 1) is broken when `broken(k)`; `runs` counts
/// them, `broken_producers` (optional) the broken ones whose trace showed it.
DriverFactory wrapped_factory(bool measured, std::function<bool(int)> broken, int* runs,
                              int* broken_producers = nullptr) {
  return [measured, broken = std::move(broken), runs, broken_producers](Protocol protocol, const json& config,
                                                                        std::string* error) -> std::unique_ptr<Driver> {
    auto inner = core_driver_factory()(protocol, config, error);
    if (!inner) return nullptr;
    ++*runs;
    return std::make_unique<Wrapped>(std::move(inner), measured, broken(*runs), broken_producers);
  };
}

const json kVector = json::parse(R"({
  "name": "one record flushed and acked",
  "clauses": ["P2"],
  "config": {"linger_ms": "disabled"},
  "steps": [
    {"do": "submit", "record": "a", "expect_sends": 0},
    {"do": "flush", "expect_sends": 1},
    {"do": "ack", "expect_done": ["0-0:ok"], "expect_barriers": ["0:ok"]}
  ],
  "expect": {"outcomes": ["ok"], "sends": 1}
})");

TEST(RealTimeReruns, AVectorThatFailsOnceOnRealTimePassesOnItsSecondRun) {
  int runs = 0;
  const VectorResult r = run_vector(kVector, "inline",
                                    wrapped_factory(
                                        true, [](int k) { return k == 1; }, &runs));
  EXPECT_TRUE(r.passed) << r.evidence;
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(runs, 2);
  ASSERT_FALSE(r.earlier_failures.empty()) << "what the first run found is kept";
}

TEST(RealTimeReruns, AVectorThatFailsEveryRunFailsAfterThree) {
  int runs = 0;
  const VectorResult r = run_vector(kVector, "inline",
                                    wrapped_factory(
                                        true, [](int) { return true; }, &runs));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.attempts, kRealTimeAttempts);
  EXPECT_EQ(runs, static_cast<int>(kRealTimeAttempts));
  EXPECT_FALSE(r.violations.empty()) << "the last run's violation is the verdict";
}

TEST(RealTimeReruns, AVectorOnVirtualTimeRunsOnce) {
  int runs = 0;
  const VectorResult r = run_vector(kVector, "inline",
                                    wrapped_factory(
                                        false, [](int k) { return k == 1; }, &runs));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(runs, 1);
}

TEST(RealTimeReruns, AVectorThatPassesRunsOnce) {
  int runs = 0;
  const VectorResult r = run_vector(kVector, "inline",
                                    wrapped_factory(
                                        true, [](int) { return false; }, &runs));
  EXPECT_TRUE(r.passed) << r.evidence;
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(runs, 1);
}

PropertyOptions few() {
  PropertyOptions o;
  o.tests = 20;
  o.seed = 1;
  o.shrink = false;
  return o;
}

const PropertySpec& plain() {
  return default_properties().front();
}

/// The plain property over producers that are broken until one of them shows it (its trace
/// completes a record): that sequence's replays, and every later producer, are clean.
/// `shown` counts the broken producers whose trace showed it.
PropertyResult run_broken_until_shown(bool measured, int* shown) {
  int runs = 0;
  return run_property(plain(),
                      wrapped_factory(
                          measured, [shown](int) { return *shown == 0; }, &runs, shown),
                      few());
}

TEST(RealTimeReruns, APropertyViolationNoReplayShowsDoesNotFailOnRealTime) {
  int shown = 0;
  const PropertyResult r = run_broken_until_shown(true, &shown);
  EXPECT_TRUE(r.passed) << r.description;
  EXPECT_EQ(shown, 1) << "one sequence met the broken producer's violation";
}

TEST(RealTimeReruns, APropertyViolationOnVirtualTimeIsNeverForgiven) {
  int shown = 0;
  const PropertyResult r = run_broken_until_shown(false, &shown);
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(r.violation.has_value()) << r.description;
  EXPECT_EQ(r.violation->clause, "P2");
}

TEST(RealTimeReruns, APropertyViolationEveryReplayShowsFailsOnRealTime) {
  int runs = 0;
  const PropertyResult r = run_property(plain(),
                                        wrapped_factory(
                                            true, [](int) { return true; }, &runs),
                                        few());
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(r.violation.has_value()) << r.description;
  EXPECT_EQ(r.violation->clause, "P2");
}

}  // namespace
}  // namespace prodsm::conformance
