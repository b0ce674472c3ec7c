// SPDX-License-Identifier: Apache-2.0
// Vector JSON <-> harness values: a vector's config object as a core configuration, and
// a step object as a harness Command (docs/conformance.md, "Adding a vector").
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {

using nlohmann::json;

namespace {
std::optional<ErrorCode> error_code_from(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(kLastErrorCode); ++i) {
    const auto code = static_cast<ErrorCode>(i);
    if (to_string(code) == name) return code;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<Command::Invalid, const char*>, 4> kInvalidKinds{{
    {Command::Invalid::wrong_count, "wrong_count"},
    {Command::Invalid::unknown_batch, "unknown_batch"},
    {Command::Invalid::backwards, "backwards"},
    {Command::Invalid::overlapping, "overlapping"},
}};

std::optional<Command::Invalid> invalid_kind_from(const std::string& name) {
  for (const auto& [kind, text] : kInvalidKinds) {
    if (name == text) return kind;
  }
  return std::nullopt;
}

const char* invalid_kind_name(Command::Invalid kind) {
  for (const auto& [k, text] : kInvalidKinds) {
    if (k == kind) return text;
  }
  return "wrong_count";
}

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

template <class T>
bool read_number(const json& obj, const char* key, T& out, std::string* error) {
  if (!obj.contains(key)) return true;
  const json& v = obj.at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    return fail(error, std::string("config.") + key + ": must be a non-negative integer");
  }
  out = v.get<T>();
  return true;
}

/// Largest magnitude of a number of milliseconds in a vector (about 31 years): converted
/// to ns it fits a Duration, so the conversion is defined (R3; no UB in duration_cast).
constexpr double kMaxVectorMs = 1e12;

/// `ms` as a Duration when it is finite and |ms| <= kMaxVectorMs (negative only when
/// `allow_negative`: config values go on to the core's own validation, B2/B3).
std::optional<Duration> vector_ms(const json& v, bool allow_negative) {
  if (!v.is_number()) return std::nullopt;
  const double ms = v.get<double>();
  if (!std::isfinite(ms) || ms > kMaxVectorMs || ms < -kMaxVectorMs || (!allow_negative && ms < 0)) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

bool read_ms(const json& obj, const char* key, Duration& out, std::string* error) {
  if (!obj.contains(key)) return true;
  const auto d = vector_ms(obj.at(key), true);
  if (!d) {
    return fail(error, std::string("config.") + key + ": must be a finite number of milliseconds within +-1e12");
  }
  out = *d;
  return true;
}

double to_ms(Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

template <class Config>
bool apply_common(const json& j, Config& c, std::string* error) {
  if (j.contains("linger_ms")) {
    const json& l = j.at("linger_ms");
    if (l.is_string() && l.get<std::string>() == "disabled") {
      c.linger = Linger::disabled();
    } else if (const auto d = vector_ms(l, true)) {
      c.linger = Linger::after(*d);
    } else {
      return fail(error, "config.linger_ms: must be a number of milliseconds or \"disabled\"");
    }
  }
  Duration backoff_initial = c.retry.backoff_initial_ns;
  Duration backoff_max = c.retry.backoff_max_ns;
  if (!read_number(j, "max_batch_records", c.max_batch_records, error) ||
      !read_number(j, "max_batch_bytes", c.max_batch_bytes, error) ||
      !read_number(j, "max_unacked_bytes", c.max_unacked_bytes, error) ||
      !read_number(j, "max_unacked_batches", c.max_unacked_batches, error) ||
      !read_number(j, "max_in_flight", c.max_in_flight, error) ||
      !read_number(j, "max_pending_barriers", c.max_pending_barriers, error) ||
      !read_ms(j, "delivery_timeout_ms", c.delivery_timeout_ns, error) ||
      !read_number(j, "max_attempts", c.retry.max_attempts, error) ||
      !read_ms(j, "backoff_initial_ms", backoff_initial, error) || !read_ms(j, "backoff_max_ms", backoff_max, error) ||
      !read_number(j, "jitter_seed", c.retry.jitter_seed, error)) {
    return false;
  }
  c.retry.backoff_initial_ns = backoff_initial;
  c.retry.backoff_max_ns = backoff_max;
  if (j.contains("retry_mode")) {
    const std::string mode = j.at("retry_mode").is_string() ? j.at("retry_mode").get<std::string>() : "";
    if (mode == "all") {
      c.retry.mode = RetryMode::all;
    } else if (mode == "no_side_effects") {
      c.retry.mode = RetryMode::no_side_effects;
    } else {
      return fail(error, "config.retry_mode: must be \"all\" or \"no_side_effects\"");
    }
  }
  return true;
}

template <class Config>
void common_to_json(const Config& c, json& j) {
  if (c.linger.is_disabled()) {
    j["linger_ms"] = "disabled";
  } else {
    j["linger_ms"] = to_ms(c.linger.duration_ns());
  }
  j["max_batch_records"] = c.max_batch_records;
  j["max_batch_bytes"] = c.max_batch_bytes;
  j["max_unacked_bytes"] = c.max_unacked_bytes;
  j["max_unacked_batches"] = c.max_unacked_batches;
  j["max_in_flight"] = c.max_in_flight;
  j["max_pending_barriers"] = c.max_pending_barriers;
  j["delivery_timeout_ms"] = to_ms(c.delivery_timeout_ns);
  j["max_attempts"] = c.retry.max_attempts;
  j["backoff_initial_ms"] = to_ms(c.retry.backoff_initial_ns);
  j["backoff_max_ms"] = to_ms(c.retry.backoff_max_ns);
  j["retry_mode"] = c.retry.mode == RetryMode::all ? "all" : "no_side_effects";
  j["jitter_seed"] = c.retry.jitter_seed;
}
}  // namespace

std::optional<CoreConfig> core_config_from_json(Protocol protocol, const json& j, std::string* error) {
  static const std::set<std::string> known = {"linger_ms",
                                              "max_batch_records",
                                              "max_batch_bytes",
                                              "max_unacked_bytes",
                                              "max_unacked_batches",
                                              "max_in_flight",
                                              "max_pending_barriers",
                                              "delivery_timeout_ms",
                                              "max_attempts",
                                              "backoff_initial_ms",
                                              "backoff_max_ms",
                                              "retry_mode",
                                              "jitter_seed",
                                              "json",
                                              "idempotent",
                                              "match_seq_num",
                                              "fencing_token",
                                              "stream_operations"};
  if (j.is_null()) return core_config_from_json(protocol, json::object(), error);
  if (!j.is_object()) {
    fail(error, "config: must be an object");
    return std::nullopt;
  }
  for (const auto& item : j.items()) {
    if (known.count(item.key()) == 0) {
      fail(error, "config." + item.key() + ": unknown key");
      return std::nullopt;
    }
  }
  CoreConfig c;
  c.protocol = protocol;
  if (protocol == Protocol::durable_streams) {
    if (!apply_common(j, c.durable_streams, error)) return std::nullopt;
    if (j.contains("json")) {
      if (!j.at("json").is_boolean()) {
        fail(error, "config.json: must be true or false");
        return std::nullopt;
      }
      c.durable_streams.protocol.body_format =
          j.at("json").get<bool>() ? DurableStreamsPolicy::BodyFormat::json : DurableStreamsPolicy::BodyFormat::bytes;
    }
    if (j.contains("idempotent") && !j.at("idempotent").is_null()) {
      const json& id = j.at("idempotent");
      if (!id.is_object() || !id.contains("producer_id") || !id.at("producer_id").is_string()) {
        fail(error, "config.idempotent: must be {\"producer_id\": string, \"epoch\"?, \"seq\"?, \"auto_claim\"?}");
        return std::nullopt;
      }
      DurableStreamsPolicy::IdempotentOptions o;
      o.producer_id = id.at("producer_id").get<std::string>();
      if (id.contains("epoch")) o.epoch = id.at("epoch").get<std::uint64_t>();
      if (id.contains("seq")) o.seq = id.at("seq").get<std::uint64_t>();
      if (id.contains("auto_claim")) o.auto_claim = id.at("auto_claim").get<bool>();
      c.durable_streams.protocol.idempotent = o;
    }
    if (j.contains("match_seq_num") || j.contains("fencing_token")) {
      fail(error, "config.match_seq_num: S2 only");
      return std::nullopt;
    }
    if (j.contains("stream_operations")) {
      if (!j.at("stream_operations").is_boolean()) {
        fail(error, "config.stream_operations: must be true or false");
        return std::nullopt;
      }
      c.stream_operations = j.at("stream_operations").get<bool>();
    }
  } else {
    if (!apply_common(j, c.s2, error)) return std::nullopt;
    if (j.contains("match_seq_num") && !j.at("match_seq_num").is_null()) {
      c.s2.protocol.match_seq_num = j.at("match_seq_num").get<std::uint64_t>();
    }
    if (j.contains("fencing_token") && !j.at("fencing_token").is_null()) {
      c.s2.protocol.fencing_token = j.at("fencing_token").get<std::string>();
    }
    for (const char* key : {"json", "idempotent", "stream_operations"}) {  // named as given
      if (!j.contains(key)) continue;
      fail(error, std::string("config.") + key + ": Durable Streams only");
      return std::nullopt;
    }
  }
  return c;
}

json core_config_to_json(const CoreConfig& c) {
  json j = json::object();
  if (c.protocol == Protocol::durable_streams) {
    common_to_json(c.durable_streams, j);
    j["json"] = c.durable_streams.protocol.body_format == DurableStreamsPolicy::BodyFormat::json;
    if (const auto& id = c.durable_streams.protocol.idempotent) {
      j["idempotent"] = {{"producer_id", id->producer_id}, {"epoch", id->epoch}, {"auto_claim", id->auto_claim}};
      if (id->seq != 0) j["idempotent"]["seq"] = id->seq;
    }
    if (c.stream_operations) j["stream_operations"] = true;
  } else {
    common_to_json(c.s2, j);
    if (c.s2.protocol.match_seq_num) j["match_seq_num"] = *c.s2.protocol.match_seq_num;
    if (c.s2.protocol.fencing_token) j["fencing_token"] = *c.s2.protocol.fencing_token;
  }
  return j;
}

std::optional<Command> command_from_json(const json& step, std::string* error) {
  if (!step.is_object() || !step.contains("do") || !step.at("do").is_string()) {
    fail(error, "step: needs \"do\"");
    return std::nullopt;
  }
  const std::string what = step.at("do").get<std::string>();
  Command c;
  auto which = [&]() -> bool {
    if (!step.contains("which")) return true;
    const std::string w = step.at("which").is_string() ? step.at("which").get<std::string>() : "";
    if (w == "oldest") {
      c.which = Command::Which::oldest;
    } else if (w == "newest") {
      c.which = Command::Which::newest;
    } else {
      return fail(error, "step.which: must be \"oldest\" or \"newest\"");
    }
    return true;
  };
  if (what == "submit") {
    c.kind = Command::Kind::submit;
    if (!step.contains("record") || !step.at("record").is_string()) {
      fail(error, "step.record: submit needs a string record");
      return std::nullopt;
    }
    c.record = step.at("record").get<std::string>();
  } else if (what == "flush") {
    c.kind = Command::Kind::flush;
  } else if (what == "close") {
    c.kind = Command::Kind::close;
  } else if (what == "abort") {
    c.kind = Command::Kind::abort;
  } else if (what == "advance") {
    c.kind = Command::Kind::advance;
    const auto d = step.contains("ms") ? vector_ms(step.at("ms"), false) : std::nullopt;
    if (!d) {
      fail(error, "step.ms: advance needs a number of milliseconds in 0..1e12");
      return std::nullopt;
    }
    c.advance_ns = *d;
  } else if (what == "ack" || what == "duplicate") {
    c.kind = what == "ack" ? Command::Kind::ack : Command::Kind::duplicate;
    if (!which()) return std::nullopt;
  } else if (what == "fail") {
    c.kind = Command::Kind::fail;
    if (!which()) return std::nullopt;
    const std::string code =
        step.contains("code") && step.at("code").is_string() ? step.at("code").get<std::string>() : "";
    auto parsed = error_code_from(code);
    if (!parsed) {
      fail(error, "step.code: unknown error code '" + code + "'");
      return std::nullopt;
    }
    c.fail_code = *parsed;
    if (step.contains("retry_after_ms")) {
      const auto d = vector_ms(step.at("retry_after_ms"), false);
      if (!d) {
        fail(error, "step.retry_after_ms: must be a number of milliseconds in 0..1e12");
        return std::nullopt;
      }
      c.retry_after_ns = *d;
    }
  } else if (what == "invalid_ack") {
    c.kind = Command::Kind::invalid_ack;
    if (!which()) return std::nullopt;
    const std::string kind =
        step.contains("kind") && step.at("kind").is_string() ? step.at("kind").get<std::string>() : "wrong_count";
    const auto parsed = invalid_kind_from(kind);
    if (!parsed) {
      fail(error, "step.kind: invalid_ack kind must be wrong_count, unknown_batch, backwards or overlapping");
      return std::nullopt;
    }
    c.invalid = *parsed;
  } else if (what == "restart_server") {
    c.kind = Command::Kind::restart_server;
    const std::string state =
        step.contains("state") && step.at("state").is_string() ? step.at("state").get<std::string>() : "";
    if (state != "kept" && state != "lost") {
      fail(error, "step.state: restart_server needs \"state\": \"kept\" or \"lost\" (producer state)");
      return std::nullopt;
    }
    c.server_state_kept = state == "kept";
  } else if (what == "close_stream") {
    c.kind = Command::Kind::close_stream;
  } else {
    fail(error, "step.do: unknown command '" + what + "'");
    return std::nullopt;
  }
  return c;
}

json command_to_json(const Command& c) {
  json j;
  const char* which = c.which == Command::Which::oldest ? "oldest" : "newest";
  switch (c.kind) {
    case Command::Kind::submit: j = {{"do", "submit"}, {"record", c.record}}; break;
    case Command::Kind::flush: j = {{"do", "flush"}}; break;
    case Command::Kind::close: j = {{"do", "close"}}; break;
    case Command::Kind::abort: j = {{"do", "abort"}}; break;
    case Command::Kind::advance: j = {{"do", "advance"}, {"ms", to_ms(c.advance_ns)}}; break;
    case Command::Kind::ack: j = {{"do", "ack"}, {"which", which}}; break;
    case Command::Kind::duplicate: j = {{"do", "duplicate"}, {"which", which}}; break;
    case Command::Kind::fail:
      j = {{"do", "fail"}, {"which", which}, {"code", std::string(to_string(c.fail_code))}};
      if (c.retry_after_ns) j["retry_after_ms"] = to_ms(*c.retry_after_ns);
      break;
    case Command::Kind::invalid_ack:
      j = {{"do", "invalid_ack"}, {"which", which}, {"kind", invalid_kind_name(c.invalid)}};
      break;
    case Command::Kind::restart_server:
      j = {{"do", "restart_server"}, {"state", c.server_state_kept ? "kept" : "lost"}};
      break;
    case Command::Kind::close_stream: j = {{"do", "close_stream"}}; break;
  }
  return j;
}

std::string describe(const Command& c) {
  return command_to_json(c).dump();
}
}  // namespace prodsm::conformance
