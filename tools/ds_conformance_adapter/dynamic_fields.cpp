// SPDX-License-Identifier: Apache-2.0
#include "dynamic_fields.hpp"

#include <chrono>

namespace prodsm::tools::dsconf {

void DynamicFields::set_header(const std::string& name, Kind kind, std::string token) {
  std::lock_guard lock(mu_);
  headers_[name] = Value{kind, 0, std::move(token)};
}

void DynamicFields::set_param(const std::string& name, Kind kind) {
  std::lock_guard lock(mu_);
  params_[name] = Value{kind, 0, {}};
}

void DynamicFields::clear() {
  std::lock_guard lock(mu_);
  headers_.clear();
  params_.clear();
}

void DynamicFields::begin_command() {
  std::lock_guard lock(mu_);
  headers_sent_.clear();
  params_sent_.clear();
}

std::map<std::string, std::string> DynamicFields::headers_sent() const {
  std::lock_guard lock(mu_);
  return headers_sent_;
}

std::map<std::string, std::string> DynamicFields::params_sent() const {
  std::lock_guard lock(mu_);
  return params_sent_;
}

std::string DynamicFields::next(Value& v) {
  switch (v.kind) {
    case Kind::counter: return std::to_string(++v.counter);
    case Kind::timestamp:
      return std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count());
    case Kind::token: return v.token;
  }
  return {};
}

tl::expected<http::RequestFields, std::string> DynamicFields::fields() {
  std::lock_guard lock(mu_);
  http::RequestFields f;
  for (auto& [name, value] : headers_) {
    std::string v = next(value);
    headers_sent_[name] = v;
    f.headers.push_back({name, std::move(v)});
  }
  for (auto& [name, value] : params_) {
    std::string v = next(value);
    params_sent_[name] = v;
    f.query_params.push_back({name, std::move(v)});
  }
  return f;
}

HeaderProvider DynamicFields::provider() {
  return [this](const http::RequestInfo&) { return fields(); };
}

}  // namespace prodsm::tools::dsconf
