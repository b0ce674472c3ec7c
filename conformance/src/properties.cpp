// SPDX-License-Identifier: Apache-2.0
// RapidCheck stateful properties over a Driver (properties.hpp).
#include "prodsm/conformance/properties.hpp"

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/model.hpp"

namespace prodsm::conformance {
namespace {

using namespace std::chrono_literals;

/// RapidCheck's model: nothing. A server command with nothing to answer is a no-op, so
/// every command is valid in every state and shrinking can drop any of them.
struct Model {};

/// The failing run, kept so the shrunk case can be returned as a vector.
struct Failure {
  nlohmann::json vector;
  Violation violation;
  std::string evidence;
};
thread_local std::optional<Failure> g_last_failure;
thread_local bool g_lenient_config = false;
thread_local const std::set<std::string>* g_known_failures = nullptr;
/// Set once the target itself failed (Driver::target_failure): every later case is
/// discarded at once and run_property reports the failure instead of a verdict.
thread_local std::string g_target_failure;

/// The config key a refusal names: "unsupported: <key>: why", or "<field>: why [key k]".
std::string refused_key(const std::string& error) {
  if (error.rfind(kUnsupportedPrefix, 0) == 0) {
    const std::string why = error.substr(kUnsupportedPrefix.size());
    return why.substr(0, why.find(':'));
  }
  if (const auto k = error.rfind("[key "); k != std::string::npos) {
    return error.substr(k + 5, error.find(']', k) - k - 5);
  }
  std::string field = error.substr(0, error.find(':'));
  if (field == "linger") return "linger_ms";
  if (field == "delivery_timeout_ns") return "delivery_timeout_ms";
  if (field.rfind("retry.", 0) == 0) field = field.substr(6);
  if (field == "backoff_initial_ns") return "backoff_initial_ms";
  if (field == "backoff_max_ns") return "backoff_max_ms";
  return field;
}

struct Sut {
  std::unique_ptr<Driver> driver;  ///< the producer under test; released before a replay
  const DriverFactory* factory = nullptr;
  Capabilities capabilities;
  const PropertySpec* spec = nullptr;
  nlohmann::json config;
  std::vector<conformance::Command> executed;
  /// Real time: a violation that no replay of the same commands showed again (the machine
  /// delayed a step past a timer); the rest of the sequence is not judged.
  bool timing_only = false;

  /// Whether `v` shows again when the executed commands run on fresh producers, up to
  /// kRealTimeAttempts - 1 times (docs/conformance.md, "Real-time tolerances"): a defect of
  /// the target shows on every run; a step the machine delayed past a timer does not.
  bool reproduces(const Violation& v) {
    driver.reset();  // an external target runs one producer at a time
    for (std::size_t k = 1; k < kRealTimeAttempts; ++k) {
      std::string error;
      auto again = (*factory)(spec->protocol, config, &error);
      if (!again) return true;
      for (const auto& c : executed) again->run(c);
      again->finish();
      bool found = false;
      for (const auto& w : check_trace(again->trace(), capabilities)) found = found || w.clause == v.clause;
      if (!found) return false;
    }
    return true;
  }

  /// Judges `violations` (the trace so far): the first not already known to fail on this
  /// target fails the case, unless replays on real time do not show it (timing_only).
  void judge(const std::vector<Violation>& violations) {
    for (const auto& v : violations) {
      if (g_known_failures == nullptr || g_known_failures->count(v.clause) == 0) fail(v);
      if (timing_only) return;
    }
  }

  /// Fails the case with `v` as its evidence; on real time, only once replays confirm it.
  void fail(const Violation& v) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& c : executed) steps.push_back(command_to_json(c));
    const std::string evidence = render_evidence(driver->trace(), v) + "    config " + config.dump() + "\n";
    if (capabilities.measured_time && !reproduces(v)) {
      timing_only = true;
      return;
    }
    g_last_failure =
        Failure{nlohmann::json{{"name", "finding " + spec->name + " " + v.clause},
                               {"source", "shrunk counterexample of the property " + spec->name + ": " + v.message},
                               {"clauses", {v.clause}},
                               {"protocol", spec->protocol == Protocol::s2 ? "s2" : "durable_streams"},
                               {"config", config},
                               {"steps", steps},
                               {"expect", nlohmann::json::object()}},
                v, evidence};
    RC_FAIL(evidence);
  }
};

