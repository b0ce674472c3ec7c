// SPDX-License-Identifier: Apache-2.0
// Drives prodsm-ds-conformance-adapter over its stdin/stdout, against the reference
// server, through the scenarios in scenarios/*.json. Each scenario is derived from one
// or more cases of the official suite (packages/client-conformance-tests/test-cases in
// durable-streams/durable-streams) and names them in "from"; the official runner is not
// published to a registry, so these scenarios are how prodsm checks the same behaviour.
//
// ScenarioSpec file format (our own):
//   { "source": "<official test-case file(s)>",
//     "scenarios": [ { "name": "...", "from": ["<suite id>/<case id>", ...],
//                      "init": true,                 // default: send init first
//                      "adapterArgs": ["..."],       // optional
//                      "steps": [ { "send": {command} | "sendRaw": "line",
//                                   "noReply": true,  // optional: expect no result
//                                   "expect": {...} }
//                               | { "inject": {fault} }  // POST /_test/inject-error
//                               | { "clearErrors": true } ] } ] }
// ("inject" takes the reference server's fault fields: path, method, status, count,
// retryAfter, dropConnection, truncateBodyBytes, corruptBody, ...; injected faults are
// cleared when the scenario ends.)
// In "send" (and in expected strings) "${name}" is replaced: names starting with
// "stream" become a fresh stream path on first use, ${serverUrl} is the reference
// server, other names are variables stored by "$store"; {"$repeat": ["X", 10000]}
// becomes "XXX..." ("sendRaw" may be such an object too). "expect" lists fields the result
// must have, objects matched recursively as subsets, plus matchers on read results and
// errors: "$data" (the chunks' data joined, base64 chunks decoded), "$binaryData" (the
// same bytes as base64), "$dataContainsAll", "$chunkCount", "$hasOffset",
// "$messageContains", "$nonEmpty" and "$absent" (fields that must be non-empty strings,
// or missing; "$nonEmpty" also inside a nested object) and "$store"
// ({"var": "field"}). Every result is also checked against protocol.ts's shape: one
// JSON object per line, `type`/`success`, errors with `commandType`, a standard
// `errorCode` and a `message`. At the end the runner sends shutdown (unless a step did),
// and the adapter must print nothing more and exit 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "adapter_process.hpp"
#include "prodsm/base64.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

/// A guard against a hung adapter, far above any expected reply time; never a check of
/// how fast anything is.
constexpr auto kReplyGuard = 120s;

struct ScenarioSpec {
  std::string file;  // file stem
  Json spec;
  std::string id() const { return file + "/" + spec.value("name", std::string{}); }
};

/// gtest prints the parameter as its file/name.
void PrintTo(const ScenarioSpec& s, std::ostream* os) {
  *os << s.id();
}

std::vector<ScenarioSpec> load_scenarios() {
  std::vector<ScenarioSpec> out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(PRODSM_DS_SCENARIO_DIR)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    Json doc = Json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.contains("scenarios")) {
      out.push_back(ScenarioSpec{path.stem().string(), Json{{"name", "unparsable_file"}, {"broken", true}}});
      continue;
    }
    for (const auto& s : doc["scenarios"]) out.push_back(ScenarioSpec{path.stem().string(), s});
  }
  return out;
}

