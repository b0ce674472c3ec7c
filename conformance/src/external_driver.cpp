// SPDX-License-Identifier: Apache-2.0
// External targets: a driver process per SDK, spoken to in JSON lines
// (docs/conformance.md, "The driver protocol"). This side keeps the trace and the
// simulated server; the driver only translates between the protocol and its SDK.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "driver_json.hpp"
#include "driver_process.hpp"
#include "prodsm/base64.hpp"
#include "prodsm/conformance/external.hpp"
#include "prodsm/conformance/json_limits.hpp"
#include "sim_server.hpp"

namespace prodsm::conformance {
namespace {

using nlohmann::json;

/// 2^53: the largest integer that every JSON implementation — a JavaScript driver's
/// numbers — holds exactly; no ticket, count or id of a run comes near it.
constexpr std::uint64_t kMaxExactInteger = std::uint64_t{1} << 53;

/// `v`, the driver's value of field `key`, as an integer 0..max (max at most 2^53): a
/// non-negative JSON integer, or a float with no fraction. Anything else — a negative
/// number, a fraction, a number beyond the range, another type — throws
/// std::invalid_argument naming the field and the value: the reply does not follow the
/// driver protocol (never converted: -1 read as 2^64-1 was blamed on the SDK).
std::uint64_t whole_value(const json& v, const std::string& key, std::uint64_t max) {
  max = std::min(max, kMaxExactInteger);
  std::optional<std::uint64_t> n;
  if (v.is_number_unsigned()) {
    n = v.get<std::uint64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= 0 && d <= static_cast<double>(max) && std::floor(d) == d) {
      n = static_cast<std::uint64_t>(d);
    }
  }
  if (!n || *n > max) {
    throw std::invalid_argument("\"" + key + "\": " + v.dump() + " is not an integer in 0.." + std::to_string(max));
  }
  return *n;
}

/// Field `key` of the driver's object `j` as whole_value() reads it; `fallback` when absent.
std::uint64_t whole(const json& j, const std::string& key, std::uint64_t fallback,
                    std::uint64_t max = kMaxExactInteger) {
  if (!j.contains(key)) return fallback;
  return whole_value(j.at(key), key, max);
}

/// whole() for a field the trace holds in 32 bits (counts, attempts, record ends).
std::uint32_t whole32(const json& j, const std::string& key, std::uint32_t fallback) {
  return static_cast<std::uint32_t>(whole(j, key, fallback, UINT32_MAX));
}

std::optional<ErrorCode> code_from(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(kLastErrorCode); ++i) {
    if (to_string(static_cast<ErrorCode>(i)) == name) return static_cast<ErrorCode>(i);
  }
  return std::nullopt;
}

Error error_from(const json& j) {
  Error e;
  if (!j.is_object()) return make_error(ErrorCode::internal, Certainty::definite, false, "driver: no error object");
  const std::string code = j.value("code", "");
  e.code = code_from(code).value_or(ErrorCode::internal);
  e.certainty = j.value("certainty", "definite") == "indefinite" ? Certainty::indefinite : Certainty::definite;
  e.retryable = j.value("retryable", false);
  e.message = j.value("message", code_from(code) ? std::string{} : "driver reported code '" + code + "'");
  e.final_offset = j.value("final_offset", "");
  return e;
}

json error_to(const Error& e) {
  json j = {{"code", std::string(to_string(e.code))},
            {"certainty", std::string(to_string(e.certainty))},
            {"retryable", e.retryable},
            {"message", e.message}};
  if (e.code == ErrorCode::sequence_gap) {
    j["expected_seq"] = e.expected_seq;
    j["received_seq"] = e.received_seq;
  }
  if (e.code == ErrorCode::stale_epoch) j["server_epoch"] = e.server_epoch;
  if (e.code == ErrorCode::stream_closed) j["final_offset"] = e.final_offset;
  if (e.retry_after_ns) j["retry_after_ms"] = std::chrono::duration<double, std::milli>(*e.retry_after_ns).count();
  return j;
}

json ack_to(const TraceAck& a, Protocol protocol) {
  if (protocol == Protocol::s2) return {{"start", a.start}, {"end", a.end}};
  return {{"next_offset", a.next_offset}, {"duplicate", a.duplicate}};
}

/// A simulated server's response as the driver protocol's `response` object.
json response_to(const Response& r, Protocol protocol) {
  if (r.kind == Response::Kind::ack) {
    return {{"kind", "ack"}, {"ack", ack_to(r.ack, protocol)}, {"invalid", r.invalid}};
  }
  return {{"kind", "fail"}, {"error", error_to(r.error)}};
}