struct StepCommand final : rc::state::Command<Model, Sut> {
  explicit StepCommand(conformance::Command c) : command{std::move(c)} {}
  conformance::Command command;
  void run(const Model&, Sut& sut) const override {
    if (sut.timing_only) return;  // judged no further (Sut::reproduces)
    if (!sut.driver->run(command)) {
      // The target itself failed: stop judging it (every later case is discarded at once).
      if (std::string why = sut.driver->target_failure(); !why.empty()) {
        g_target_failure = std::move(why);
        RC_DISCARD("the target failed");
      }
      return;  // nothing to answer, or the target cannot express it
    }
    sut.executed.push_back(command);
    sut.judge(check_trace(sut.driver->trace(), sut.capabilities));
  }
  void show(std::ostream& os) const override { os << describe(command); }
};

// ---- generators -------------------------------------------------------------------------

rc::Gen<CoreConfig> gen_config(const PropertySpec& spec) {
  return rc::gen::exec([spec] {
    CoreConfig c;
    c.protocol = spec.protocol;
    c.stream_operations = spec.stream_operations && spec.protocol == Protocol::durable_streams;
    const Duration linger = *rc::gen::element(Duration{0}, Duration{1ms}, Duration{5ms}, Duration{1h}, Duration{-1});
    const bool disabled = linger.count() < 0;
    const std::uint32_t in_flight = *rc::gen::inRange<std::uint32_t>(1, 6);
    auto fill = [&](auto& cfg, std::uint64_t min_bytes, std::uint32_t max_records) {
      cfg.linger = disabled ? Linger::disabled() : Linger::after(linger);
      using U32 = std::uint32_t;
      using U64 = std::uint64_t;
      cfg.max_batch_records = *rc::gen::element<U32>(U32{1}, U32{2}, U32{3}, U32{10}, U32{max_records});
      cfg.max_batch_bytes = *rc::gen::element<U64>(U64{min_bytes}, U64{16}, U64{64}, U64{300});
      cfg.max_unacked_bytes = cfg.max_batch_bytes * *rc::gen::element<U64>(U64{1}, U64{2}, U64{4}, U64{16});
      cfg.max_in_flight = in_flight;
      cfg.max_unacked_batches = *rc::gen::element<U32>(U32{in_flight}, U32{in_flight + 1}, U32{16}, U32{1024});
      cfg.max_pending_barriers = *rc::gen::element<U32>(U32{1}, U32{2}, U32{1024});
      const Duration floor = disabled ? Duration{0} : linger;
      cfg.delivery_timeout_ns =
          floor + *rc::gen::element(Duration{1ms}, Duration{20ms}, Duration{200ms}, Duration{120s});
      cfg.retry.max_attempts = *rc::gen::element<U32>(U32{1}, U32{2}, U32{3}, U32{10});
      cfg.retry.backoff_initial_ns = *rc::gen::element(Duration{1us}, Duration{1ms});
      cfg.retry.backoff_max_ns = cfg.retry.backoff_initial_ns + *rc::gen::element(Duration{0}, Duration{4ms});
      cfg.retry.mode = *rc::gen::element(RetryMode::all, RetryMode::no_side_effects);
      cfg.retry.jitter_seed = *rc::gen::arbitrary<std::uint64_t>();
    };
    if (spec.protocol == Protocol::durable_streams) {
      auto& d = c.durable_streams;
      d.protocol.body_format =
          *rc::gen::element(DurableStreamsPolicy::BodyFormat::bytes, DurableStreamsPolicy::BodyFormat::json);
      fill(d, DurableStreamsPolicy::kMinBatchBytes, 1000);
      if (spec.sequencing == Sequencing::ds_idempotent) {
        // S8: sometimes at the protocol's limits (epoch and seq up to 2^53-1).
        constexpr std::uint64_t kMax = DurableStreamsPolicy::kMaxSequenceValue;
        d.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{
            "prop", *rc::gen::weightedElement<std::uint64_t>({{6, 0}, {2, 5}, {1, kMax - 2}, {1, kMax - 1}, {1, kMax}}),
            spec.auto_claim};
        d.protocol.idempotent->seq =
            *rc::gen::weightedElement<std::uint64_t>({{8, 0}, {1, 7}, {1, kMax - 3}, {1, kMax - 1}, {1, kMax}});
      }
    } else {
      auto& s = c.s2;
      fill(s, 8, 1000);
      if (spec.sequencing == Sequencing::s2_match_seq_num) {
        // S8: sometimes near the end of the u64 seq_num space.
        s.protocol.match_seq_num = *rc::gen::weightedElement<std::uint64_t>(
            {{6, 0}, {3, 100}, {1, UINT64_MAX - 20}, {1, UINT64_MAX - 3}, {1, UINT64_MAX}});
      }
      if (*rc::gen::arbitrary<bool>()) s.protocol.fencing_token = "fence-1";
    }
    return c;
  });
}

