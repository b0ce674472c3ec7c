// SPDX-License-Identifier: Apache-2.0
// Per-operation cancellation on Asio (issue 21): a capacity wait of async_submit, and the
// waits of async_flush, async_close and a ticket's async_wait, end with `cancelled` when
// their handler's cancellation slot fires; what they waited for goes on.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <future>

#include "io_thread.hpp"
#include "liveness.hpp"
#include "prodsm/asio/producer.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

asio::ProducerOptions cancel_test_options(const std::string& url) {
  asio::ProducerOptions o;
  o.url = url;
  o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"cancel-test", 0, false};
  return o;
}

// R1: async_submit waits for capacity (then completes when durable); a wait past
// submit_timeout_ns fails with would_block; a cancelled wait fails with cancelled.
TEST(AsioTokens, AsyncSubmitWaitsForCapacityTimesOutAndCancels) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "capacity");
  auto options = cancel_test_options(url);
  options.producer.max_batch_bytes = 16;
  options.producer.max_unacked_bytes = 16;
  options.producer.linger = Linger::after(0ms);
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::vector<std::future<asio::RecordResult>> futures;
  for (int i = 0; i < 40; ++i) futures.push_back(producer.async_submit("0123456789\n", ::asio::use_future));
  for (auto& fut : futures) ASSERT_TRUE(fut.get().has_value());
  EXPECT_GT(producer.stats().capacity_waits, 0U);

  // Block the server for 1.5 s so capacity stays taken, then time out a waiter.
  const std::string path = ds::StreamUrl::parse(url)->path;
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + path + R"(","method":"POST","delayMs":1500})");
  auto options2 = options;
  options2.submit_timeout_ns = 200ms;
  auto slow = asio::Producer::create(io.io.get_executor(), options2).value();
  auto first = slow.async_submit("0123456789\n", ::asio::use_future);
  auto timed_out = slow.async_submit("0123456789\n", ::asio::use_future).get();
  ASSERT_FALSE(timed_out.has_value());
  EXPECT_EQ(timed_out.error().code, ErrorCode::would_block);
  ::asio::cancellation_signal signal;
  std::promise<asio::RecordResult> cancelled;
  slow.async_submit("0123456789\n", ::asio::bind_cancellation_slot(signal.slot(), [&](asio::RecordResult r) {
                      cancelled.set_value(std::move(r));
                    }));
  ::asio::post(io.io, [&] { signal.emit(::asio::cancellation_type::all); });
  auto c = cancelled.get_future().get();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::cancelled);
  EXPECT_TRUE(first.get().has_value());
  ASSERT_TRUE(slow.async_close(::asio::use_future).get().has_value());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  client.clear_faults(ReferenceServer::shared().url());
}

// C2 and P1 with async_submits waiting for capacity (the server holds the first
// acknowledgement 3 s): a plain submit does not overtake them (refused with would_block
// while they wait; before, it was accepted first), and async_close refuses them with
// `closed` at once, not when the room comes back or submit_timeout_ns passes.
TEST(AsioTokens, AsyncSubmitsWaitingForCapacityAreNotOvertakenAndAreRefusedClosedAtClose) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "waiting-order");
  auto options = cancel_test_options(url);
  options.producer.max_batch_bytes = 16;
  options.producer.max_unacked_bytes = 16;
  options.producer.linger = Linger::after(0ms);
  options.submit_timeout_ns = 10min;
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + ds::StreamUrl::parse(url)->path +
                                                           R"(","method":"POST","delayMs":3000,"count":1})");
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  auto first = producer.async_submit("0123456789\n", ::asio::use_future);
  auto waiting = producer.async_submit("waiting\n", ::asio::use_future);
  ASSERT_TRUE(eventually([&] { return producer.stats().capacity_waits == 1; }));
  auto overtaking = producer.submit("overtaking\n");
  ASSERT_FALSE(overtaking.has_value()) << "accepted before the async_submit that waits";
  EXPECT_EQ(overtaking.error().reason, RejectReason::would_block);
  const std::string_view many[] = {"x\n"};
  EXPECT_EQ(producer.submit_many(many).accepted, 0U);
  auto closed = producer.async_close(::asio::use_future);
  auto refused = waiting.get();
  EXPECT_NE(closed.wait_for(0s), std::future_status::ready) << "refused at close, not after it finished";
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::closed);
  EXPECT_TRUE(first.get().has_value());
  EXPECT_TRUE(closed.get().has_value());
  client.clear_faults(ReferenceServer::shared().url());
  EXPECT_EQ(client.read_all(url, false), "0123456789\n");
}

