// SPDX-License-Identifier: Apache-2.0
#pragma once
// A small synchronous client for integration tests: stream administration and the
// reference server's fault injection, over prodsm's own Session and codec.

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <string>
#include <thread>
#include <vector>

#include "prodsm/asio/session.hpp"
#include "prodsm/asio/stream_ops.hpp"

namespace prodsm::test {

class TestClient {
 public:
  TestClient();
  ~TestClient();

  /// PUT; asserts 201/200.
  void create(const std::string& url, const std::string& content_type);
  /// Whole stream: bytes concatenated, or for JSON one array text.
  std::string read_all(const std::string& url, bool json);
  /// POST Stream-Closed: true.
  asio::CloseStreamResult close_stream(const std::string& url, const std::string& content_type);
  /// POST <base>/_test/inject-error with `json_body` (its "path" is remembered for
  /// clear_faults); asserts success.
  void inject_fault(const std::string& base_url, const std::string& json_body);
  /// DELETE <base>/_test/inject-error?path=P for every path P this process injected a
  /// fault on (through any TestClient): only this process's, as the server may be shared
  /// by every test of a ctest run (scripts/ds-server.mjs).
  void clear_faults(const std::string& base_url);
  /// POST <base>/_test/fault-mix (scripts/ds-server.mjs): several kinds of fault in one
  /// run; its "path" is remembered for clear_fault_mix.
  void set_fault_mix(const std::string& base_url, const std::string& json_body);
  /// GET <base>/_test/fault-mix: how many faults of each kind were injected per path (JSON).
  std::string fault_mix_counts(const std::string& base_url);
  /// DELETE <base>/_test/fault-mix?path=P for every path P this process set a mix on.
  void clear_fault_mix(const std::string& base_url);
  /// One raw POST with producer headers (another producer taking the epoch, etc.).
  ds::Response post(const std::string& url, const std::string& content_type, const std::string& body,
                    const ds::AppendOptions& append);

  ::asio::io_context& io() { return io_; }

 private:
  std::shared_ptr<asio::Session> session_for(const ds::StreamUrl& url);
  /// DELETE `control_url`?path=P for each P, asserting success.
  void delete_per_path(const std::string& control_url, const std::vector<std::string>& paths);
  ::asio::io_context io_;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

/// A new stream on the shared reference server, named from `prefix` (created with
/// `content_type`): its URL. Fails the test when the server did not start.
std::string new_stream(TestClient& client, const std::string& prefix,
                       const std::string& content_type = "application/octet-stream");

}  // namespace prodsm::test