TraceAck ack_from(const json& j) {
  TraceAck a;
  if (!j.is_object()) return a;
  a.start = whole(j, "start", 0);
  a.end = whole(j, "end", 0);
  a.next_offset = j.value("next_offset", "");
  a.duplicate = j.value("duplicate", false);
  if (j.contains("seq_num") && !j.at("seq_num").is_null()) a.seq_num = whole(j, "seq_num", 0);
  return a;
}

}  // namespace

namespace detail {

Observation observation_from(const json& j) {
  Observation o;
  if (j.contains("at_ms") && !j.at("at_ms").is_null()) {
    // A driver's time, in ms (fractions allowed): converted only when it is in range (no
    // UB in the conversion); anything else is the driver's failure, never time 0.
    const json& v = j.at("at_ms");
    const auto at =
        v.is_number() ? milliseconds_in_range(v.get<double>(), std::chrono::hours{24 * 365 * 100}) : std::nullopt;
    if (!at) throw std::invalid_argument("\"at_ms\": " + v.dump() + " is not a time in ms from 0 to 100 years");
    o.at = Instant{} + *at;
  }
  const std::string kind = j.value("kind", "");
  if (kind == "send") {
    o.kind = Observation::Kind::send;
    o.send_index = static_cast<std::size_t>(whole(j, "send", 0));
    o.batch = whole(j, "batch", 0);
    o.attempt = whole32(j, "attempt", 1);
    o.first_ticket = whole(j, "first_ticket", 0);
    o.count = whole32(j, "count", 0);
    o.body = base64::decode(j.value("body_b64", "")).value_or(std::string{});
    if (j.contains("record_ends") && j.at("record_ends").is_array()) {
      const json& ends = j.at("record_ends");
      for (const auto& e : ends)
        o.record_ends.push_back(static_cast<std::uint32_t>(whole_value(e, "record_ends", UINT32_MAX)));
    }
    if (j.contains("session") && !j.at("session").is_null()) o.session = whole(j, "session", 0);
    const json st = j.value("stamp", json::object());
    o.stamp.sequenced = st.value("sequenced", false);
    o.stamp.epoch = whole(st, "epoch", 0);
    o.stamp.seq = whole(st, "seq", 0);
    if (st.contains("match_seq_num") && !st.at("match_seq_num").is_null()) {
      o.stamp.match_seq_num = whole(st, "match_seq_num", 0);
    }
    if (st.contains("fencing_token") && st.at("fencing_token").is_string()) {
      o.stamp.fencing_token = st.at("fencing_token").get<std::string>();
    }
  } else if (kind == "done") {
    o.kind = Observation::Kind::done;
    o.first_ticket = whole(j, "first", 0);
    o.last_ticket = whole(j, "last", o.first_ticket);
    if (o.first_ticket > o.last_ticket) {
      throw std::invalid_argument("done: \"first\" " + std::to_string(o.first_ticket) + " is after \"last\" " +
                                  std::to_string(o.last_ticket));
    }
    o.ok = j.value("ok", false);
    if (o.ok) {
      o.ack = ack_from(j.value("ack", json::object()));
    } else {
      o.error = error_from(j.value("error", json::object()));
    }
  } else if (kind == "barrier") {
    o.kind = Observation::Kind::barrier;
    o.barrier = whole(j, "barrier", 0);
    o.ok = j.value("ok", false);
    if (!o.ok) o.error = error_from(j.value("error", json::object()));
  } else if (kind == "closed") {
    o.kind = Observation::Kind::closed;
    o.ok = j.value("ok", false);
    if (!o.ok) o.error = error_from(j.value("error", json::object()));
  } else if (kind == "capacity") {
    o.kind = Observation::Kind::capacity;
  } else {  // a typo must not read as a capacity signal
    throw std::invalid_argument("unknown observation kind '" + kind + "'");
  }
  return o;
}

SyncResult result_from(const json& r) {
  SyncResult out;
  if (r.is_null()) return out;
  if (!r.is_object()) throw std::invalid_argument("\"result\" is neither null nor an object");
  if (r.contains("ticket")) {
    out.kind = SyncResult::Kind::ticket;
    out.value = whole(r, "ticket", 0);
  } else if (r.contains("barrier")) {
    out.kind = SyncResult::Kind::barrier;
    out.value = whole(r, "barrier", 0);
  } else if (r.contains("rejected")) {
    out.kind = SyncResult::Kind::rejected;
    const std::string reason = r.at("rejected").get<std::string>();
    bool known = false;
    for (int i = 0; i <= static_cast<int>(RejectReason::sequence_exhausted); ++i) {
      const auto rr = static_cast<RejectReason>(i);
      if (to_string(rr) == reason) out.reason = rr, known = true;
    }
    if (!known) {  // read as some other reason, it would be judged as the SDK's behaviour
      throw std::invalid_argument("\"rejected\": unknown reason \"" + reason + "\"");
    }
    if (r.contains("error")) out.error = error_from(r.at("error"));
  } else if (r.contains("closed")) {
    out.kind = SyncResult::Kind::closed_result;
    out.ok = r.at("closed") == "ok";
    if (!out.ok) {
      Error e;
      const std::string code = r.at("closed").get<std::string>();
      const auto known = code_from(code);
      if (!known) throw std::invalid_argument("\"closed\": unknown error code \"" + code + "\"");
      e.code = *known;
      out.error = e;
    }
  }
  return out;
}

json observed_of(const json& reply) {
  if (!reply.contains("observed")) return json::array();
  if (!reply.at("observed").is_array()) throw std::invalid_argument("\"observed\" is not an array");
  return reply.at("observed");
}

}  // namespace detail