rc::Gen<std::string> gen_record(const TraceConfig& t) {
  // Largest record that fits a batch alone: meter(n) + overhead <= max_batch_bytes.
  const std::uint64_t fixed = t.meter(0) + t.batch_overhead();
  const std::size_t max_fit = t.max_batch_bytes > fixed ? static_cast<std::size_t>(t.max_batch_bytes - fixed) : 0;
  const bool json = t.protocol == Protocol::durable_streams && t.json;
  const std::size_t below = max_fit > 0 ? max_fit - 1 : 0;
  const std::size_t above = max_fit + 1;
  return rc::gen::map(
      rc::gen::weightedOneOf<std::size_t>({
          {6, rc::gen::inRange<std::size_t>(1, std::max<std::size_t>(2, std::min<std::size_t>(max_fit, 12) + 1))},
          {1, rc::gen::just(std::size_t{0})},
          {1, rc::gen::just(std::size_t{below})},
          {2, rc::gen::just(std::size_t{max_fit})},
          {1, rc::gen::just(std::size_t{above})},
      }),
      [json](std::size_t n) {
        if (!json) return std::string(n, 'x');
        if (n == 0) return std::string{};
        return "1" + std::string(n - 1, '0');  // a JSON number of exactly n bytes
      });
}

rc::Gen<Command> gen_command(const CoreConfig& config) {
  const TraceConfig t = trace_config(config);
  const Duration linger = t.linger_ns.value_or(Duration{3ms});
  // Retryable answers keep the run going (and exercise retries, gaps and claims); the
  // others end it with a terminal error, so they are rarer.
  const std::vector<ErrorCode> retryable = {ErrorCode::unavailable, ErrorCode::unavailable, ErrorCode::connection_lost,
                                            ErrorCode::connection_lost, ErrorCode::request_timeout};
  std::vector<ErrorCode> other = {ErrorCode::not_found, ErrorCode::rejected, ErrorCode::protocol_error};
  if (t.protocol == Protocol::durable_streams) {
    for (auto c : {ErrorCode::conflict, ErrorCode::sequence_gap, ErrorCode::sequence_gap, ErrorCode::sequence_gap,
                   ErrorCode::stale_epoch, ErrorCode::stale_epoch, ErrorCode::stale_epoch, ErrorCode::stream_closed}) {
      other.push_back(c);
    }
  } else {
    other.push_back(ErrorCode::condition_failed);
  }
  // An S2 append session answers its appends in order; Durable Streams requests on
  // separate connections (or pipelined) may be answered in any order.
  auto which =
      t.protocol == Protocol::s2
          ? rc::gen::just(Command::Which::oldest)
          : rc::gen::weightedElement<Command::Which>({{4, Command::Which::oldest}, {1, Command::Which::newest}});
  auto answer = [which](Command::Kind kind) {
    return rc::gen::map(which, [kind](Command::Which w) {
      Command c = Command::of(kind);
      c.which = w;
      return c;
    });
  };
  auto failing = [which](const std::vector<ErrorCode>& codes) {
    return rc::gen::apply(
        [](ErrorCode code, Command::Which w, bool retry_after) {
          Command c = Command::fail_with(code, w);
          if (code == ErrorCode::unavailable && retry_after) c.retry_after_ns = 2ms;
          return c;
        },
        rc::gen::elementOf(codes), which, rc::gen::arbitrary<bool>());
  };
  return rc::gen::weightedOneOf<Command>({
      {config.stream_operations ? 2U : 0U, rc::gen::just(Command::of(Command::Kind::close_stream))},  // C4
      {60, rc::gen::map(gen_record(t), [](std::string r) { return Command::submit_record(std::move(r)); })},
      {12, rc::gen::just(Command::of(Command::Kind::flush))},
      {1, rc::gen::just(Command::of(Command::Kind::close))},
      {1, rc::gen::just(Command::of(Command::Kind::abort))},
      {25, rc::gen::map(rc::gen::weightedElement<Duration>({{6, Duration{0}},
                                                            {6, Duration{1ms}},
                                                            {4, linger},
                                                            {3, linger + 1ms},
                                                            {3, Duration{5ms}},
                                                            {1, t.delivery_timeout_ns / 2},
                                                            {1, t.delivery_timeout_ns}}),
                        [](Duration d) { return Command::advance_by(d); })},
      {35, answer(Command::Kind::ack)},
      {5, answer(Command::Kind::duplicate)},
      {12, failing(retryable)},
      {5, failing(other)},
      {1, rc::gen::map(rc::gen::arbitrary<bool>(),
                       [](bool kept) {
                         Command c = Command::of(Command::Kind::restart_server);
                         c.server_state_kept = kept;
                         return c;
                       })},
      {1, rc::gen::map(rc::gen::element(Command::Invalid::wrong_count, Command::Invalid::unknown_batch),
                       [](Command::Invalid kind) {
                         Command c = Command::of(Command::Kind::invalid_ack);
                         c.invalid = kind;
                         return c;
                       })},
  });
}

}  // namespace

