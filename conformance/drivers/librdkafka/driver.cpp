// SPDX-License-Identifier: Apache-2.0
// prodsm-librdkafka-driver: librdkafka's producer (idempotent with match_seq_num 0, plain
// otherwise) under `prodsm conform --target librdkafka`, speaking the JSON-lines driver
// protocol of docs/conformance.md on stdin/stdout (logs on stderr). librdkafka runs
// against its in-process mock cluster over loopback TCP; every connection goes through
// KafkaProxy (kafka_proxy.hpp), which holds each Produce request until the harness
// answers it. What maps to what, and why: README.md next to this file.
#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_map.hpp"
#include "kafka_proxy.hpp"
#include "kafka_wire.hpp"
#include "prodsm/base64.hpp"

namespace prodsm::librdkafka_driver {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// Every record's CreateTime is this + its ticket, so the proxy reads the ticket of each
/// record on the wire exactly (README "Which records a send carries").
constexpr std::int64_t kTicketTimestampBaseMs = 1'600'000'000'000;
/// The longest `advance` the driver sleeps through (real time); longer ones are refused.
constexpr double kLongestAdvanceMs = 2000;

void log_line(const std::string& s) {
  std::fprintf(stderr, "[librdkafka-driver] %s\n", s.c_str());
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

/// The contract code (core/include/prodsm/error.hpp) for a librdkafka error.
std::string code_of(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND: return "unavailable";
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT: return "request_timeout";
    case RD_KAFKA_RESP_ERR__TRANSPORT: return "connection_lost";
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER: return "condition_failed";
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED: return "stale_epoch";
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART: return "not_found";
    case RD_KAFKA_RESP_ERR_INVALID_RECORD: return "rejected";
    case RD_KAFKA_RESP_ERR__BAD_MSG:
    case RD_KAFKA_RESP_ERR__UNDERFLOW: return "protocol_error";
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT: return "delivery_timeout";
    case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
    case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT: return "aborted";
    case RD_KAFKA_RESP_ERR__QUEUE_FULL: return "would_block";
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE: return "invalid_record";
    default: return "internal";
  }
}

/// How the harness's failure code is rendered on the wire (README "Answers").
std::optional<kafka_proxy::Answer> answer_for_failure(const std::string& code) {
  using K = kafka_proxy::Answer::Kind;
  auto error = [](std::int16_t e) { return kafka_proxy::Answer{K::error, -1, e}; };
  if (code == "unavailable") return error(kafka_wire::kErrNotEnoughReplicas);
  if (code == "request_timeout") return error(kafka_wire::kErrRequestTimedOut);
  if (code == "condition_failed" || code == "sequence_gap") return error(kafka_wire::kErrOutOfOrderSequenceNumber);
  if (code == "stale_epoch") return error(kafka_wire::kErrInvalidProducerEpoch);
  if (code == "not_found") return error(kafka_wire::kErrUnknownTopicOrPartition);
  if (code == "rejected") return error(kafka_wire::kErrInvalidRecord);
  if (code == "connection_lost") return kafka_proxy::Answer{K::close, -1, 0};
  if (code == "protocol_error") return kafka_proxy::Answer{K::malformed, -1, 0};
  return std::nullopt;
}

json hello_reply() {
  return {
      {"ok", true},
      {"driver", "librdkafka"},
      {"sdk", std::string("librdkafka ") + rd_kafka_version_str()},
      {"protocols", {"s2"}},
      {"capabilities",
       {{"per_record_completions", true},
        {"flush_barrier", true},
        {"abort", true},
        {"synchronous_rejection", true},
        {"virtual_time", false},
        {"classifies_certainty", true},
        {"capacity_signal", false}}},
      {"notes",
       {{"virtual_time",
         "librdkafka runs on the real clock (linger, backoff, message.timeout.ms): the driver runs only lingers of 0 "
         "or >= 60 s and delivery timeouts >= 60 s, sleeps through an advance of up to 2 s and refuses one that "
         "would reach a linger or delivery deadline"},
        {"capacity_signal",
         "librdkafka has no capacity-available signal: after RD_KAFKA_RESP_ERR__QUEUE_FULL the application polls "
         "(delivery reports free the queue) and retries the produce"}}},
  };
}

/// One Produce request the harness saw as a send.
struct Send {
  std::uint64_t request_id = 0;
  std::uint64_t first_ticket = 0;
  std::uint32_t count = 0;
  std::optional<std::int64_t> ack_start;  ///< base offset the harness acknowledged it with
};

/// One accepted record.
struct Ticket {
  std::string record;
  double submitted_at_ms = 0;  ///< harness time of the submit
  bool sent = false;           ///< appeared in a Produce request
  bool done = false;           ///< its delivery report was observed
};

class Driver {
 public:
  Driver() : proxy_{[this](const kafka_proxy::HeldProduce& h) { on_produce(h); }, [this] { ++activity_; }} {}
  ~Driver() {
    teardown();
    if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
    if (mock_host_ != nullptr) rd_kafka_destroy(mock_host_);
  }
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  bool init(std::string* error) {
    if (!proxy_.start(error)) return false;
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    mock_host_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (mock_host_ == nullptr) {
      *error = std::string("rd_kafka_new (mock host): ") + errstr;
      return false;
    }
    mock_ = rd_kafka_mock_cluster_new(mock_host_, 1);
    if (mock_ == nullptr) {
      *error = "rd_kafka_mock_cluster_new failed";
      return false;
    }
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(mock_);
    const auto colon = bootstraps_.rfind(':');
    sockaddr_in up{};
    up.sin_family = AF_INET;
    up.sin_port = htons(static_cast<std::uint16_t>(std::atoi(bootstraps_.substr(colon + 1).c_str())));
    if (colon == std::string::npos || inet_pton(AF_INET, bootstraps_.substr(0, colon).c_str(), &up.sin_addr) != 1) {
      *error = "unexpected mock bootstraps '" + bootstraps_ + "'";
      return false;
    }
    mock_addr_ = up;
    proxy_.set_upstream(up);
    return true;
  }