namespace {

using detail::observation_from;
using detail::result_from;

/// One driver process shared by the drivers a factory makes (one producer at a time).
struct Shared {
  ExternalTarget target;
  std::unique_ptr<detail::DriverProcess> process;
  bool in_use = false;
  TargetInfo info;
  std::string hello_error;
};

class ExternalDriver final : public Driver {
 public:
  ExternalDriver(std::shared_ptr<Shared> shared, detail::DriverProcess* process,
                 std::unique_ptr<detail::DriverProcess> own, TraceConfig config, Capabilities caps)
      : shared_{std::move(shared)}, process_{process}, own_{std::move(own)}, server_{config}, caps_{caps} {
    trace_.config = std::move(config);
  }
  ~ExternalDriver() override {
    if (!own_) shared_->in_use = false;
  }

  bool run(const Command& c) override {
    unsupported_.clear();
    if (!target_failure_.empty()) return false;  // dead for good: nothing more is asked
    json request;
    Input input;
    input.at = now_;
    std::optional<std::pair<detail::PendingSend, Response>> answered;
    std::vector<std::pair<detail::PendingSend, Response>> session_rest;  ///< failed with `answered` (S2)
    switch (c.kind) {
      case Command::Kind::submit:
        request = {{"op", "submit"}, {"record_b64", base64::encode(c.record)}};
        input.kind = Input::Kind::submit;
        input.record = c.record;
        break;
      case Command::Kind::flush:
        request = {{"op", "flush"}};
        input.kind = Input::Kind::flush;
        break;
      case Command::Kind::close:
        request = {{"op", "close"}};
        input.kind = Input::Kind::close;
        break;
      case Command::Kind::abort:
        request = {{"op", "abort"}};
        input.kind = Input::Kind::abort;
        break;
      case Command::Kind::advance:
        request = {{"op", "advance"}, {"ms", std::chrono::duration<double, std::milli>(c.advance_ns).count()}};
        input.kind = Input::Kind::advance;
        input.at = saturating_add(now_, c.advance_ns);
        break;
      case Command::Kind::restart_server: {
        // Every unanswered send fails in the same instant: the first as the respond, the
        // others in its `with` list (as a dead S2 session's, docs/conformance.md).
        auto failed = server_.restart(c.server_state_kept);
        if (failed.empty()) return true;  // nothing in flight: a change of server state only
        answered = failed.front();
        session_rest.assign(failed.begin() + 1, failed.end());
        request = respond_request(*answered, session_rest, input);
        break;
      }
      case Command::Kind::close_stream:
        unsupported_ = "close_stream: the driver protocol has no stream close yet (C4 runs on the core target)";
        return false;
      case Command::Kind::invalid_ack:
        if (c.invalid == Command::Invalid::unknown_batch) {
          unsupported_ =
              "invalid_ack(unknown_batch): an SDK transport call cannot be answered for a batch it never sent";
          return false;
        }
        [[fallthrough]];
      case Command::Kind::ack:
      case Command::Kind::duplicate:
      case Command::Kind::fail: {
        answered = server_.answer(c);
        if (!answered) return false;
        // S2: the failure kills the append session; its other in-flight appends fail in
        // the same instant, before the SDK can react to the first (docs/conformance.md).
        session_rest = server_.fail_rest_of_session(c, answered->first);
        request = respond_request(*answered, session_rest, input);
        break;
      }
    }
    const json reply = process_->request(request);
    if (!reply.value("ok", false)) {
      // Every producer takes a success and lets time pass: "unsupported" there would make
      // each vector n/a and each generated run vacuous, a silent pass.
      const bool essential = c.kind == Command::Kind::ack || c.kind == Command::Kind::advance;
      if (reply.contains("unsupported") && !essential) {
        unsupported_ = reply.at("unsupported").dump();
      } else if (reply.contains("unsupported")) {
        target_failure_ = std::string(kTargetFailedPrefix) + "the driver answered " + describe(c) +
                          " with unsupported (" + reply.at("unsupported").dump() +
                          "): every producer must take a success and let time pass";
      } else {  // an error is the driver's failure, not something the SDK cannot express
        target_failure_ = process_->failure_at(describe(c), reply);
      }
      for (auto it = session_rest.rbegin(); it != session_rest.rend(); ++it) server_.unanswer(it->first);
      if (answered) server_.unanswer(answered->first);
      return false;
    }
    // The reply is read whole before anything is recorded: one that does not follow the
    // driver protocol (a wrong type, an unknown observation) is the driver's failure, not
    // the vector's, and nothing of it reaches the trace.
    SyncResult parsed_result;
    std::vector<Observation> parsed_observed;
    try {
      const json observed = detail::observed_of(reply);
      parsed_result = result_from(reply.value("result", json()));
      for (const auto& o : observed) parsed_observed.push_back(observation_from(o));
    } catch (const std::exception& e) {
      target_failure_ = std::string(kTargetFailedPrefix) + "the driver's reply to " + describe(c) +
                        " does not follow the driver protocol: " + e.what() + "; reply: " + reply.dump().substr(0, 300);
      for (auto it = session_rest.rbegin(); it != session_rest.rend(); ++it) server_.unanswer(it->first);
      if (answered) server_.unanswer(answered->first);
      return false;
    }
    if (c.kind == Command::Kind::advance) now_ = input.at;
    // The answers delivered together are one step each, in send order; what the SDK did
    // in reaction is observed after the last of them.
    for (const auto& [other, other_response] : session_rest) {
      Step answered_step;
      answered_step.input = input;
      trace_.steps.push_back(std::move(answered_step));
      input.send_index = other.index;
      input.response = other_response;
    }
    Step step;
    step.input = std::move(input);
    step.result = std::move(parsed_result);
    // The first close that completes is an observation (as prodsm's core reports it),
    // whether the SDK settled it at the call or later; later closes keep their result.
    // Every `closed` the driver reports is recorded: a second one is a second Closed,
    // which C1 forbids (a later close's outcome is its result, not an observation).
    bool closed_now = false;
    for (auto& obs : parsed_observed) {
      if (obs.kind == Observation::Kind::send) server_.sent(obs);
      if (obs.kind == Observation::Kind::closed && !closed_observed_) closed_observed_ = closed_now = true;
      step.observed.push_back(std::move(obs));
    }
    if (step.result.kind == SyncResult::Kind::closed_result && closed_now) step.result = SyncResult{};
    if (step.result.kind == SyncResult::Kind::closed_result && !closed_observed_) {
      Observation closed;
      closed.kind = Observation::Kind::closed;
      closed.ok = step.result.ok;
      if (step.result.error) closed.error = *step.result.error;
      step.observed.push_back(std::move(closed));
      step.result = SyncResult{};
      closed_observed_ = true;
    }
    trace_.steps.push_back(std::move(step));
    return true;
  }