const std::vector<PropertySpec>& default_properties() {
  static const std::vector<PropertySpec> all = {
      {"durable_streams/plain", Protocol::durable_streams, Sequencing::none, false},
      {"durable_streams/idempotent", Protocol::durable_streams, Sequencing::ds_idempotent, false},
      {"durable_streams/auto_claim", Protocol::durable_streams, Sequencing::ds_idempotent, true},
      {"s2/plain", Protocol::s2, Sequencing::none, false},
      {"s2/match_seq_num", Protocol::s2, Sequencing::s2_match_seq_num, false},
  };
  return all;
}

void conformance_property(const PropertySpec& spec, const DriverFactory& factory) {
  if (!g_target_failure.empty()) RC_DISCARD("the target failed");
  const CoreConfig config = *gen_config(spec);
  const auto commands = *rc::state::gen::commands(Model{}, [&config](const Model&) {
    return rc::gen::map(gen_command(config), [](conformance::Command c) {
      return std::shared_ptr<const rc::state::Command<Model, Sut>>(std::make_shared<const StepCommand>(std::move(c)));
    });
  });
  nlohmann::json config_json = core_config_to_json(config);
  std::string error;
  auto driver = factory(spec.protocol, config_json, &error);
  // A key the target cannot express (or, for another SDK, refuses) is left at its default.
  for (std::size_t tries = 0; !driver && tries < 32; ++tries) {
    if (error.rfind(kTargetFailedPrefix, 0) == 0) {
      g_target_failure = error;
      RC_DISCARD("the target failed");
    }
    const bool unsupported = error.rfind(kUnsupportedPrefix, 0) == 0;
    if (!unsupported && !g_lenient_config) break;
    const std::string key = refused_key(error);
    if (!config_json.contains(key)) RC_DISCARD("the target cannot run this property: " + error);
    // The key that makes the property what it is (its sequencing) is not left out: the
    // rest would be another property's run, reported under this one's name.
    const bool defining = (spec.sequencing == Sequencing::ds_idempotent && key == "idempotent") ||
                          (spec.sequencing == Sequencing::s2_match_seq_num && key == "match_seq_num");
    if (defining) RC_DISCARD("the target cannot run this property: " + error);
    config_json.erase(key);
    driver = factory(spec.protocol, config_json, &error);
  }
  if (!driver) RC_FAIL("the target refused a generated config: " + error + "\n    config " + config_json.dump());
  Sut sut;
  sut.driver = std::move(driver);
  sut.factory = &factory;
  sut.capabilities = sut.driver->capabilities();
  sut.spec = &spec;
  sut.config = config_json;
  rc::state::runAll(commands, Model{}, sut);
  // A real-time target may still act after the last command: judged too.
  if (!sut.timing_only) {
    sut.driver->finish();
    sut.judge(check_trace(sut.driver->trace(), sut.capabilities));
  }
  RC_CLASSIFY(sut.timing_only, "a real-time violation no replay showed again");
  if (sut.timing_only) return;
  driver = std::move(sut.driver);
  {  // what the sequence exercised (printed by RapidCheck as the test distribution)
    const Prediction p = predict(driver->trace());
    std::size_t sends = 0;
    std::size_t resends = 0;
    bool closed = false;
    for (const auto& step : driver->trace().steps) {
      for (const auto& o : step.observed) {
        if (o.kind == Observation::Kind::send) (o.attempt > 1 ? resends : sends)++;
        if (o.kind == Observation::Kind::closed) closed = true;
      }
    }
    RC_TAG(p.terminal ? std::string(to_string(*p.terminal)) : std::string("no terminal error"));
    RC_CLASSIFY(resends > 0, "resends");
    RC_CLASSIFY(closed, "closed");
    RC_CLASSIFY(sends >= 5, "5+ batches");
    const auto& stats_trace = driver->trace();
    bool claimed = false;
    for (const auto& step : stats_trace.steps) {
      for (const auto& o : step.observed) {
        if (o.kind == Observation::Kind::send && o.stamp.sequenced && !o.stamp.match_seq_num &&
            o.stamp.epoch != stats_trace.config.initial_epoch) {
          claimed = true;
        }
      }
    }
    RC_CLASSIFY(claimed, "epoch claimed");
  }
  // D2: the same inputs on a fresh producer observe the same, byte for byte. (The first
  // producer is released first: an external target runs one producer at a time.) Not on
  // real time (a wire target): its timers interleave with the inputs as the clock runs.
  if (sut.capabilities.measured_time || !sut.capabilities.virtual_time) return;
  const Trace first = driver->trace();
  const std::vector<conformance::Command> executed = sut.executed;
  driver.reset();
  auto again = factory(spec.protocol, config_json, &error);
  if (!again) RC_FAIL("the target refused the config on replay: " + error);
  for (const auto& c : executed) again->run(c);
  if (auto v = check_replay(first, again->trace())) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& c : executed) steps.push_back(command_to_json(c));
    g_last_failure =
        Failure{nlohmann::json{{"name", "finding " + spec.name + " D2"},
                               {"source", "shrunk counterexample of the property " + spec.name + ": " + v->message},
                               {"clauses", {"D2"}},
                               {"protocol", spec.protocol == Protocol::s2 ? "s2" : "durable_streams"},
                               {"config", config_json},
                               {"steps", steps},
                               {"expect", nlohmann::json::object()}},
                *v, render_evidence(first, *v)};
    RC_FAIL(render_evidence(first, *v));
  }
}

