// SPDX-License-Identifier: Apache-2.0
// The driver end to end: the built prodsm-librdkafka-driver spawned and spoken to in the
// JSON-lines driver protocol (docs/conformance.md), librdkafka against its mock cluster
// behind the driver's proxy. Each test is a short exchange the harness would make; the
// driver settles librdkafka before every reply, so the observations are deterministic.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#ifndef PRODSM_LIBRDKAFKA_DRIVER_BIN
#error "PRODSM_LIBRDKAFKA_DRIVER_BIN: the driver binary's path"
#endif

using nlohmann::json;

namespace {

/// The driver as a child process: one request line in, one reply line out.
class DriverProcess {
 public:
  DriverProcess() {
    int in[2];
    int out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0 && std::getenv("PRODSM_LIBRDKAFKA_TEST_LOG") == nullptr) ::dup2(devnull, 2);
      ::close(in[1]);
      ::close(out[0]);
      ::execl(PRODSM_LIBRDKAFKA_DRIVER_BIN, PRODSM_LIBRDKAFKA_DRIVER_BIN, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
  }
  ~DriverProcess() {
    if (to_ != nullptr) std::fclose(to_);  // EOF: the driver exits
    if (from_ != nullptr) std::fclose(from_);
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  DriverProcess(const DriverProcess&) = delete;
  DriverProcess& operator=(const DriverProcess&) = delete;

  json request(const json& r) {
    const std::string line = r.dump() + "\n";
    std::fputs(line.c_str(), to_);
    std::fflush(to_);
    std::string reply;
    for (int c = std::fgetc(from_); c != EOF && c != '\n'; c = std::fgetc(from_)) reply.push_back(static_cast<char>(c));
    return json::parse(reply, nullptr, false);
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

json of_kind(const json& reply, const std::string& kind) {
  json out = json::array();
  for (const auto& o : reply.value("observed", json::array())) {
    if (o.value("kind", "") == kind) out.push_back(o);
  }
  return out;
}

json submit(DriverProcess& d, const std::string& b64) {
  return d.request({{"op", "submit"}, {"record_b64", b64}});
}

const json kLongLinger = {{"linger_ms", 3600000}, {"delivery_timeout_ms", 7200000}};

}  // namespace

TEST(LibrdkafkaDriver, HelloDeclaresWhatKafkaCanExpress) {
  DriverProcess d;
  const json h = d.request({{"op", "hello"}});
  ASSERT_TRUE(h.value("ok", false)) << h;
  EXPECT_EQ(h.at("protocols"), json::array({"s2"}));
  const json c = h.at("capabilities");
  EXPECT_TRUE(c.at("per_record_completions"));
  EXPECT_TRUE(c.at("flush_barrier"));
  EXPECT_TRUE(c.at("classifies_certainty"));
  EXPECT_FALSE(c.at("virtual_time"));
  EXPECT_FALSE(c.at("capacity_signal"));  // R1: no capacity-available signal
  EXPECT_TRUE(h.at("notes").contains("virtual_time"));
}

// F1, P4, S1: flush sends the partial batch at once; the ack's base offset gives each
// record its position; the idempotent producer stamps baseSequence = records before it.
TEST(LibrdkafkaDriver, SubmitFlushAckRoundTrip) {
  DriverProcess d;
  json cfg = kLongLinger;
  cfg["match_seq_num"] = 0;
  ASSERT_TRUE(d.request({{"op", "start"}, {"protocol", "s2"}, {"config", cfg}}).value("ok", false));
  EXPECT_EQ(submit(d, "YQ==").at("result"), json({{"ticket", 0}}));
  EXPECT_EQ(submit(d, "YmM=").at("result"), json({{"ticket", 1}}));
  const json f = d.request({{"op", "flush"}});
  EXPECT_EQ(f.at("result"), json({{"barrier", 0}}));
  const json sends = of_kind(f, "send");
  ASSERT_EQ(sends.size(), 1U) << f;
  EXPECT_EQ(sends[0].at("first_ticket"), 0);
  EXPECT_EQ(sends[0].at("count"), 2);
  EXPECT_EQ(sends[0].at("attempt"), 1);
  EXPECT_EQ(sends[0].at("body_b64"), "YWJj");  // "abc"
  EXPECT_EQ(sends[0].at("record_ends"), json::array({1, 3}));
  EXPECT_EQ(sends[0].at("stamp").at("sequenced"), true);
  EXPECT_EQ(sends[0].at("stamp").at("match_seq_num"), 0);
  const json a =
      d.request({{"op", "respond"},
                 {"send", 0},
                 {"response", {{"kind", "ack"}, {"ack", {{"start", 40}, {"end", 42}}}, {"invalid", false}}}});
  const json done = of_kind(a, "done");
  ASSERT_EQ(done.size(), 2U) << a;
  EXPECT_EQ(done[0].at("ack"), json({{"start", 40}, {"end", 42}, {"seq_num", 40}}));
  EXPECT_EQ(done[1].at("ack"), json({{"start", 40}, {"end", 42}, {"seq_num", 41}}));
  EXPECT_EQ(of_kind(a, "barrier"), json::array({{{"kind", "barrier"}, {"barrier", 0}, {"ok", true}}}));
  // A second batch: baseSequence advanced by the record count (S1).
  submit(d, "ZA==");
  const json f2 = d.request({{"op", "flush"}});
  ASSERT_EQ(of_kind(f2, "send").size(), 1U) << f2;
  EXPECT_EQ(of_kind(f2, "send")[0].at("stamp").at("match_seq_num"), 2);
  const json c = d.request({{"op", "close"}});
  EXPECT_TRUE(c.at("result").is_null());
  const json a2 =
      d.request({{"op", "respond"},
                 {"send", 1},
                 {"response", {{"kind", "ack"}, {"ack", {{"start", 42}, {"end", 43}}}, {"invalid", false}}}});
  EXPECT_EQ(of_kind(a2, "done").size(), 1U) << a2;
  EXPECT_EQ(of_kind(a2, "closed"), json::array({{{"kind", "closed"}, {"ok", true}}}));
  EXPECT_TRUE(d.request({{"op", "stop"}}).value("ok", false));
}

// E2: a retriable failure is resent (attempt 2); a permanent one fails the record,
// classified from rd_kafka_message_status (NOT_PERSISTED = definite).
TEST(LibrdkafkaDriver, FailuresAreRenderedAndClassified) {
  DriverProcess d;
  json cfg = kLongLinger;
  cfg["max_batch_records"] = 1;
  cfg["backoff_initial_ms"] = 1;
  ASSERT_TRUE(d.request({{"op", "start"}, {"protocol", "s2"}, {"config", cfg}}).value("ok", false));
  ASSERT_EQ(of_kind(submit(d, "YQ=="), "send").size(), 1U);  // a full batch goes at once
  const json retry = d.request(
      {{"op", "respond"}, {"send", 0}, {"response", {{"kind", "fail"}, {"error", {{"code", "unavailable"}}}}}});
  const json resent = of_kind(retry, "send");
  ASSERT_EQ(resent.size(), 1U) << retry;
  EXPECT_EQ(resent[0].at("attempt"), 2);
  EXPECT_EQ(resent[0].at("batch"), 0);
  const json failed =
      d.request({{"op", "respond"}, {"send", 1}, {"response", {{"kind", "fail"}, {"error", {{"code", "rejected"}}}}}});
  const json done = of_kind(failed, "done");
  ASSERT_EQ(done.size(), 1U) << failed;
  EXPECT_FALSE(done[0].at("ok"));
  EXPECT_EQ(done[0].at("error").at("code"), "rejected");
  EXPECT_EQ(done[0].at("error").at("certainty"), "definite");
}

// B3, B4: librdkafka's own validation names the contract's field; a record is refused
// exactly when S2 would meter it above max_batch_bytes (message.max.bytes = + 28).
TEST(LibrdkafkaDriver, ConfigRefusalsAndOversizedRecords) {
  DriverProcess d;
  json zero = kLongLinger;
  zero["max_in_flight"] = 0;
  const json refused = d.request({{"op", "start"}, {"protocol", "s2"}, {"config", zero}});
  EXPECT_FALSE(refused.value("ok", true));
  EXPECT_EQ(refused.at("error").at("field"), "max_in_flight");
  const json five_ms = d.request({{"op", "start"}, {"protocol", "s2"}, {"config", {{"linger_ms", 5}}}});
  EXPECT_EQ(five_ms.value("unsupported", "").rfind("linger_ms: ", 0), 0U) << five_ms;
  json small = kLongLinger;
  small["max_batch_bytes"] = 1000;
  ASSERT_TRUE(d.request({{"op", "start"}, {"protocol", "s2"}, {"config", small}}).value("ok", false));
  auto record = [](std::size_t n) {
    static const char* a = "QUFB";  // "AAA"
    std::string b64;
    for (std::size_t i = 0; i < n / 3; ++i) b64 += a;
    return b64;
  };
  EXPECT_EQ(submit(d, record(990)).at("result"), json({{"ticket", 0}}));  // 8 + 990 <= 1000
  const json big = submit(d, record(993));                                // 8 + 993 > 1000
  EXPECT_EQ(big.at("result").at("rejected"), "record_too_large") << big;
  EXPECT_EQ(submit(d, record(3)).at("result"), json({{"ticket", 1}}));  // still usable
}

// C5, E2: abort purges; a record in flight fails indefinite, one never sent definite.
TEST(LibrdkafkaDriver, AbortFailsEveryRecordWithItsCertainty) {
  DriverProcess d;
  json cfg = kLongLinger;
  cfg["max_batch_records"] = 1;
  cfg["max_in_flight"] = 1;
  cfg["match_seq_num"] = 0;
  ASSERT_TRUE(d.request({{"op", "start"}, {"protocol", "s2"}, {"config", cfg}}).value("ok", false));
  ASSERT_EQ(of_kind(submit(d, "YQ=="), "send").size(), 1U);
  EXPECT_EQ(of_kind(submit(d, "Yg=="), "send").size(), 0U);  // the in-flight slot is taken
  const json a = d.request({{"op", "abort"}});
  const json done = of_kind(a, "done");
  ASSERT_EQ(done.size(), 2U) << a;
  EXPECT_EQ(done[0].at("error").at("code"), "aborted");
  EXPECT_EQ(done[0].at("error").at("certainty"), "indefinite");
  EXPECT_EQ(done[1].at("error").at("certainty"), "definite");
  const json closed = of_kind(a, "closed");
  ASSERT_EQ(closed.size(), 1U) << a;
  EXPECT_FALSE(closed[0].at("ok"));
  // After rd_kafka_destroy() nothing more can be asked of the handle.
  EXPECT_TRUE(submit(d, "Yw==").contains("unsupported"));
}