  [[nodiscard]] const Trace& trace() const override { return trace_; }
  [[nodiscard]] Capabilities capabilities() const override { return caps_; }
  [[nodiscard]] std::size_t unanswered_sends() const override { return server_.unanswered(); }
  [[nodiscard]] std::string unsupported_reason() const override { return unsupported_; }
  [[nodiscard]] std::string target_failure() const override { return target_failure_; }

 private:
  using Answer = std::pair<detail::PendingSend, Response>;

  /// The `respond` request delivering `answer`, with `rest` — the other sends failed in
  /// the same instant — as its `with` list; sets `input` to the answer.
  json respond_request(const Answer& answer, const std::vector<Answer>& rest, Input& input) const {
    const auto& [sent, response] = answer;
    json request = {
        {"op", "respond"}, {"send", sent.index}, {"response", response_to(response, trace_.config.protocol)}};
    if (!rest.empty()) {
      json with = json::array();
      for (const auto& [other, other_response] : rest) {
        with.push_back({{"send", other.index}, {"response", response_to(other_response, trace_.config.protocol)}});
      }
      request["with"] = std::move(with);
    }
    input.kind = Input::Kind::respond;
    input.send_index = sent.index;
    input.response = response;
    return request;
  }

  std::shared_ptr<Shared> shared_;
  detail::DriverProcess* process_;
  std::unique_ptr<detail::DriverProcess> own_;  ///< set when the shared process was busy
  detail::SimServer server_;
  Capabilities caps_;
  Trace trace_;
  Instant now_{};
  std::string unsupported_;
  std::string target_failure_;  ///< set once the driver failed (target_failure())
  bool closed_observed_ = false;
};

}  // namespace