bool property_exercises(const PropertySpec& spec, std::string_view clause) {
  if (clause == "S1") return spec.protocol == Protocol::s2;
  if (clause == "S2" || clause == "S3" || clause == "S4" || clause == "S5") {
    return spec.sequencing == Sequencing::ds_idempotent;
  }
  if (clause == "S6") return spec.protocol == Protocol::durable_streams;
  if (clause == "S8") return spec.sequencing != Sequencing::none;
  if (clause == "B3") return false;  // limits are validated at create: config vectors
  return true;
}

namespace {

/// --seed into RC_PARAMS before RapidCheck first reads its configuration, which it
/// prints ("Using configuration: seed=..."): else that line named a random seed that the
/// run did not use. A seed already in RC_PARAMS is replaced; its other keys stay.
void put_seed_in_rc_params(std::uint64_t seed) {
  std::string params;
  if (const char* env = std::getenv("RC_PARAMS")) {
    std::istringstream words(env);
    for (std::string word; words >> word;) {
      if (word.rfind("seed=", 0) == 0) continue;
      params += word + " ";
    }
  }
  params += "seed=" + std::to_string(seed);
  ::setenv("RC_PARAMS", params.c_str(), 1);
}

}  // namespace

PropertyResult run_property(const PropertySpec& spec, const DriverFactory& factory, const PropertyOptions& options) {
  if (options.seed) put_seed_in_rc_params(*options.seed);
  g_last_failure.reset();
  g_target_failure.clear();
  g_lenient_config = options.lenient_config;
  g_known_failures = &options.known_failures;
  struct Reset {
    ~Reset() { g_known_failures = nullptr; }
  } reset;
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = options.tests;
  params.maxSize = options.max_size;
  if (options.seed) params.seed = *options.seed;
  params.disableShrinking = !options.shrink;
  rc::detail::TestMetadata metadata;
  metadata.id = spec.name;
  metadata.description = spec.name;
  struct Quiet final : rc::detail::TestListener {
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  } quiet;
  // RC_PARAMS="reproduce=..." (printed with a failure) replays exactly that case, of the
  // property it names; the others are not run (RapidCheck would report each "passed" after
  // no sequence at all, and its clauses pass on nothing).
  const auto& replays = rc::detail::configuration().reproduce;
  PropertyResult out;
  out.name = spec.name;
  if (!replays.empty() && replays.count(spec.name) == 0) {
    out.not_applicable = true;
    out.description = "not run: RC_PARAMS reproduces a case of another property";
    return out;
  }
  const bool replaying = !replays.empty();
  const auto result = rc::detail::checkProperty(rc::detail::toProperty([&] { conformance_property(spec, factory); }),
                                                metadata, params, quiet, replays);
  if (!g_target_failure.empty()) {  // whatever RapidCheck made of the discards: not judged
    out.target_failure = g_target_failure.substr(std::min(g_target_failure.size(), kTargetFailedPrefix.size()));
    out.description = "the target failed: " + out.target_failure;
    return out;
  }
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error err;
  if (result.match(success)) {
    out.passed = true;
    out.tests = success.numSuccess;
  } else if (result.match(failure)) {
    out.tests = failure.numSuccess;
    out.description = failure.description;
    rc::detail::Configuration reproduce;
    reproduce.testParams = params;
    reproduce.reproduce = {{spec.name, failure.reproduce}};
    out.reproduce = rc::detail::configToMinimalString(reproduce);
    if (g_last_failure) {
      out.violation = g_last_failure->violation;
      out.evidence = g_last_failure->evidence;
      out.counterexample = g_last_failure->vector;
    }
  } else if (result.match(gave_up)) {
    out.tests = gave_up.numSuccess;
    out.description = "gave up: " + gave_up.description;
    out.not_applicable = out.tests == 0 && gave_up.description.find("cannot run this property") != std::string::npos;
    if (out.not_applicable) {
      const auto at = gave_up.description.rfind("cannot run this property: ");
      out.description = gave_up.description.substr(at + 26);
      if (const auto nl = out.description.find('\n'); nl != std::string::npos) out.description.resize(nl);
    }
  } else if (result.match(err)) {
    out.description = "error: " + err.description;
    if (replaying && err.description.find("not a failure") != std::string::npos) {
      // The replayed case passes now (the target was fixed, or it is another target): one
      // sequence that passed, not a failure of the harness.
      out.passed = true;
      out.tests = 1;
      out.description = "the reproduced case passes";
    }
  }
  return out;
}

}  // namespace prodsm::conformance