std::string test_name(const testing::TestParamInfo<ScenarioSpec>& info) {
  std::string name = info.param.file + "_" + info.param.spec.value("name", std::string{"unnamed"});
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

const std::set<std::string>& standard_error_codes() {
  static const std::set<std::string> codes{"NETWORK_ERROR",     "TIMEOUT",        "CONFLICT",       "NOT_FOUND",
                                           "SEQUENCE_CONFLICT", "STREAM_CLOSED",  "INVALID_OFFSET", "UNEXPECTED_STATUS",
                                           "PARSE_ERROR",       "INTERNAL_ERROR", "NOT_SUPPORTED",  "INVALID_ARGUMENT"};
  return codes;
}

class ScenarioRun {
 public:
  ScenarioRun(const ScenarioSpec& s, std::string server_url) : scenario_{s}, server_url_{std::move(server_url)} {
    vars_["serverUrl"] = server_url_;
  }

  void run() {
    const Json& spec = scenario_.spec;
    ASSERT_FALSE(spec.value("broken", false)) << "scenario file " << scenario_.file << " does not parse";
    std::vector<std::string> args;
    if (spec.contains("adapterArgs")) args = spec["adapterArgs"].get<std::vector<std::string>>();
    AdapterProcess adapter(PRODSM_DS_ADAPTER, args);
    ASSERT_TRUE(adapter.error().empty()) << adapter.error();
    adapter_ = &adapter;

    if (spec.value("init", true)) {
      Json init{{"type", "init"}, {"serverUrl", server_url_}};
      Json reply = exchange(init.dump());
      ASSERT_EQ(reply.value("success", false), true) << reply.dump();
    }
    bool shut_down = false;
    std::size_t index = 0;
    for (const Json& step : spec["steps"]) {
      SCOPED_TRACE("step " + std::to_string(index++) + ": " + step.dump().substr(0, 300));
      if (step.contains("inject")) {  // the reference server's fault injection, for the next requests
        faults_.inject_fault(server_url_, substitute(step["inject"]).dump());
        injected_ = true;
        if (HasFatalFailure()) return;
        continue;
      }
      if (step.value("clearErrors", false)) {
        faults_.clear_faults(server_url_);
        continue;
      }
      std::string line;
      std::string sent_type;
      if (step.contains("sendRaw")) {
        const Json raw = substitute(step["sendRaw"]);
        ASSERT_TRUE(raw.is_string()) << "sendRaw must give a string";
        line = raw.get<std::string>();
      } else {
        Json command = substitute(step["send"]);
        sent_type = command.value("type", std::string{});
        line = command.dump();
        if (sent_type == "shutdown") shut_down = true;
      }
      if (step.value("noReply", false)) {
        ASSERT_TRUE(adapter.send_line(line));
        continue;
      }
      Json reply = exchange(line);
      if (HasFatalFailure()) return;
      check_shape(reply, sent_type);
      if (step.contains("expect")) check_expect(reply, step["expect"]);
      if (HasFatalFailure()) return;
    }
    if (injected_) faults_.clear_faults(server_url_);  // none left for the next scenario
    if (!shut_down) {
      Json reply = exchange(R"({"type":"shutdown"})");
      if (HasFatalFailure()) return;
      EXPECT_EQ(reply, (Json{{"type", "shutdown"}, {"success", true}}));
    }
    EXPECT_EQ(adapter.finish_output(kReplyGuard), "") << "stdout must carry one result per command, nothing else";
    EXPECT_EQ(adapter.wait_exit(kReplyGuard), 0);
  }

 private:
  static bool HasFatalFailure() { return testing::Test::HasFatalFailure(); }

  Json exchange(const std::string& line) {
    EXPECT_TRUE(adapter_->send_line(line)) << "the adapter's stdin is closed";
    auto reply = adapter_->read_line(kReplyGuard);
    if (!reply) {
      ADD_FAILURE() << "no result line for: " << line.substr(0, 300);
      return Json{};
    }
    Json parsed = Json::parse(*reply, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "the result line is not JSON: " << *reply;
    EXPECT_TRUE(parsed.is_object()) << "the result is not a JSON object: " << *reply;
    if (!parsed.is_object()) {
      ADD_FAILURE() << "stopping: unusable result";
      return Json{};
    }
    return parsed;
  }

  /// protocol.ts's shape of every result.
  static void check_shape(const Json& r, const std::string& sent_type) {
    ASSERT_TRUE(r.contains("type") && r["type"].is_string()) << r.dump();
    ASSERT_TRUE(r.contains("success") && r["success"].is_boolean()) << r.dump();
    if (r["success"].get<bool>()) {
      if (!sent_type.empty()) {
        EXPECT_EQ(r["type"], sent_type) << r.dump();
      }
    } else {
      EXPECT_EQ(r["type"], "error") << r.dump();
      EXPECT_TRUE(r.contains("commandType") && r["commandType"].is_string()) << r.dump();
      EXPECT_TRUE(r.contains("message") && r["message"].is_string()) << r.dump();
      ASSERT_TRUE(r.contains("errorCode") && r["errorCode"].is_string()) << r.dump();
      EXPECT_TRUE(standard_error_codes().count(r["errorCode"].get<std::string>()))
          << "not a standard error code: " << r.dump();
      if (!sent_type.empty()) {
        EXPECT_EQ(r["commandType"], sent_type) << r.dump();
      }
      if (r.contains("status")) {
        EXPECT_TRUE(r["status"].is_number_integer()) << r.dump();
      }
    }
  }

  /// The chunks' data joined as bytes (base64 chunks decoded).
  static std::string joined_bytes(const Json& r) {
    std::string out;
    if (!r.contains("chunks")) return out;
    for (const auto& c : r["chunks"]) {
      const std::string data = c.value("data", std::string{});
      if (c.value("binary", false)) {
        auto bytes = base64::decode(data);
        EXPECT_TRUE(bytes.has_value()) << "a binary chunk is not valid base64: " << data;
        out += bytes.value_or(std::string{});
      } else {
        out += data;
      }
    }
    return out;
  }

  void check_expect(const Json& r, const Json& expect) {
    for (auto it = expect.begin(); it != expect.end(); ++it) {
      const std::string& key = it.key();
      const Json want = substitute(it.value());
      if (key == "$data") {
        EXPECT_EQ(joined_bytes(r), want.get<std::string>()) << r.dump();
      } else if (key == "$binaryData") {
        EXPECT_EQ(base64::encode(joined_bytes(r)), want.get<std::string>()) << r.dump();
      } else if (key == "$dataContainsAll") {
        const std::string data = joined_bytes(r);
        for (const auto& part : want) {
          EXPECT_NE(data.find(part.get<std::string>()), std::string::npos) << "missing " << part << " in " << data;
        }
      } else if (key == "$chunkCount") {
        EXPECT_EQ(r.contains("chunks") ? r["chunks"].size() : 0u, want.get<std::size_t>()) << r.dump();
      } else if (key == "$hasOffset") {
        const bool has = r.contains("offset") && r["offset"].is_string() && !r["offset"].get<std::string>().empty();
        EXPECT_EQ(has, want.get<bool>()) << r.dump();
      } else if (key == "$messageContains") {
        EXPECT_NE(r.value("message", std::string{}).find(want.get<std::string>()), std::string::npos) << r.dump();
      } else if (key == "$nonEmpty") {
        for (const auto& field : want) {
          const std::string name = field.get<std::string>();
          EXPECT_TRUE(r.contains(name) && r[name].is_string() && !r[name].get<std::string>().empty())
              << name << " missing or empty in " << r.dump();
        }
      } else if (key == "$absent") {
        for (const auto& field : want)
          EXPECT_FALSE(r.contains(field.get<std::string>())) << field << " in " << r.dump();
      } else if (key == "$store") {
        for (auto s = want.begin(); s != want.end(); ++s) {
          const std::string field = s.value().get<std::string>();
          ASSERT_TRUE(r.contains(field) && r[field].is_string()) << "cannot store " << field << " of " << r.dump();
          vars_[s.key()] = r[field].get<std::string>();
        }
      } else {
        ASSERT_TRUE(r.contains(key)) << "missing field " << key << " in " << r.dump();
        expect_subset(r[key], want, key, r);
      }
    }
  }

  static void expect_subset(const Json& got, const Json& want, const std::string& path, const Json& whole) {
    if (want.is_object() && got.is_object()) {
      for (auto it = want.begin(); it != want.end(); ++it) {
        if (it.key() == "$nonEmpty") {  // nested fields that must be non-empty strings
          for (const auto& field : it.value()) {
            const std::string name = field.get<std::string>();
            EXPECT_TRUE(got.contains(name) && got[name].is_string() && !got[name].get<std::string>().empty())
                << path << "." << name << " missing or empty in " << whole.dump();
          }
          continue;
        }
        ASSERT_TRUE(got.contains(it.key())) << "missing field " << path << "." << it.key() << " in " << whole.dump();
        expect_subset(got[it.key()], it.value(), path + "." + it.key(), whole);
      }
      return;
    }
    EXPECT_EQ(got, want) << "field " << path << " in " << whole.dump();
  }

  /// ${stream...} -> fresh stream paths, ${var} -> stored variables, $repeat.
  Json substitute(const Json& v) {
    if (v.is_string()) return Json(substitute_string(v.get<std::string>()));
    if (v.is_object()) {
      if (v.size() == 1 && v.contains("$repeat")) {
        const auto& spec = v["$repeat"];
        std::string out;
        for (std::size_t i = 0; i < spec[1].get<std::size_t>(); ++i) out += spec[0].get<std::string>();
        return Json(out);
      }
      Json out = Json::object();
      for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = substitute(it.value());
      return out;
    }
    if (v.is_array()) {
      Json out = Json::array();
      for (const auto& e : v) out.push_back(substitute(e));
      return out;
    }
    return v;
  }

  std::string substitute_string(const std::string& s) {
    std::string out;
    std::size_t pos = 0;
    while (true) {
      const auto open = s.find("${", pos);
      if (open == std::string::npos) break;
      const auto close = s.find('}', open);
      if (close == std::string::npos) break;
      out += s.substr(pos, open - pos);
      const std::string name = s.substr(open + 2, close - open - 2);
      auto it = vars_.find(name);
      if (it == vars_.end() && name.rfind("stream", 0) == 0) {
        static unsigned counter = 0;
        std::string path = "/ds-conformance/" + scenario_.file + "-" + scenario_.spec.value("name", std::string{}) +
                           "-" + name + "-" + process_tag() + "-" + std::to_string(++counter);
        it = vars_.emplace(name, path).first;
      }
      if (it == vars_.end()) {
        ADD_FAILURE() << "undefined variable ${" << name << "}";
        out += s.substr(open, close - open + 1);
      } else {
        out += it->second;
      }
      pos = close + 1;
    }
    out += s.substr(pos);
    return out;
  }

  const ScenarioSpec& scenario_;
  TestClient faults_;      // injects and clears the reference server's faults
  bool injected_ = false;  // a step injected faults: cleared at the end
  std::string server_url_;
  AdapterProcess* adapter_ = nullptr;
  std::map<std::string, std::string> vars_;
};

class Scenario : public testing::TestWithParam<ScenarioSpec> {};

TEST_P(Scenario, Run) {
  const ScenarioSpec& s = GetParam();
  RecordProperty("from", s.spec.contains("from") ? s.spec["from"].dump() : "");
  auto& server = ReferenceServer::shared();
  ASSERT_FALSE(server.url().empty()) << server.error();
  ScenarioRun(s, server.url()).run();
}

INSTANTIATE_TEST_SUITE_P(DsConformance, Scenario, testing::ValuesIn(load_scenarios()), test_name);

}  // namespace
}  // namespace prodsm::test