// R1, R2: async_submits waiting for capacity behind fire-and-forget records (no
// callback, so their batch's acknowledgement is delivered inside the drive) are retried
// when the room comes back and their batches go out at once. They stayed queued in the
// client (the drive had already sent its requests) until the delivery timeout.
TEST(AsioTokens, WaitersBehindFireAndForgetRecordsAreSentWhenRoomComesBack) {
  IoThread io;
  TestClient client;
  auto options = cancel_test_options(new_stream(client, "waiters-ff"));
  options.producer.linger = Linger::after(5ms);
  options.producer.max_batch_bytes = 64;
  options.producer.max_unacked_bytes = 64;
  options.producer.delivery_timeout_ns = 60s;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  int fire_and_forget = 0;
  while (producer.submit("ff-" + std::to_string(100000 + fire_and_forget) + "\n")) ++fire_and_forget;
  ASSERT_GT(fire_and_forget, 0);
  std::vector<std::future<asio::RecordResult>> waiters;
  for (int i = 0; i < 20; ++i) {
    waiters.push_back(producer.async_submit("w-" + std::to_string(1000000 + i) + "\n", ::asio::use_future));
  }
  for (auto& w : waiters) {
    const auto r = w.get();
    ASSERT_TRUE(r.has_value()) << r.error().describe();  // a stall ended in delivery_timeout
  }
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  std::string want;
  for (int i = 0; i < fire_and_forget; ++i) want += "ff-" + std::to_string(100000 + i) + "\n";
  for (int i = 0; i < 20; ++i) want += "w-" + std::to_string(1000000 + i) + "\n";
  EXPECT_EQ(client.read_all(options.url, false), want);
}

// R3, R2: at max_pending_records, with no linger timer, the waiting async_submits are
// accepted as the callbacks run: the refusal seals the partial batch that holds the
// records to deliver (before, nothing sent it and every waiter met the delivery timeout).
// The last group, accepted with no refusal after it, waits for the flush, as any partial
// batch does without a linger timer.
TEST(AsioTokens, MaxPendingRecordsWithoutALingerTimerStillDelivers) {
  IoThread io;
  TestClient client;
  auto options = cancel_test_options(new_stream(client, "pending-no-linger"));
  options.producer.linger = Linger::disabled();
  options.producer.delivery_timeout_ns = 60s;
  options.max_pending_records = 4;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::vector<std::future<asio::RecordResult>> records;
  for (int i = 0; i < 100; ++i) records.push_back(producer.async_submit("r\n", ::asio::use_future));
  for (int i = 0; i < 96; ++i) {  // 24 groups of 4, each sealed by the refusal after it
    const auto got = records[i].get();
    ASSERT_TRUE(got.has_value()) << "record " << i << ": " << got.error().describe();
  }
  // The last group is accepted once the 24th group's callbacks ran (a liveness bound).
  ASSERT_TRUE(eventually([&] { return producer.stats().core.records_accepted == 100; }));
  ASSERT_TRUE(producer.async_flush(::asio::use_future).get().has_value());
  for (int i = 96; i < 100; ++i) ASSERT_TRUE(records[i].get().has_value()) << "record " << i;
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(client.read_all(options.url, false).size(), 200U);
}