  json handle(const json& req) {
    const std::string op = req.value("op", "");
    if (op == "hello") return hello_reply();
    if (op == "start") return start(req);
    if (op == "stop") {
      teardown();
      return reply(nullptr);
    }
    if (rk_ == nullptr && !closed_) return {{"ok", false}, {"error", {{"message", "no producer: start first"}}}};
    if (op == "submit") return submit(req);
    if (op == "flush") return flush();
    if (op == "close") return close();
    if (op == "abort") return abort();
    if (op == "advance") return advance(req);
    if (op == "respond") return respond(req);
    return {{"ok", false}, {"error", {{"message", "unknown op '" + op + "'"}}}};
  }

 private:
  // ---- lifecycle ------------------------------------------------------------------------

  json start(const json& req) {
    teardown();
    if (req.value("protocol", "") != "s2") {
      return {{"ok", false},
              {"unsupported", "protocol " + req.value("protocol", std::string("?")) + ": the driver speaks s2"}};
    }
    const json config = req.value("config", json::object());
    mapped_ = map_config(config);  // librdkafka validates what it can express first (B3), below

    ++generation_;
    topic_ = "prodsm-" + std::to_string(generation_);
    if (rd_kafka_mock_topic_create(mock_, topic_.c_str(), 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return {{"ok", false}, {"error", {{"message", "rd_kafka_mock_topic_create failed"}}}};
    }
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto refuse = [&](const std::string& key, const std::string& message) {
      rd_kafka_conf_destroy(conf);
      json e = {{"message", message}};
      if (!key.empty()) {
        e["field"] = contract_field(key);
        e["key"] = key;
      } else {
        e["field"] = "config";
      }
      return json{{"ok", false}, {"error", e}};
    };
    auto set = [&](const std::string& k, const std::string& v) {
      return rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr) == RD_KAFKA_CONF_OK;
    };
    if (!set("bootstrap.servers", bootstraps_)) return refuse("", errstr);
    for (const auto& [k, v] : mapped_.properties) {
      if (!set(k, v)) return refuse(key_of_librdkafka_error(k), errstr);
    }
    if (const char* dbg = std::getenv("PRODSM_LIBRDKAFKA_DEBUG"); dbg != nullptr && *dbg != '\0') set("debug", dbg);
    rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_connect_cb(conf, &Driver::connect_cb);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);  // takes conf on success
    if (rk == nullptr) return refuse(key_of_librdkafka_error(errstr), errstr);
    if (mapped_.unsupported) {
      rd_kafka_destroy(rk);
      proxy_.close_all();
      return {{"ok", false}, {"unsupported", *mapped_.unsupported}};
    }
    {
      std::lock_guard lock(mu_);
      rk_ = rk;
      queue_ = rd_kafka_queue_get_main(rk_);
      rkt_ = rd_kafka_topic_new(rk_, topic_.c_str(), nullptr);
      closed_ = closing_ = aborting_ = false;
      close_flush_done_ = false;
      observed_ = json::array();
      log_ = json::array();
      tickets_.clear();
      sends_.clear();
      attempts_.clear();
      barriers_ = 0;
      now_ms_ = 0;
    }
    // Ready when the topic's leader is known (and, idempotent, the producer id acquired):
    // the first submit is then sent at once, as on a warm producer.
    const auto ready_by = Clock::now() + std::chrono::seconds(10);
    for (;;) {
      const auto s = proxy_.stats();
      const auto count = [&](std::int16_t api) {
        const auto it = s.responses_by_api.find(api);
        return it == s.responses_by_api.end() ? 0 : it->second;
      };
      const bool metadata = count(3) > metadata_seen_;
      const bool pid = !mapped_.idempotent || count(kafka_wire::kApiInitProducerId) > pid_seen_;
      if ((metadata && pid) || Clock::now() > ready_by) {
        metadata_seen_ = count(3);
        pid_seen_ = count(kafka_wire::kApiInitProducerId);
        if (!(metadata && pid)) log_line("start: producer not ready after 10 s");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    settle(quiet_ms() * 2);
    json r = reply(nullptr);
    json applied = json::object();
    for (const auto& [k, v] : mapped_.properties) applied[k] = v;
    r["applied"] = applied;
    r["ignored"] = mapped_.ignored;
    return r;
  }

  /// Ends the current producer, whatever it is doing: purges, drains the reports, joins
  /// the flush/close threads, destroys the handle.
  void teardown() {
    if (rk_ != nullptr) {
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (Clock::now() < until) {
        drain_events(10);
        if (rd_kafka_outq_len(rk_) == 0 && threads_idle()) break;
      }
      destroy_handle();
    }
    join_threads();
    proxy_.close_all();
  }

  bool threads_idle() {
    std::lock_guard lock(mu_);
    return running_threads_ == 0;
  }

  void join_threads() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  void destroy_handle() {
    join_threads();
    if (rkt_ != nullptr) rd_kafka_topic_destroy(rkt_);
    if (queue_ != nullptr) rd_kafka_queue_destroy(queue_);
    rd_kafka_t* rk = nullptr;
    {
      std::lock_guard lock(mu_);
      rk = rk_;
      rk_ = nullptr;
      rkt_ = nullptr;
      queue_ = nullptr;
    }
    if (rk != nullptr) rd_kafka_destroy(rk);
  }

  // ---- ops --------------------------------------------------------------------------------

  json submit(const json& req) {
    if (closed_ || closing_ || aborting_) {
      return {{"ok", false},
              {"unsupported",
               "submit after close/abort: rd_kafka_destroy() frees the handle; a later call is a "
               "use-after-free, not an error librdkafka reports"}};
    }
    const auto record = base64::decode(req.value("record_b64", ""));
    if (!record) return {{"ok", false}, {"error", {{"message", "record_b64 is not base64"}}}};
    std::uint64_t ticket = 0;
    {
      std::lock_guard lock(mu_);
      ticket = tickets_.size();
      tickets_.push_back(Ticket{*record, now_ms_, false, false});
    }
    // rd_kafka_produceva: the typed-array form of rd_kafka_producev (whose RD_KAFKA_V_*
    // macros are GNU statement expressions, refused by -Wpedantic under clang).
    std::array<rd_kafka_vu_t, 6> vus{};
    vus[0].vtype = RD_KAFKA_VTYPE_RKT;
    vus[0].u.rkt = rkt_;
    vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[1].u.i32 = 0;
    vus[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[2].u.i = RD_KAFKA_MSG_F_COPY;
    vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[3].u.mem.ptr = const_cast<char*>(record->data());
    vus[3].u.mem.size = record->size();
    vus[4].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vus[4].u.i64 = kTicketTimestampBaseMs + static_cast<std::int64_t>(ticket);
    vus[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[5].u.ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ticket));
    rd_kafka_error_t* produce_error = rd_kafka_produceva(rk_, vus.data(), vus.size());
    const rd_kafka_resp_err_t err = produce_error ? rd_kafka_error_code(produce_error) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (produce_error) rd_kafka_error_destroy(produce_error);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      {
        std::lock_guard lock(mu_);
        tickets_.pop_back();
      }
      std::string reason = "failed";
      json e = error_json(err, RD_KAFKA_MSG_STATUS_NOT_PERSISTED);
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) reason = "would_block";
      if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) reason = "record_too_large";
      settle(quiet_ms());
      return reply({{"rejected", reason}, {"error", e}});
    }
    settle(quiet_ms());
    return reply({{"ticket", ticket}});
  }

  json flush() {
    if (closed_ || closing_ || aborting_) {
      return {{"ok", false},
              {"unsupported",
               "flush after close/abort: rd_kafka_destroy() frees the handle; a later call is a "
               "use-after-free, not an error librdkafka reports"}};
    }
    std::uint64_t barrier = 0;
    {
      std::lock_guard lock(mu_);
      barrier = barriers_++;
      ++running_threads_;
      rd_kafka_t* rk = rk_;
      threads_.emplace_back([this, rk, barrier] {
        const rd_kafka_resp_err_t err = rd_kafka_flush(rk, -1);
        std::lock_guard l(mu_);
        json o = {{"kind", "barrier"}, {"barrier", barrier}, {"ok", err == RD_KAFKA_RESP_ERR_NO_ERROR}};
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) o["error"] = error_json(err, RD_KAFKA_MSG_STATUS_NOT_PERSISTED);
        observed_.push_back(std::move(o));
        --running_threads_;
        ++activity_;
      });
    }
    settle(quiet_ms());
    return reply({{"barrier", barrier}});
  }

  json close() {
    if (closed_ || closing_ || aborting_) {
      return {{"ok", false},
              {"unsupported", "a second close (or close after abort): rd_kafka_destroy() already freed the handle"}};
    }
    closing_ = true;
    {
      std::lock_guard lock(mu_);
      ++running_threads_;
      rd_kafka_t* rk = rk_;
      threads_.emplace_back([this, rk] {
        const rd_kafka_resp_err_t err = rd_kafka_flush(rk, -1);
        std::lock_guard l(mu_);
        close_flush_result_ = err;
        close_flush_done_ = true;
        --running_threads_;
        ++activity_;
      });
    }
    settle(quiet_ms());
    return reply(nullptr);
  }

  json abort() {
    if (closed_ || aborting_) {
      return {{"ok", false}, {"unsupported", "abort after close/abort: rd_kafka_destroy() already freed the handle"}};
    }
    aborting_ = true;
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    settle(quiet_ms());
    return reply(nullptr);
  }

  json advance(const json& req) {
    const double ms = req.value("ms", 0.0);
    if (ms > kLongestAdvanceMs) {
      return {{"ok", false},
              {"unsupported", "advance " + std::to_string(ms) +
                                  " ms: librdkafka runs on the real clock; the driver sleeps through at most 2000 ms"}};
    }
    {
      std::lock_guard lock(mu_);
      const double until = now_ms_ + ms;
      for (std::size_t k = 0; k < tickets_.size(); ++k) {
        const Ticket& t = tickets_[k];
        if (t.done) continue;
        if (until >= t.submitted_at_ms + static_cast<double>(mapped_.delivery_timeout_ms)) {
          return {{"ok", false},
                  {"unsupported", "advance to " + std::to_string(until) + " ms reaches ticket " + std::to_string(k) +
                                      "'s delivery deadline: message.timeout.ms runs on librdkafka's real clock"}};
        }
        if (!t.sent && mapped_.linger_ms > 0 && until >= t.submitted_at_ms + static_cast<double>(mapped_.linger_ms)) {
          return {{"ok", false},
                  {"unsupported", "advance to " + std::to_string(until) + " ms reaches ticket " + std::to_string(k) +
                                      "'s linger: linger.ms runs on librdkafka's real clock"}};
        }
      }
      now_ms_ = until;
    }
    if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    settle(quiet_ms());
    return reply(nullptr);
  }

  json respond(const json& req) {
    std::vector<std::pair<std::size_t, json>> answers;
    answers.emplace_back(req.value("send", std::size_t{0}), req.value("response", json::object()));
    if (req.contains("with") && req.at("with").is_array()) {
      for (const auto& w : req.at("with")) {
        answers.emplace_back(w.value("send", std::size_t{0}), w.value("response", json::object()));
      }
    }
    std::vector<std::pair<std::uint64_t, kafka_proxy::Answer>> rendered;
    std::vector<std::pair<std::size_t, std::int64_t>> acks;
    std::string failure_code;
    {
      std::lock_guard lock(mu_);
      for (const auto& [index, response] : answers) {
        if (index >= sends_.size()) {
          return {{"ok", false}, {"error", {{"message", "respond: no send " + std::to_string(index)}}}};
        }
        const Send& s = sends_[index];
        const std::string kind = response.value("kind", "");
        if (kind == "ack") {
          const json a = response.value("ack", json::object());
          const auto start = a.value("start", std::int64_t{0});
          const auto end = a.value("end", std::int64_t{0});
          if (end - start != static_cast<std::int64_t>(s.count)) {
            return {{"ok", false},
                    {"unsupported",
                     "invalid_ack with a wrong record count: a Kafka ProduceResponse carries only the "
                     "base offset, no count"}};
          }
          rendered.emplace_back(s.request_id, kafka_proxy::Answer{kafka_proxy::Answer::Kind::ack, start, 0});
          acks.emplace_back(index, start);
        } else {
          const std::string code = response.value("error", json::object()).value("code", "");
          auto a = answer_for_failure(code);
          if (!a) return {{"ok", false}, {"unsupported", "fail " + code + ": no Kafka rendering"}};
          rendered.emplace_back(s.request_id, *a);
          failure_code = code;
        }
      }
      for (const auto& [index, start] : acks) sends_[index].ack_start = start;
    }
    std::vector<bool> delivered;
    proxy_.answer_all(rendered, &delivered);
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < delivered.size(); ++i) {
        if (!delivered[i]) {
          log_.push_back({{"event", "response_ignored"},
                          {"send", answers[i].first},
                          {"why", "the request's connection is gone (librdkafka closed it or it was purged)"}});
        }
      }
    }
    // After a failure librdkafka may back off, reconnect and resend: wait long enough.
    settle(failure_code.empty() ? quiet_ms() : quiet_ms() + static_cast<int>(mapped_.retry_backoff_ms) + 100);
    return reply(nullptr);
  }

  // ---- librdkafka side -------------------------------------------------------------------

  static int connect_cb(int sockfd, const struct sockaddr* addr, int addrlen, const char* id, void* opaque) {
    auto* self = static_cast<Driver*>(opaque);
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    if (addr->sa_family != AF_INET || addrlen < static_cast<int>(sizeof(sockaddr_in)) ||
        in->sin_port != self->mock_addr_.sin_port) {
      log_line(std::string("connect_cb: ") + id + " is not the mock broker; connected through the proxy anyway");
    }
    const sockaddr_in to = self->proxy_.listen_address();
    if (::connect(sockfd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
      return errno;
    }
    return 0;
  }

  /// A Produce request arrived at the proxy (proxy thread): one `send` observation.
  void on_produce(const kafka_proxy::HeldProduce& h) {
    std::lock_guard lock(mu_);
    std::vector<const kafka_wire::Record*> records;
    const kafka_wire::RecordBatch* batch = nullptr;
    for (const auto& t : h.request.topics) {
      for (const auto& p : t.partitions) {
        for (const auto& b : p.batches) {
          if (batch != nullptr) {
            log_line("a Produce request with more than one batch: only the first is reported");
            continue;
          }
          batch = &b;
          for (const auto& r : b.records) records.push_back(&r);
        }
      }
    }
    if (batch == nullptr || records.empty()) {
      log_line("a Produce request with no records");
      log_.push_back({{"event", "empty_produce"}, {"request", h.request_id}});
      return;
    }
    const std::int64_t first = records.front()->timestamp_ms - kTicketTimestampBaseMs;
    std::string body;
    json ends = json::array();
    for (std::size_t i = 0; i < records.size(); ++i) {
      const std::int64_t t = records[i]->timestamp_ms - kTicketTimestampBaseMs;
      const std::string value = records[i]->value.value_or(std::string{});
      if (t != first + static_cast<std::int64_t>(i) || t < 0 || static_cast<std::size_t>(t) >= tickets_.size()) {
        log_.push_back({{"event", "identify_mismatch"}, {"why", "records are not consecutive accepted tickets"}});
      } else {
        if (tickets_[static_cast<std::size_t>(t)].record != value) {
          log_.push_back({{"event", "identify_mismatch"}, {"ticket", t}, {"why", "value differs from the record"}});
        }
        tickets_[static_cast<std::size_t>(t)].sent = true;
      }
      body += value;
      ends.push_back(body.size());
    }
    const auto first_ticket = static_cast<std::uint64_t>(std::max<std::int64_t>(first, 0));
    const std::uint32_t attempt = ++attempts_[first_ticket];
    const std::size_t index = sends_.size();
    sends_.push_back(Send{h.request_id, first_ticket, static_cast<std::uint32_t>(records.size()), std::nullopt});
    json stamp = {{"sequenced", batch->producer_id >= 0}};
    if (batch->producer_id >= 0) {
      stamp["epoch"] = batch->producer_epoch;
      stamp["seq"] = batch->base_sequence;
      stamp["match_seq_num"] = batch->base_sequence;
    }
    observed_.push_back({{"kind", "send"},
                         {"send", index},
                         {"batch", first_ticket},
                         {"attempt", attempt},
                         {"first_ticket", first_ticket},
                         {"count", records.size()},
                         {"body_b64", base64::encode(body)},
                         {"record_ends", ends},
                         {"stamp", stamp},
                         {"session", h.connection}});
    ++activity_;
  }

  json error_json(rd_kafka_resp_err_t err, rd_kafka_msg_status_t status) {
    std::string code = code_of(err);
    std::string message = rd_kafka_err2str(err);
    if (err == RD_KAFKA_RESP_ERR__FATAL && rk_ != nullptr) {
      char why[512];
      const rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(rk_, why, sizeof why);
      code = code_of(fatal);
      message = std::string("fatal: ") + rd_kafka_err2name(fatal) + ": " + why;
    }
    return {{"code", code},
            {"certainty", status == RD_KAFKA_MSG_STATUS_NOT_PERSISTED ? "definite" : "indefinite"},
            {"retryable", false},
            {"message", message},
            {"kafka_error", rd_kafka_err2name(err)}};
  }

  /// Serves the main queue (delivery reports, errors) for up to `wait_ms`; true when
  /// anything was served.
  bool drain_events(int wait_ms) {
    if (queue_ == nullptr) {
      if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      return false;
    }
    bool any = false;
    for (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue_, wait_ms); ev != nullptr;
         ev = rd_kafka_queue_poll(queue_, 0)) {
      any = true;
      if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_DR) {
        std::lock_guard lock(mu_);
        while (const rd_kafka_message_t* m = rd_kafka_event_message_next(ev)) on_report(m);
      } else if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_ERROR) {
        std::lock_guard lock(mu_);
        log_.push_back({{"event", rd_kafka_event_error_is_fatal(ev) ? "fatal_error" : "error"},
                        {"kafka_error", rd_kafka_err2name(rd_kafka_event_error(ev))},
                        {"message", rd_kafka_event_error_string(ev)}});
      }
      rd_kafka_event_destroy(ev);  // after the reports are recorded: flush() returns only then
      ++activity_;
    }
    return any;
  }

  /// One delivery report (mu_ held): a `done` observation.
  void on_report(const rd_kafka_message_t* m) {
    // The ticket rides in the message's opaque (a failed message's timestamp reads -1).
    const auto t = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(m->_private));
    if (t < 0 || static_cast<std::size_t>(t) >= tickets_.size()) {
      log_.push_back({{"event", "unknown_report"}, {"ticket", t}});
      return;
    }
    tickets_[static_cast<std::size_t>(t)].done = true;
    json o = {{"kind", "done"}, {"first", t}, {"last", t}, {"ok", m->err == RD_KAFKA_RESP_ERR_NO_ERROR}};
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      // The batch that carried it: the newest acknowledged send holding the ticket.
      json ack = {{"start", m->offset}, {"end", m->offset + 1}, {"seq_num", m->offset}};
      for (auto it = sends_.rbegin(); it != sends_.rend(); ++it) {
        const auto k = static_cast<std::uint64_t>(t);
        if (it->ack_start && k >= it->first_ticket && k < it->first_ticket + it->count) {
          ack = {{"start", *it->ack_start}, {"end", *it->ack_start + it->count}, {"seq_num", m->offset}};
          break;
        }
      }
      o["ack"] = ack;
    } else {
      o["error"] = error_json(m->err, rd_kafka_message_status(m));
    }
    observed_.push_back(std::move(o));
  }

  // ---- settling --------------------------------------------------------------------------

  static int quiet_ms() {
    static const int q = env_int("PRODSM_LIBRDKAFKA_QUIET_MS", 60);
    return q;
  }

  /// Lets librdkafka run until nothing has moved for `quiet` ms (delivery reports served,
  /// no proxy traffic, no flush/close returning), at most 10 s; finishes a close or abort
  /// whose flush has returned (destroy, then the `closed` observation).
  void settle(int quiet) {
    const auto limit = Clock::now() + std::chrono::seconds(10);
    std::uint64_t seen = activity_;
    auto quiet_since = Clock::now();
    for (;;) {
      drain_events(2);
      finish_close_or_abort();
      if (activity_ != seen) {
        seen = activity_;
        quiet_since = Clock::now();
      }
      const auto now = Clock::now();
      if (now - quiet_since >= std::chrono::milliseconds(quiet)) break;
      if (now > limit) {
        log_line("settle: still busy after 10 s");
        break;
      }
    }
  }

  void finish_close_or_abort() {
    if (rk_ == nullptr || closed_) return;
    bool close_ready = false;
    {
      std::lock_guard lock(mu_);
      close_ready = closing_ && close_flush_done_;
    }
    const bool abort_ready = aborting_ && rd_kafka_outq_len(rk_) == 0 && threads_idle();
    if (!close_ready && !abort_ready) return;
    join_threads();  // every barrier was observed before Closed
    destroy_handle();
    std::lock_guard lock(mu_);
    closed_ = true;
    json o = {{"kind", "closed"}};
    if (aborting_) {
      o["ok"] = false;
      o["error"] = {{"code", "aborted"}, {"certainty", "definite"}, {"message", "rd_kafka_purge + rd_kafka_destroy"}};
    } else {
      o["ok"] = close_flush_result_ == RD_KAFKA_RESP_ERR_NO_ERROR;
      if (close_flush_result_ != RD_KAFKA_RESP_ERR_NO_ERROR) {
        o["error"] = error_json(close_flush_result_, RD_KAFKA_MSG_STATUS_NOT_PERSISTED);
      }
    }
    observed_.push_back(std::move(o));
    ++activity_;
  }

  /// The reply to the current request, with everything observed since the previous one.
  /// Sends come from the proxy thread and completions from this thread and the flush
  /// threads, so their interleaving within one reply is a race between threads; the reply
  /// lists the completions (done, barrier, closed, in their order) first, then the sends
  /// (in theirs): librdkafka handles a response (completions) before it builds the next
  /// request, and a flush or close completes only when nothing is outstanding. This keeps
  /// replays identical (D2).
  json reply(json result) {
    std::lock_guard lock(mu_);
    json observed = json::array();
    for (const auto& o : observed_) {
      if (o.value("kind", "") != "send") observed.push_back(o);
    }
    for (const auto& o : observed_) {
      if (o.value("kind", "") == "send") observed.push_back(o);
    }
    json r = {{"ok", true}, {"result", std::move(result)}, {"observed", std::move(observed)}};
    if (!log_.empty()) r["log"] = log_;
    observed_ = json::array();
    log_ = json::array();
    return r;
  }

  kafka_proxy::KafkaProxy proxy_;
  rd_kafka_t* mock_host_ = nullptr;
  rd_kafka_mock_cluster_t* mock_ = nullptr;
  std::string bootstraps_;
  sockaddr_in mock_addr_{};
  std::uint64_t generation_ = 0;
  std::uint64_t metadata_seen_ = 0;
  std::uint64_t pid_seen_ = 0;

  MappedConfig mapped_;
  std::string topic_;
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_topic_t* rkt_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
  bool closing_ = false;   ///< close() called: its flush runs on a thread
  bool aborting_ = false;  ///< abort() called: purged, waiting for the reports
  bool closed_ = false;    ///< the handle was destroyed after close or abort

  std::mutex mu_;  ///< guards what the proxy and flush threads touch (below)
  json observed_ = json::array();
  json log_ = json::array();
  std::vector<Ticket> tickets_;
  std::vector<Send> sends_;
  std::map<std::uint64_t, std::uint32_t> attempts_;
  std::uint64_t barriers_ = 0;
  double now_ms_ = 0;
  std::vector<std::thread> threads_;
  int running_threads_ = 0;
  bool close_flush_done_ = false;
  rd_kafka_resp_err_t close_flush_result_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::atomic<std::uint64_t> activity_{0};
};

}  // namespace
}  // namespace prodsm::librdkafka_driver

int main() {
  using prodsm::librdkafka_driver::Driver;
  auto driver = std::make_unique<Driver>();
  std::string error;
  if (!driver->init(&error)) {
    std::fprintf(stderr, "[librdkafka-driver] %s\n", error.c_str());
    return 3;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json reply;
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    if (request.is_discarded() || !request.is_object()) {
      reply = {{"ok", false}, {"error", {{"message", "not a JSON object"}}}};
    } else {
      reply = driver->handle(request);
    }
    std::cout << reply.dump() << "\n" << std::flush;
    if (request.is_object() && request.value("op", "") == "stop") break;
  }
  driver.reset();
  return 0;
}
