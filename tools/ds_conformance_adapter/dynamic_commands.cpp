// SPDX-License-Identifier: Apache-2.0
// set-dynamic-header, set-dynamic-param, clear-dynamic (protocol.ts): values made per
// request by the session's header provider (DynamicFields), reported per command.
#include "adapter_impl.hpp"

namespace prodsm::tools::dsconf {
namespace {

DynamicFields::Kind value_type(const Json& command, bool token_allowed) {
  const std::string type = required_string(command, "valueType");
  if (type == "counter") return DynamicFields::Kind::counter;
  if (type == "timestamp") return DynamicFields::Kind::timestamp;
  if (type == "token" && token_allowed) return DynamicFields::Kind::token;
  throw ArgumentError("valueType: must be counter, timestamp" + std::string(token_allowed ? " or token" : "") +
                      " (got '" + type + "')");
}

}  // namespace

Json Adapter::Impl::set_dynamic_header(const Json& command) {
  const std::string name = required_string(command, "name");
  const DynamicFields::Kind kind = value_type(command, true);
  std::string token = optional_string(command, "initialValue").value_or("");
  if (auto why = ds::check_extra_header(ds::Header{name, kind == DynamicFields::Kind::token ? token : "1"})) {
    throw ArgumentError("name: " + *why);
  }
  dynamic.set_header(name, kind, std::move(token));
  return success("set-dynamic-header");
}

Json Adapter::Impl::set_dynamic_param(const Json& command) {
  const std::string name = required_string(command, "name");
  if (name.empty()) throw ArgumentError("name: must not be empty");
  dynamic.set_param(name, value_type(command, false));
  return success("set-dynamic-param");
}

Json Adapter::Impl::clear_dynamic(const Json&) {
  dynamic.clear();
  return success("clear-dynamic");
}

void Adapter::Impl::report_dynamic(Json& result) const {
  if (!result.is_object() || result.value("success", false) != true) return;
  auto to_json = [](const std::map<std::string, std::string>& sent) {
    Json j = Json::object();
    for (const auto& [name, value] : sent) j[name] = value;
    return j;
  };
  if (auto sent = dynamic.headers_sent(); !sent.empty()) result["headersSent"] = to_json(sent);
  if (auto sent = dynamic.params_sent(); !sent.empty()) result["paramsSent"] = to_json(sent);
}

}  // namespace prodsm::tools::dsconf
