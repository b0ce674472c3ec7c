// SPDX-License-Identifier: Apache-2.0
// The event hook and submit-to-ack latency through every adapter, against the reference
// server's fault injection (prodsm/producer_event.hpp): retries name their cause (E4), a
// dropped connection is a retry and a reconnect (E2), the terminal error comes once and
// last (E1); the hook runs outside the producer's lock (it calls stats()).
#include <algorithm>
#include <mutex>
#include <thread>

#include "scenario_support.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

std::uint64_t count_of(const std::vector<ProducerEvent>& events, EventKind kind, ErrorCode cause) {
  std::uint64_t n = 0;
  for (const auto& e : events) {
    if (e.kind == kind && e.cause && e.cause->code == cause) n += e.count;
  }
  return n;
}

TEST_P(Scenario, EventsNameRetriesReconnectsAndTheTerminalErrorOutsideTheLock) {
  const std::string url = server().stream_url("events");
  const std::string path = ds::StreamUrl::parse(url)->path;
  TestClient client;
  client.create(url, "application/octet-stream");
  ProducerSetup setup{url, "application/octet-stream", idempotent("events-producer"), without_stall_detection()};
  // The hook calls the producer: were it run under the producer's lock, it would deadlock.
  std::mutex guard;
  ProducerUnderTest* live = nullptr;
  std::uint64_t stats_calls = 0;
  setup.on_event = [&](const ProducerEvent&) {
    std::lock_guard lock(guard);
    if (live == nullptr) return;
    (void)live->adapter_stats();
    ++stats_calls;
  };
  auto producer = GetParam().make(setup);
  {
    std::lock_guard lock(guard);
    live = producer.get();
  }
  auto one = [&](const std::string& record) -> tl::expected<void, Error> {
    EXPECT_TRUE(producer->submit(record).has_value());
    return producer->flush(kWait);
  };
  client.inject_fault(server().url(), R"({"path":")" + path + R"(","method":"POST","status":503,"count":2})");
  ASSERT_TRUE(one("a\n").has_value());
  client.inject_fault(server().url(), R"({"path":")" + path + R"(","method":"POST","dropConnection":true,"count":1})");
  ASSERT_TRUE(one("b\n").has_value());
  client.inject_fault(server().url(), R"({"path":")" + path + R"(","method":"POST","status":400,"count":1})");
  auto failed = one("c\n");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::rejected);
  client.clear_faults(server().url());
  EXPECT_FALSE(producer->close(kWait).has_value()) << "E1: the close reports the sticky error";

  // The events are posted behind the completions of their input; wait for the last one.
  std::vector<ProducerEvent> events;
  std::uint64_t calls = 0;
  for (int i = 0; i < 6000; ++i) {
    events = producer->events();
    {
      std::lock_guard lock(guard);
      calls = stats_calls;
    }
    if (!events.empty() && events.back().kind == EventKind::terminal && calls == events.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});  // liveness only: no timing asserted
  }
  {
    std::lock_guard lock(guard);
    live = nullptr;
  }
  for (const auto& e : events) SCOPED_TRACE(e.describe());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(count_of(events, EventKind::retry, ErrorCode::unavailable), 2U) << "E4: both 503s, with their cause";
  EXPECT_EQ(count_of(events, EventKind::retry, ErrorCode::connection_lost), 1U) << "E2: the dropped connection";
  const auto reconnect =
      std::find_if(events.begin(), events.end(), [](const ProducerEvent& e) { return e.kind == EventKind::reconnect; });
  ASSERT_NE(reconnect, events.end()) << "the resend went out on a new connection";
  EXPECT_EQ(reconnect->level, EventLevel::info);
  ASSERT_TRUE(reconnect->cause.has_value());
  EXPECT_EQ(reconnect->cause->code, ErrorCode::connection_lost);
  EXPECT_EQ(events.back().kind, EventKind::terminal) << "E1: the terminal event is the last";
  EXPECT_EQ(events.back().level, EventLevel::error);
  ASSERT_TRUE(events.back().cause.has_value());
  EXPECT_EQ(events.back().cause->code, ErrorCode::rejected);
  EXPECT_EQ(events.back().cause->http_status, 400);
  EXPECT_EQ(
      std::count_if(events.begin(), events.end(), [](const ProducerEvent& e) { return e.kind == EventKind::terminal; }),
      1);
  for (const auto& e : events) {
    EXPECT_GE(e.level, EventLevel::info) << "below min_level: " << e.describe();
    EXPECT_TRUE(e.cause.has_value()) << e.describe();
  }
  EXPECT_EQ(calls, events.size()) << "every hook call could take the producer's lock";

  const ProducerAdapterStats s = producer->adapter_stats();
  EXPECT_EQ(s.events, events.size());
  EXPECT_EQ(s.submit_to_ack.count, 2U) << "two records were acknowledged; the rejected one is not counted";
  EXPECT_GT(s.submit_to_ack.max_ns, Duration::zero());
  EXPECT_LE(s.submit_to_ack.p50_ns, s.submit_to_ack.max_ns);
}

}  // namespace
}  // namespace prodsm::test
