// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file kafka_proxy.hpp
/// A loopback TCP proxy between librdkafka and its mock cluster that lets the
/// conformance harness decide every answer to a Produce request after it has seen it.
///
/// Every connection librdkafka makes is steered here (rd_kafka_conf_set_connect_cb); the
/// proxy opens one connection to the mock broker per client connection and frames the
/// client's requests (kafka_wire.hpp). Every request other than Produce is forwarded
/// unchanged and its response passed back. A Produce request is *held*: it is decoded,
/// reported through the `on_produce` callback, never forwarded to the mock, and answered
/// only when the driver calls answer() — with a synthesized ProduceResponse (an ack with
/// the base offset the harness chose, or a Kafka error code), a malformed response, or a
/// closed connection. Responses go back to the client strictly in request order (Kafka's
/// per-connection ordering), so a request behind a held Produce waits with it.
///
/// One thread runs the poll loop; every public method may be called from any other
/// thread. Callbacks run on the proxy thread with no proxy lock held.

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kafka_wire.hpp"

namespace prodsm::kafka_proxy {

/// A Produce request the proxy holds until answered.
struct HeldProduce {
  std::uint64_t request_id = 0;        ///< unique per proxy, from 1
  std::uint64_t connection = 0;        ///< the client connection it arrived on (from 1)
  kafka_wire::ProduceRequest request;  ///< as decoded (kafka_wire::parse_produce_request)
};

/// How to answer a held Produce request.
struct Answer {
  /// ack: error_code 0 with `base_offset`; error: `error_code`, base offset -1;
  /// malformed: a ProduceResponse cut short after its topic count (a protocol error for
  /// the client); close: the client connection is closed (every request on it is lost).
  enum class Kind : std::uint8_t { ack, error, malformed, close };
  Kind kind = Kind::ack;                           ///< which answer
  std::int64_t base_offset = -1;                   ///< ack
  std::int16_t error_code = kafka_wire::kErrNone;  ///< error
};

/// Counters of what went through (for the driver's readiness wait and its log).
struct ProxyStats {
  std::uint64_t connections = 0;                           ///< client connections accepted
  std::map<std::int16_t, std::uint64_t> responses_by_api;  ///< responses passed back, by API key
};

/// The proxy itself: a listening socket, one upstream connection per client connection,
/// the held Produce requests, and the thread that moves the bytes (see the file comment).
class KafkaProxy {
 public:
  /// `on_produce` is called for every Produce request held (proxy thread);
  /// `on_activity` whenever bytes move or a connection opens or closes (proxy thread).
  KafkaProxy(std::function<void(const HeldProduce&)> on_produce, std::function<void()> on_activity);
  ~KafkaProxy();
  KafkaProxy(const KafkaProxy&) = delete;
  KafkaProxy& operator=(const KafkaProxy&) = delete;

  /// Listens on 127.0.0.1 (an ephemeral port) and starts the poll thread; false with
  /// `error` set when the socket cannot be opened.
  bool start(std::string* error);
  /// The address librdkafka's sockets are connected to (valid after start()).
  [[nodiscard]] sockaddr_in listen_address() const { return listen_addr_; }
  /// Where new client connections are forwarded: the mock broker.
  void set_upstream(const sockaddr_in& upstream);

  /// Answers held request `request_id`; false when it is unknown or its connection is
  /// gone (the answer is then dropped). Answers given together (several ids) take
  /// effect in the same instant: the client reads them in one go.
  bool answer(std::uint64_t request_id, const Answer& a);
  /// Several answers at once (as answer(), each reported in `delivered`).
  void answer_all(const std::vector<std::pair<std::uint64_t, Answer>>& answers, std::vector<bool>* delivered);

  /// Closes every connection (held requests are dropped).
  void close_all();
  /// Held requests not answered yet.
  [[nodiscard]] std::size_t held() const;
  [[nodiscard]] ProxyStats stats() const;

 private:
  struct Pending {
    bool produce = false;
    std::int32_t correlation_id = 0;
    std::int16_t api_key = 0;
    std::int16_t api_version = 0;
    std::uint64_t request_id = 0;  ///< produce
    std::string topic;             ///< produce: the (first) topic
    std::int32_t partition = 0;    ///< produce: the (first) partition
    std::optional<std::string> response;
  };
  struct Connection {
    std::uint64_t id = 0;
    int client = -1;
    int upstream = -1;
    std::string client_in, client_out, upstream_in, upstream_out;
    std::deque<Pending> pending;
    bool closing = false;
  };

  void run();
  void accept_new(std::vector<std::function<void()>>& later);
  /// Reads what is available; false when the peer closed or failed.
  bool read_from(int fd, std::string& into);
  bool write_to(int fd, std::string& from);
  void handle_client_frames(Connection& c, std::vector<std::function<void()>>& later);
  void handle_upstream_frames(Connection& c);
  void release_responses(Connection& c);
  void close_connection(Connection& c);
  void wake();
  bool answer_locked(std::uint64_t request_id, const Answer& a);

  std::function<void(const HeldProduce&)> on_produce_;
  std::function<void()> on_activity_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, Connection> connections_;
  std::map<std::uint64_t, std::uint64_t> connection_of_request_;
  std::uint64_t next_connection_ = 1;
  std::uint64_t next_request_ = 1;
  sockaddr_in upstream_{};
  sockaddr_in listen_addr_{};
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  ProxyStats stats_;
};

}  // namespace prodsm::kafka_proxy
