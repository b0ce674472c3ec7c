// SPDX-License-Identifier: Apache-2.0
// Served runs (`prodsm conform --serve`): another SDK's producer over its own HTTP client
// and its own clock, against the harness's simulated server on a loopback port. The
// driver process (the JSON-lines driver protocol, docs/conformance.md) only submits,
// flushes, closes and aborts, and reports outcomes; the harness reads the sends off the
// wire and answers them there (wire_driver.hpp). Nothing of the SDK is injected.
#include <exception>
#include <nlohmann/json.hpp>

#include "driver_json.hpp"
#include "driver_process.hpp"
#include "prodsm/base64.hpp"
#include "prodsm/conformance/external.hpp"
#include "wire_driver.hpp"

namespace prodsm::conformance {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// The vector's configuration with every duration times the time scale (the SDK runs it
/// on the real clock). A linger the vector leaves at its default is stated as the
/// contract's default (B2: 5 ms), scaled: the SDK's own default would run unscaled.
json scaled_config(json config, std::uint32_t k) {
  if (!config.contains("linger_ms")) config["linger_ms"] = 5;
  for (const char* key : {"linger_ms", "delivery_timeout_ms", "backoff_initial_ms", "backoff_max_ms"}) {
    if (config.contains(key) && config.at(key).is_number()) config[key] = config.at(key).get<double>() * k;
  }
  return config;
}

/// The driver processes of one factory: one is reused run after run (a new `start`
/// drops the previous producer), a second is started only while the first is in use.
struct ProcessPool {
  ExternalTarget target;
  std::vector<std::unique_ptr<detail::DriverProcess>> idle;

  std::unique_ptr<detail::DriverProcess> take(std::string* err) {
    while (!idle.empty()) {
      auto p = std::move(idle.back());
      idle.pop_back();
      if (p->alive()) return p;
    }
    auto p = std::make_unique<detail::DriverProcess>(target.argv, target.reply_timeout_ns, target.show_driver_log);
    if (!p->alive()) {
      if (err) *err = p->error();
      return nullptr;
    }
    return p;
  }
  void give_back(std::unique_ptr<detail::DriverProcess> p) {
    if (p && p->alive()) idle.push_back(std::move(p));
  }
  ~ProcessPool() {
    for (auto& p : idle) p->request({{"op", "stop"}});
  }
};

class ServedDriver final : public detail::WireDriver {
 public:
  ServedDriver(const TraceConfig& config, RealTimeOptions rt, Capabilities caps,
               std::unique_ptr<detail::WireServer> wire, std::unique_ptr<detail::DriverProcess> process,
               std::shared_ptr<ProcessPool> pool)
      : WireDriver{config, rt, caps, std::move(wire), false}, process_{std::move(process)}, pool_{std::move(pool)} {}
  ~ServedDriver() override { pool_->give_back(std::move(process_)); }

  /// Starts the SDK's producer on `url`; the driver's refusal, or nullopt.
  std::optional<json> start(Protocol protocol, const json& config, const std::string& url) {
    const json reply = process_->request({{"op", "start"},
                                          {"protocol", protocol == Protocol::s2 ? "s2" : "durable_streams"},
                                          {"config", scaled_config(config, rt_.time_scale)},
                                          {"serve", {{"url", url}}}});
    if (!reply.value("ok", false)) return reply;
    return std::nullopt;
  }