// F1, C1 with cancellation: while the server holds the batch for 1.5 s, a cancelled
// async_flush, ticket async_wait and async_close complete with `cancelled` (each handler
// once); the record is still acknowledged and a later flush and close succeed.
TEST(AsioTokens, FlushCloseAndTicketWaitsAreCancellableAndTheWorkGoesOn) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cancel-waits");
  const std::string path = ds::StreamUrl::parse(url)->path;
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + path + R"(","method":"POST","delayMs":1500})");
  auto producer = asio::Producer::create(io.io.get_executor(), cancel_test_options(url)).value();
  auto ticket = producer.async_submit_ticket("r\n", ::asio::use_future).get();
  ASSERT_TRUE(ticket.has_value()) << ticket.error().describe();

  std::atomic<int> calls{0};
  auto cancelled_wait = [&](auto start) {
    ::asio::cancellation_signal signal;
    std::promise<Error> got;
    start(::asio::bind_cancellation_slot(signal.slot(), [&](auto result) {
      ++calls;
      if (result) {
        got.set_value(make_error(ErrorCode::internal, Certainty::definite, false, "completed, not cancelled"));
      } else {
        got.set_value(result.error());
      }
    }));
    ::asio::post(io.io, [&] { signal.emit(::asio::cancellation_type::terminal); });
    const Error e = got.get_future().get();
    // The signal is emitted again after the wait ended: nothing runs twice.
    std::promise<void> emitted;
    ::asio::post(io.io, [&] {
      signal.emit(::asio::cancellation_type::terminal);
      emitted.set_value();
    });
    emitted.get_future().get();
    return e;
  };
  const Error flush = cancelled_wait([&](auto token) { producer.async_flush(std::move(token)); });
  EXPECT_EQ(flush.code, ErrorCode::cancelled) << flush.describe();
  EXPECT_NE(flush.message.find("async_flush"), std::string::npos) << flush.message;
  const Error wait = cancelled_wait([&](auto token) { ticket->async_wait(std::move(token)); });
  EXPECT_EQ(wait.code, ErrorCode::cancelled) << wait.describe();
  EXPECT_FALSE(ticket->ready()) << "the server still holds the batch";
  const Error close = cancelled_wait([&](auto token) { producer.async_close(std::move(token)); });
  EXPECT_EQ(close.code, ErrorCode::cancelled) << close.describe();
  EXPECT_EQ(calls.load(), 3);

  // The work went on: the record is acknowledged, the producer closes.
  auto outcome = ticket->async_wait(::asio::use_future).get();
  EXPECT_TRUE(outcome.has_value()) << outcome.error().describe();
  EXPECT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(calls.load(), 3) << "a cancelled handler is never completed again";
  client.clear_faults(ReferenceServer::shared().url());
}

// A cancel never replaces an outcome already decided: a flush or close refused or
// answered at once (here: after the close) gives that outcome even when the slot fires in
// the same handler; an emit of cancellation_type::none cancels nothing.
TEST(AsioTokens, ACancelNeverReplacesAnOutcomeAlreadyDecided) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "cancel-decided");
  auto producer = asio::Producer::create(io.io.get_executor(), cancel_test_options(url)).value();
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  auto start_and_cancel = [&](bool flush, ::asio::cancellation_type type) {
    std::promise<asio::VoidResult> got;
    ::asio::cancellation_signal signal;
    ::asio::post(io.io, [&] {
      auto h = ::asio::bind_cancellation_slot(signal.slot(), [&](asio::VoidResult r) { got.set_value(r); });
      if (flush) {
        producer.async_flush(std::move(h));
      } else {
        producer.async_close(std::move(h));
      }
      signal.emit(type);  // before the posted outcome ran
    });
    return got.get_future().get();
  };
  const auto flush = start_and_cancel(true, ::asio::cancellation_type::terminal);
  ASSERT_FALSE(flush.has_value());
  EXPECT_EQ(flush.error().code, ErrorCode::closed) << flush.error().describe();
  const auto close = start_and_cancel(false, ::asio::cancellation_type::terminal);
  EXPECT_TRUE(close.has_value()) << "C1: a second close gives the first one's result";
  const auto none = start_and_cancel(true, ::asio::cancellation_type::none);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, ErrorCode::closed);
}

}  // namespace
}  // namespace prodsm::test