namespace detail {

Capabilities capabilities_from(const json& c) {
  Capabilities caps;
  if (!c.is_object()) return caps;  // hello() refuses such a reply before it gets here
  caps.per_record_completions = c.value("per_record_completions", false);
  caps.flush_barrier = c.value("flush_barrier", false);
  caps.abort = c.value("abort", false);
  caps.synchronous_rejection = c.value("synchronous_rejection", false);
  caps.virtual_time = c.value("virtual_time", false);
  caps.classifies_certainty = c.value("classifies_certainty", false);
  caps.stream_close = false;  // the driver protocol has no stream close yet (C4)
  // R1's announcement: drivers that say nothing announce capacity (the protocol's default).
  caps.capacity_signal = c.value("capacity_signal", true);
  return caps;
}

}  // namespace detail

namespace {

using detail::capabilities_from;

/// Why the hello reply `h` does not follow the driver protocol's types (docs/conformance.md,
/// "hello"), or nullopt: `driver`, `sdk` strings; `capabilities` an object of booleans;
/// `protocols` an array; `notes` an object. (Read as they were, a wrong type threw out
/// of the harness: `"capabilities": []` ended it with SIGABRT.)
std::optional<std::string> hello_type_error(const json& h) {
  for (const char* key : {"driver", "sdk"}) {
    if (h.contains(key) && !h.at(key).is_string()) return "\"" + std::string(key) + "\" must be a string";
  }
  if (h.contains("capabilities")) {
    const json& c = h.at("capabilities");
    if (!c.is_object()) return std::string{"\"capabilities\" must be an object of booleans"};
    for (const auto& [k, v] : c.items()) {
      if (!v.is_boolean()) return "\"capabilities\"." + k + " must be true or false";
    }
  }
  if (h.contains("protocols") && !h.at("protocols").is_array()) return std::string{"\"protocols\" must be an array"};
  if (h.contains("notes") && !h.at("notes").is_object()) return std::string{"\"notes\" must be an object"};
  return std::nullopt;
}

bool hello(Shared& s, detail::DriverProcess& process) {
  const json h = process.request({{"op", "hello"}});
  if (!h.is_object() || !h.contains("ok") || h.at("ok") != true) {
    s.hello_error = "driver " + s.target.name + " did not answer hello: " + h.dump();
    return false;
  }
  if (auto why = hello_type_error(h)) {
    s.hello_error =
        "driver " + s.target.name + "'s hello does not follow the driver protocol: " + *why + " (got " + h.dump() + ")";
    return false;
  }
  s.info.driver = h.value("driver", s.target.name);
  s.info.sdk = h.value("sdk", "");
  s.info.capabilities = capabilities_from(h.value("capabilities", json::object()));
  // The protocols the SDK speaks: without one, nothing could be offered to it and every
  // vector would be n/a (a driver answering `{"ok": true}` to everything was "conformant").
  const json protocols = h.contains("protocols") && h.at("protocols").is_array() ? h.at("protocols") : json::array();
  for (const auto& p : protocols) {
    if (p != "s2" && p != "durable_streams") {
      s.hello_error = "driver " + s.target.name + "'s hello names an unknown protocol " + p.dump() +
                      " (\"protocols\": \"s2\", \"durable_streams\")";
      return false;
    }
    s.info.protocols.push_back(p == "s2" ? Protocol::s2 : Protocol::durable_streams);
  }
  if (s.info.protocols.empty()) {
    s.hello_error = "driver " + s.target.name +
                    "'s hello names no protocol it speaks (\"protocols\": [\"s2\" and/or \"durable_streams\"])";
    return false;
  }
  const json notes = h.contains("notes") && h.at("notes").is_object() ? h.at("notes") : json::object();
  for (const auto& [k, v] : notes.items()) s.info.notes[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return true;
}

}  // namespace

DriverFactory external_driver_factory(const ExternalTarget& target, TargetInfo* info, std::string* error) {
  auto shared = std::make_shared<Shared>();
  shared->target = target;
  shared->process =
      std::make_unique<detail::DriverProcess>(target.argv, target.reply_timeout_ns, target.show_driver_log);
  if (!shared->process->alive() || !hello(*shared, *shared->process)) {
    if (error) *error = shared->hello_error.empty() ? shared->process->error() : shared->hello_error;
    return nullptr;
  }
  if (info) *info = shared->info;
  return [shared](Protocol protocol, const json& config, std::string* err) -> std::unique_ptr<Driver> {
    const auto& protocols = shared->info.protocols;
    if (std::find(protocols.begin(), protocols.end(), protocol) == protocols.end()) {
      if (err)
        *err = std::string(kUnsupportedPrefix) + "protocol " + (protocol == Protocol::s2 ? "s2" : "durable_streams") +
               ": the SDK does not speak it";
      return nullptr;
    }
    auto core = core_config_from_json(protocol, config, err);  // the harness's reading of the config
    detail::DriverProcess* process = shared->process.get();
    std::unique_ptr<detail::DriverProcess> own;
    if (shared->in_use || !process->alive()) {  // a second producer at once: a second process
      own = std::make_unique<detail::DriverProcess>(shared->target.argv, shared->target.reply_timeout_ns,
                                                    shared->target.show_driver_log);
      Shared scratch;
      scratch.target = shared->target;
      if (!own->alive() || !hello(scratch, *own)) {
        if (err) *err = std::string(kTargetFailedPrefix) + (own->alive() ? scratch.hello_error : own->error());
        return nullptr;
      }
      process = own.get();
    }
    const json reply = process->request(
        {{"op", "start"}, {"protocol", protocol == Protocol::s2 ? "s2" : "durable_streams"}, {"config", config}});
    if (!reply.value("ok", false)) {
      if (err) {
        if (!process->alive()) {  // died, hung or answered garbage: not a refusal of the config
          *err = std::string(kTargetFailedPrefix) + "start: " + process->error();
        } else if (reply.contains("unsupported")) {
          if (reply.at("unsupported").is_string()) {
            *err = std::string(kUnsupportedPrefix) + reply.at("unsupported").get<std::string>();
          } else {  // the driver's fault, not the vector's (it would have marked every vector malformed)
            *err =
                std::string(kTargetFailedPrefix) + "start: \"unsupported\" must be a string (got " + reply.dump() + ")";
          }
        } else {
          const json e = reply.contains("error") ? reply.at("error") : json::object();
          const auto text = [&](const char* key) { return e.contains(key) && e.at(key).is_string(); };
          if (!e.is_object() || (e.contains("field") && !text("field")) ||
              (e.contains("message") && !text("message"))) {
            *err = std::string(kTargetFailedPrefix) +
                   "start: \"error\" must be an object whose field and message "
                   "are strings (got " +
                   reply.dump() + ")";
          } else {
            *err = (text("field") ? e.at("field").get<std::string>() : std::string{}) + ": " +
                   (text("message") ? e.at("message").get<std::string>() : e.dump());
            if (text("key")) *err += " [key " + e.at("key").get<std::string>() + "]";
          }
        }
      }
      return nullptr;
    }
    if (!core) {  // the SDK accepted a config prodsm's harness cannot read: keep going on defaults
      core = core_config_from_json(protocol, json::object(), err);
    }
    if (!own) shared->in_use = true;
    return std::make_unique<ExternalDriver>(shared, process, std::move(own), trace_config(*core),
                                            shared->info.capabilities);
  };
}

std::optional<ExternalTarget> builtin_target(const std::string& name, const std::string& source_dir) {
  ExternalTarget t;
  t.name = name;
  if (name == "librdkafka") {  // a C++ driver built with the project (conformance/drivers/librdkafka)
    t.argv = {PRODSM_LIBRDKAFKA_DRIVER};
    return t;
  }
  if (name != "s2-ts" && name != "ds-ts") return std::nullopt;
  t.argv = {"node", (std::filesystem::path(source_dir) / "conformance" / "drivers" / name / "driver.mjs").string()};
  return t;
}

}  // namespace prodsm::conformance