 private:
  bool client_command(const Command& c) override {
    if (c.kind == Command::Kind::submit && c.record.empty()) {
      // prodsm refuses an empty record (invalid_record); an SDK may take it, and then the
      // bytes on the wire cannot show which batch holds it.
      unsupported_ =
          "submit of an empty record: the wire cannot show which batch an SDK put it in (the injected run judges "
          "it)";
      return false;
    }
    json request;
    Input::Kind kind = Input::Kind::submit;
    switch (c.kind) {
      case Command::Kind::submit: request = {{"op", "submit"}, {"record_b64", base64::encode(c.record)}}; break;
      case Command::Kind::flush:
        request = {{"op", "flush"}};
        kind = Input::Kind::flush;
        break;
      case Command::Kind::close:
        request = {{"op", "close"}};
        kind = Input::Kind::close;
        break;
      case Command::Kind::abort:
        request = {{"op", "abort"}};
        kind = Input::Kind::abort;
        break;
      default:
        unsupported_ =
            "close_stream: the driver protocol has no stream close (C4 runs on the core and adapter targets)";
        return false;
    }
    const std::size_t i = begin(kind);
    if (c.kind == Command::Kind::submit) trace_.steps[i].input.record = c.record;
    if (!target_failure_.empty()) return false;  // dead for good: nothing more is asked
    const json reply = process_->request(request);
    if (!reply.value("ok", false)) {
      trace_.steps.pop_back();
      if (reply.contains("unsupported")) {
        unsupported_ = reply.at("unsupported").dump();
      } else {  // an error is the driver's failure, not something the SDK cannot express
        target_failure_ = process_->failure_at(describe(c), reply);
      }
      return false;
    }
    SyncResult result;
    try {
      result = detail::result_from(reply.value("result", json()));
    } catch (const std::exception& e) {
      trace_.steps.pop_back();
      target_failure_ = std::string(kTargetFailedPrefix) + "the driver's reply to " + describe(c) +
                        " does not follow the driver protocol: " + e.what();
      return false;
    }
    if (result.kind == SyncResult::Kind::ticket) sends_.accepted(c.record);
    if (result.kind == SyncResult::Kind::barrier || c.kind == Command::Kind::close) sends_.cut();
    take_observed(reply);
    // A close that completed at the call is an observation (as the core reports Closed),
    // the first time; later closes keep their result.
    if (result.kind == SyncResult::Kind::closed_result && !closed_observed_) {
      Observation closed;
      closed.kind = Observation::Kind::closed;
      closed.ok = result.ok;
      if (result.error) closed.error = *result.error;
      closed.at = trace_time(Clock::now());
      pending_.push_back(Pending{Clock::now(), std::move(closed), std::nullopt});
      closed_observed_ = true;
      result = SyncResult{};
    }
    trace_.steps[i].result = result;
    settle();
    finalize(i);
    return true;
  }

  /// What the driver observed since its last reply (a poll lets the SDK run 1 ms first).
  bool collect_outcomes() override { return take_observed(process_->request({{"op", "poll"}, {"wait_ms", 1}})); }

  bool take_observed(const json& reply) {
    json observed;
    try {
      observed = detail::observed_of(reply);
    } catch (const std::exception& e) {
      if (target_failure_.empty()) target_failure_ = std::string(kTargetFailedPrefix) + "the driver's " + e.what();
      return false;
    }
    bool any = false;
    for (const auto& o : observed) {
      Observation obs;
      try {
        obs = detail::observation_from(o);
      } catch (const std::exception& e) {  // the driver's failure: recorded, nothing of it observed
        if (target_failure_.empty()) {
          target_failure_ = std::string(kTargetFailedPrefix) +
                            "the driver reported an observation that does not follow the driver protocol: " + e.what();
        }
        return any;
      }
      if (obs.kind == Observation::Kind::send) continue;  // sends are read off the wire
      if (obs.kind == Observation::Kind::closed) {
        if (closed_observed_) continue;  // an SDK may report a second close's outcome too
        closed_observed_ = true;
      }
      obs.at = trace_time(Clock::now());
      pending_.push_back(Pending{Clock::now(), std::move(obs), std::nullopt});
      any = true;
    }
    return any;
  }

  /// Nothing to count in another process: quiescence is the quiet period alone.
  bool quiescent(Clock::time_point /*step_start*/) override { return process_->alive(); }

