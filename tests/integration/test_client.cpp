// SPDX-License-Identifier: Apache-2.0
#include "test_client.hpp"

#include "reference_server.hpp"

#include <gtest/gtest.h>
#include <asio/use_future.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <mutex>
#include <set>

namespace prodsm::test {

namespace {

/// The paths this process put a fault (or a fault mix) on, to clear only those.
struct FaultPaths {
  std::mutex mu;
  std::set<std::string> injected;
  std::set<std::string> mixed;
};

FaultPaths& fault_paths() {
  static FaultPaths paths;
  return paths;
}

/// `json_body`'s "path" (a fault's or a mix's), recorded in `into`.
void remember_path(std::set<std::string>& into, const std::string& json_body) {
  const auto body = nlohmann::json::parse(json_body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("path") && body["path"].is_string())
      << "a fault needs a \"path\": " << json_body;
  std::lock_guard lock(fault_paths().mu);
  into.insert(body["path"].get<std::string>());
}

std::vector<std::string> take(std::set<std::string>& from) {
  std::lock_guard lock(fault_paths().mu);
  std::vector<std::string> out(from.begin(), from.end());
  from.clear();
  return out;
}

/// `s` percent-encoded for a query value (unreserved characters and '/' stay).
std::string query_value(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace

TestClient::TestClient() : guard_{::asio::make_work_guard(io_)}, thread_{[this] { io_.run(); }} {}

TestClient::~TestClient() {
  guard_.reset();
  io_.stop();
  thread_.join();
}

std::shared_ptr<asio::Session> TestClient::session_for(const ds::StreamUrl& url) {
  auto s = asio::Session::create(io_.get_executor(), url);
  EXPECT_TRUE(s.has_value());
  return *s;
}

void TestClient::create(const std::string& url, const std::string& content_type) {
  auto u = ds::StreamUrl::parse(url).value();
  auto session = session_for(u);
  auto r = asio::async_create_stream(session, u, content_type, {}, {}, ::asio::use_future).get();
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  session->close();
}

std::string TestClient::read_all(const std::string& url, bool json) {
  auto u = ds::StreamUrl::parse(url).value();
  auto session = session_for(u);
  auto r = asio::async_read_stream_all(session, u, json, 1ULL << 30, {}, ::asio::use_future).get();
  session->close();
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  return r ? r->body : std::string{};
}

asio::CloseStreamResult TestClient::close_stream(const std::string& url, const std::string& content_type) {
  auto u = ds::StreamUrl::parse(url).value();
  auto session = session_for(u);
  auto r = asio::async_close_stream(session, u, content_type, {}, ::asio::use_future).get();
  session->close();
  return r;
}

ds::Response TestClient::post(const std::string& url, const std::string& content_type, const std::string& body,
                              const ds::AppendOptions& append) {
  auto u = ds::StreamUrl::parse(url).value();
  auto session = session_for(u);
  std::string request = ds::encode_append(u, content_type, body.size(), append, {}) + body;
  auto r = session->async_exchange(std::move(request), false, ::asio::use_future).get();
  session->close();
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  return r ? *r : ds::Response{};
}

void TestClient::inject_fault(const std::string& base_url, const std::string& json_body) {
  remember_path(fault_paths().injected, json_body);
  const ds::Response r = post(base_url + "/_test/inject-error", "application/json", json_body, {});
  ASSERT_TRUE(r.status == 200 || r.status == 204) << r.status << " " << r.body;
}

void TestClient::set_fault_mix(const std::string& base_url, const std::string& json_body) {
  remember_path(fault_paths().mixed, json_body);
  const ds::Response r = post(base_url + "/_test/fault-mix", "application/json", json_body, {});
  ASSERT_EQ(r.status, 200) << r.body;
}

std::string TestClient::fault_mix_counts(const std::string& base_url) {
  auto u = ds::StreamUrl::parse(base_url + "/_test/fault-mix").value();
  auto session = session_for(u);
  auto r = session->async_exchange(ds::encode_read(u, "-1", {}), false, ::asio::use_future).get();
  session->close();
  EXPECT_TRUE(r.has_value());
  return r ? r->body : std::string{};
}

void TestClient::clear_fault_mix(const std::string& base_url) {
  delete_per_path(base_url + "/_test/fault-mix", take(fault_paths().mixed));
}

void TestClient::clear_faults(const std::string& base_url) {
  delete_per_path(base_url + "/_test/inject-error", take(fault_paths().injected));
}

void TestClient::delete_per_path(const std::string& control_url, const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    auto u = ds::StreamUrl::parse(control_url).value();  // a stream URL has no query: added below
    std::string request = ds::encode_delete(u, {});
    const auto target_end = request.find(" HTTP/1.1\r\n");
    ASSERT_NE(target_end, std::string::npos) << request;
    request.insert(target_end, "?path=" + query_value(path));
    auto session = session_for(u);
    auto r = session->async_exchange(std::move(request), false, ::asio::use_future).get();
    session->close();
    ASSERT_TRUE(r.has_value()) << r.error().describe();
    ASSERT_EQ(r->status, 200) << control_url << "?path=" << path << ": " << r->body;
  }
}

std::string new_stream(TestClient& client, const std::string& prefix, const std::string& content_type) {
  auto& server = ReferenceServer::shared();
  EXPECT_FALSE(server.url().empty()) << server.error();
  std::string url = server.stream_url(prefix);
  client.create(url, content_type);
  return url;
}

}  // namespace prodsm::test
