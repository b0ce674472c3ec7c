// SPDX-License-Identifier: Apache-2.0
#include "test_client.hpp"

#include "reference_server.hpp"

#include <gtest/gtest.h>
#include <asio/use_future.hpp>

namespace prodsm::test {

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
  const ds::Response r = post(base_url + "/_test/inject-error", "application/json", json_body, {});
  ASSERT_TRUE(r.status == 200 || r.status == 204) << r.status << " " << r.body;
}

void TestClient::set_fault_mix(const std::string& base_url, const std::string& json_body) {
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
  auto u = ds::StreamUrl::parse(base_url + "/_test/fault-mix").value();
  auto session = session_for(u);
  auto r = session->async_exchange(ds::encode_delete(u, {}), false, ::asio::use_future).get();
  session->close();
  ASSERT_TRUE(r.has_value());
}

void TestClient::clear_faults(const std::string& base_url) {
  auto u = ds::StreamUrl::parse(base_url + "/_test/inject-error").value();
  auto session = session_for(u);
  auto r = session->async_exchange(ds::encode_delete(u, {}), false, ::asio::use_future).get();
  session->close();
  ASSERT_TRUE(r.has_value());
}

std::string new_stream(TestClient& client, const std::string& prefix, const std::string& content_type) {
  auto& server = ReferenceServer::shared();
  EXPECT_FALSE(server.url().empty()) << server.error();
  std::string url = server.stream_url(prefix);
  client.create(url, content_type);
  return url;
}

}  // namespace prodsm::test
