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