  std::unique_ptr<detail::DriverProcess> process_;
  std::shared_ptr<ProcessPool> pool_;
  bool closed_observed_ = false;
};

}  // namespace

DriverFactory served_driver_factory(const ExternalTarget& target, RealTimeOptions rt, TargetInfo* info,
                                    std::string* error) {
  // One process answers hello here; runs reuse a process (each `start` drops the previous
  // producer, aborting it: its sockets and timers go with it).
  detail::DriverProcess probe(target.argv, target.reply_timeout_ns, target.show_driver_log);
  const json h = probe.alive() ? probe.request({{"op", "hello"}}) : json::object();
  if (!h.value("ok", false)) {
    if (error) *error = probe.alive() ? "driver " + target.name + " did not answer hello: " + h.dump() : probe.error();
    return nullptr;
  }
  const json caps_json = h.value("capabilities", json::object());
  if (!caps_json.value("serve", false)) {
    if (error) *error = "driver " + target.name + " cannot serve: its hello has no capabilities.serve";
    return nullptr;
  }
  probe.request({{"op", "stop"}});
  Capabilities caps = detail::capabilities_from(caps_json);
  caps.virtual_time = false;  // the SDK's own clock
  caps.measured_time = true;
  caps.stream_close = false;  // the driver protocol has no stream close
  TargetInfo self;
  self.driver = h.value("driver", target.name);
  self.sdk = h.value("sdk", "");
  self.capabilities = caps;
  const json protocols = h.contains("protocols") && h.at("protocols").is_array() ? h.at("protocols") : json::array();
  for (const auto& p : protocols) {
    if (p == "durable_streams") self.protocols.push_back(Protocol::durable_streams);
  }
  const json notes = h.contains("notes") && h.at("notes").is_object() ? h.at("notes") : json::object();
  for (const auto& [k, v] : notes.items()) self.notes[k] = v.is_string() ? v.get<std::string>() : v.dump();
  self.notes["virtual_time"] =
      "served: the SDK runs on its own clock and HTTP client (time scale " + std::to_string(rt.time_scale) + ")";
  if (info) *info = self;
  auto runs = std::make_shared<std::uint64_t>(0);
  auto pool = std::make_shared<ProcessPool>();
  pool->target = target;
  return [rt, caps, runs, pool](Protocol protocol, const json& config, std::string* err) -> std::unique_ptr<Driver> {
    if (protocol != Protocol::durable_streams) {
      if (err) *err = std::string(kUnsupportedPrefix) + "protocol s2: served runs speak the Durable Streams wire";
      return nullptr;
    }
    auto core = core_config_from_json(protocol, config, err);  // the harness's reading of the config
    auto wire = detail::WireServer::start();
    if (!wire) {
      if (err) *err = wire.error();
      return nullptr;
    }
    const std::string url =
        "http://127.0.0.1:" + std::to_string((*wire)->port()) + "/conformance/" + std::to_string(++*runs);
    auto process = pool->take(err);
    if (!process) return nullptr;
    if (!core) core = core_config_from_json(protocol, json::object(), err);
    TraceConfig trace = trace_config(*core);
    trace.measured_time = true;
    trace.time_tolerance_ns = std::chrono::milliseconds{1};
    auto driver = std::make_unique<ServedDriver>(trace, rt, caps, std::move(*wire), std::move(process), pool);
    if (auto refused = driver->start(protocol, config, url)) {
      if (err) {
        if (refused->contains("unsupported")) {
          *err = std::string(kUnsupportedPrefix) + refused->at("unsupported").get<std::string>();
        } else {
          const json e = refused->value("error", json::object());
          *err = e.value("field", std::string{}) + ": " + e.value("message", e.dump());
          if (e.contains("key") && e.at("key").is_string()) *err += " [key " + e.at("key").get<std::string>() + "]";
        }
      }
      return nullptr;
    }
    return driver;
  };
}

}  // namespace prodsm::conformance
