// SPDX-License-Identifier: Apache-2.0
#pragma once
// The S2 test server (tests/s2-server/server.mjs) for integration tests: started on a free
// 127.0.0.1 port with one basin, stopped by PID (NodeServer); plus the few control and
// read-back requests the tests make through an asio::Session with the S2 codec.

#include <asio/use_future.hpp>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "prodsm/asio/session.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "reference_server.hpp"

namespace prodsm::test {

/// One S2 test server process with basin kBasin (stream creation explicit).
class S2TestServer {
 public:
  static constexpr const char* kBasin = "test-basin";
  /// Starts it with `extra` arguments after `--basin test-basin`.
  explicit S2TestServer(std::vector<std::string> extra = {}) : node_{"../tests/s2-server/server.mjs", args(extra)} {}
  /// The endpoint URL ("http://127.0.0.1:PORT"), empty when it failed to start.
  [[nodiscard]] const std::string& url() const { return node_.url(); }
  /// Why it failed to start.
  [[nodiscard]] const std::string& error() const { return node_.error(); }
  /// The endpoint for the codec (basin in the s2-basin header).
  [[nodiscard]] s2::Endpoint endpoint() const { return s2::Endpoint::custom(url(), kBasin).value(); }
  /// A fresh stream name.
  std::string stream_name(const std::string& prefix) { return prefix + "-" + std::to_string(counter_++); }

 private:
  static std::vector<std::string> args(const std::vector<std::string>& extra) {
    std::vector<std::string> a{"--basin", kBasin};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  NodeServer node_;
  unsigned counter_ = 0;
};

/// Sends one request and waits for its outcome.
inline asio::ExchangeResult exchange(const std::shared_ptr<asio::Session>& session, http::Request request) {
  return session->async_exchange(std::move(request), ::asio::use_future).get();
}

/// Creates `stream` (201, or 409 when it exists). Error text on failure.
inline tl::expected<void, std::string> create_s2_stream(const std::shared_ptr<asio::Session>& session,
                                                        const s2::Endpoint& endpoint, const std::string& stream) {
  auto request = s2::encode_create_stream(endpoint, stream, {});
  if (!request) return tl::unexpected(request.error());
  auto response = exchange(session, std::move(*request));
  if (!response) return tl::unexpected(response.error().describe());
  auto created = s2::classify_create_stream(*response);
  if (!created) return tl::unexpected(created.error().describe());
  return {};
}

/// Every record of `stream` from seq_num 0 (unary reads of at most 1000 records).
inline tl::expected<std::vector<s2::SequencedRecord>, std::string> read_s2_stream(
    const std::shared_ptr<asio::Session>& session, const s2::Endpoint& endpoint, const std::string& stream) {
  std::vector<s2::SequencedRecord> out;
  while (true) {
    s2::ReadRange range;
    range.seq_num = out.empty() ? 0 : out.back().seq_num + 1;
    range.clamp = true;
    auto request = s2::encode_read(endpoint, stream, range, {});
    if (!request) return tl::unexpected(request.error());
    auto response = exchange(session, std::move(*request));
    if (!response) return tl::unexpected(response.error().describe());
    auto read = s2::classify_read(*response);
    if (!read) return tl::unexpected(read.error().describe());
    if (read->unwritten_tail || read->batch.records.empty()) return out;
    for (auto& r : read->batch.records) out.push_back(std::move(r));
  }
}

/// Queues scripted faults: `faults_json` is the JSON array of fault objects
/// (server.mjs header comment: POST /_test/faults).
inline tl::expected<void, std::string> inject_s2_faults(const std::shared_ptr<asio::Session>& session,
                                                        const s2::Endpoint& endpoint, const std::string& faults_json) {
  const std::string body = R"({"faults":)" + faults_json + "}";
  http::Request request;
  request.bytes = "POST /_test/faults HTTP/1.1\r\nHost: " + endpoint.authority() +
                  "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                  body;
  auto response = exchange(session, std::move(request));
  if (!response) return tl::unexpected(response.error().describe());
  if (response->status / 100 != 2) return tl::unexpected("fault injection: HTTP " + std::to_string(response->status));
  return {};
}

/// How many faults of `kind` the server injected so far (GET /_test/faults), or an error.
inline tl::expected<int, std::string> s2_faults_injected(const std::shared_ptr<asio::Session>& session,
                                                         const s2::Endpoint& endpoint, const std::string& kind) {
  http::Request request;
  request.bytes = "GET /_test/faults HTTP/1.1\r\nHost: " + endpoint.authority() + "\r\n\r\n";
  auto response = exchange(session, std::move(request));
  if (!response) return tl::unexpected(response.error().describe());
  if (response->status != 200) return tl::unexpected("fault counts: HTTP " + std::to_string(response->status));
  const auto counts = nlohmann::json::parse(response->body, nullptr, false);
  if (!counts.is_object() || !counts.contains("injected")) return tl::unexpected("fault counts: " + response->body);
  return counts["injected"].value(kind, 0);
}

}  // namespace prodsm::test
