// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the adapter's state, shared by adapter.cpp (dispatch, init, stream
// commands) and producer_commands.cpp (idempotent producer commands, validate).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <deque>
#include <future>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

#include "adapter.hpp"
#include "dynamic_fields.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/session.hpp"

namespace prodsm::tools::dsconf {

/// A command did not finish within its timeout: answered with TIMEOUT.
class TimeoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An error already turned into a result (e.g. the HEAD that learns a content type
/// failed): returned as the command's result as it is.
struct ResultError {
  Json result;
};

/// The instant (steady clock) at which the current command gives up.
using Deadline = std::chrono::steady_clock::time_point;

struct Adapter::Impl {
  explicit Impl(AdapterOptions o);
  ~Impl();

  // ---- dispatch and state (adapter.cpp) -------------------------------------------------
  Json dispatch(const std::string& type, const Json& command);
  Json init(const Json& command);
  Json shutdown();
  void reset_state();  // detaches cached producers, forgets content types, closes the session

  /// Waits for `f` until the command's deadline; TimeoutError after it.
  template <class T>
  T await(std::future<T>& f) {
    if (f.wait_until(deadline) != std::future_status::ready) {
      throw TimeoutError("no result within the command timeout (" + std::to_string(command_timeout.count()) + " ms)");
    }
    return f.get();
  }

  /// The stream URL of a command's `path` (must start with '/').
  ds::StreamUrl stream_url(const std::string& path) const;
  /// `headers` of a command as extra request headers; ArgumentError for one the codec
  /// manages itself (Content-Type, Producer-*, Stream-*, framing headers).
  static ds::Headers extra_headers(const Json& command);
  /// One request over the shared session.
  asio::ExchangeResult exchange(std::string request, bool head_request = false);
  /// One request, retried (E4: backoff_delay, Retry-After honoured) while the answer is
  /// a 429 or 5xx response or a retryable transport failure — a failure after the
  /// request was written (indefinite) only when `idempotent` — up to
  /// request_retry_policy().max_attempts and never past the command's deadline; the
  /// last answer otherwise (read_command.cpp).
  asio::ExchangeResult exchange_retrying(const std::string& request, bool head_request, bool idempotent);
  /// The retry policy of single requests: 5 attempts, 50 ms doubling to 2 s, jittered.
  static RetryPolicy request_retry_policy();
  /// The stream's content type: cached from create/connect/head, else learned by HEAD.
  /// ResultError (the HEAD's error result) when the stream cannot be asked.
  std::string content_type_for(const std::string& command_type, const std::string& path, const ds::Headers& headers);
  void remember_content_type(const std::string& path, const std::string& content_type);
  void forget_content_type(const std::string& path);

  // ---- stream commands (adapter.cpp; read in read_command.cpp) ---------------------------
  Json create(const Json& command);
  Json connect(const Json& command);
  Json append(const Json& command);
  Json read(const Json& command);
  Json head(const Json& command);
  Json remove(const Json& command);  // "delete"
  Json close(const Json& command);

  // ---- idempotent producer commands and validate (producer_commands.cpp) ----------------
  struct CachedProducer {
    std::string path;
    asio::Producer producer;
  };
  /// The cached producer of path|producerId|epoch, created (attached to the shared
  /// session, max_in_flight 1, linger 0) when missing.
  asio::Producer& cached_producer(const Json& command, const std::string& path, bool auto_claim);
  /// Detaches (closes, stream left open) and forgets a cached producer.
  void drop_producer(std::string key);  // by value: callers pass references into producer_order
  Json idempotent_append(const Json& command);
  Json idempotent_append_batch(const Json& command);
  Json idempotent_close(const Json& command);
  Json idempotent_detach(const Json& command);
  Json validate(const Json& command);

  // ---- dynamic headers and params (dynamic_commands.cpp) -------------------------------
  Json set_dynamic_header(const Json& command);
  Json set_dynamic_param(const Json& command);
  Json clear_dynamic(const Json& command);
  /// Adds headersSent / paramsSent (what this command's requests carried) to a success.
  void report_dynamic(Json& result) const;
  Json validate_retry_options(const Json& target);  // the suite's RetryOptions as the core's RetryPolicy

  AdapterOptions options;
  std::chrono::milliseconds command_timeout;
  Deadline deadline{};
  bool initialized = false;
  bool shutdown_done = false;

  ::asio::io_context io;
  ::asio::executor_work_guard<::asio::io_context::executor_type> work{::asio::make_work_guard(io)};
  std::thread io_thread;

  std::optional<ds::StreamUrl> server;     // host, port and base path of serverUrl
  std::shared_ptr<asio::Session> session;  // pipelined, shared by stream commands

  std::unordered_map<std::string, std::string> content_types;  // path -> content type
  std::deque<std::string> content_type_order;                  // FIFO for the bound

  DynamicFields dynamic;  // asked by the session for every request (its header provider)

  std::map<std::string, CachedProducer> producers;  // "path|producerId|epoch"
  std::deque<std::string> producer_order;           // FIFO for the bound
};

}  // namespace prodsm::tools::dsconf
