// SPDX-License-Identifier: Apache-2.0
// The Asio adapter's own clauses (A1–A4, C4, C5) and its completion tokens, against the
// reference server.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "fake_server.hpp"
#include "io_thread.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

asio::ProducerOptions options_for(const std::string& url) {
  asio::ProducerOptions o;
  o.url = url;
  o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"adapter-test", 0, false};
  return o;
}

// A1: plain callbacks run in ticket order from one FIFO dispatcher, even with records
// submitted from two threads.
// E2: a server may close an idle keep-alive connection at any time (RFC 9112 section
// 9.3.1). Its FIN arrives while the session's strand is busy (the first response's
// handler waits 100 ms, so the read that would see the end of file waits too) and before
// the next request is written: the session looks at the socket first, and the request,
// never written, goes out on a new connection (the pool queues it again); written on the
// closed connection it would be lost and count as possibly applied (indefinite).
TEST(E2, ARequestIsNotWrittenOnAConnectionTheServerClosedWhileIdle) {
  FakeServer fake([](int) {
    return FakeServer::Reply{FakeServer::Action::respond_and_close, FakeServer::ok_plain().bytes};
  });
  IoThread io;
  auto session = asio::Session::create(io.io.get_executor(), ds::StreamUrl::parse(fake.url()).value()).value();
  expect_no_write_into_a_connection_closed_while_idle(session, fake);
  session->close();
}

TEST(A1, CallbacksRunInTicketOrderFromOneDispatcher) {
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "a1"));
  options.producer.max_batch_records = 7;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::mutex mu;
  std::vector<std::uint64_t> order;
  std::atomic<int> concurrent{0};
  std::atomic<bool> overlapped{false};
  auto submit_many = [&] {
    for (int i = 0; i < 500; ++i) {
      auto r = producer.submit_blocking("r\n", 10s, [&](asio::RecordResult result) {
        if (concurrent.fetch_add(1) != 0) overlapped = true;
        ASSERT_TRUE(result.has_value());
        {
          std::lock_guard lock(mu);
          order.push_back(result->ticket.value);
        }
        concurrent.fetch_sub(1);
      });
      ASSERT_TRUE(r.has_value());
    }
  };
  std::thread other(submit_many);
  submit_many();
  other.join();
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  ASSERT_EQ(order.size(), 1000U);
  for (std::size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], i) << "ticket order";
  EXPECT_FALSE(overlapped) << "one dispatcher: callbacks never overlap";
}

// A1: an injected executor runs the callbacks (still in order).
TEST(A1, InjectedExecutorRunsTheCallbacks) {
  // The callback context is declared first so it is destroyed last: the producer's I/O
  // context may still hold handlers bound to the callback strand until it is joined.
  IoThread callbacks;
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "a1-exec"));
  options.callback_executor = callbacks.io.get_executor();
  std::atomic<int> on_callback_thread{0};
  {
    auto producer = asio::Producer::create(io.io.get_executor(), options).value();
    const auto callback_thread = callbacks.thread.get_id();
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(producer
                      .submit("r\n",
                              [&](asio::RecordResult) {
                                if (std::this_thread::get_id() == callback_thread) ++on_callback_thread;
                              })
                      .has_value());
    }
    ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  }
  // The last reference to the producer may go on the callback thread, whose session then
  // posts its close to `io` (TSan in CI: a use after free when `io` went first).
  quiesce(io, callbacks);
  EXPECT_EQ(on_callback_thread.load(), 50);
}

// A2: flush and close complete only after the callbacks of the records they cover ran.
TEST(A2, FlushCompletesAfterCoveredCallbacksRan) {
  IoThread io;
  TestClient client;
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(new_stream(client, "a2"))).value();
  std::atomic<int> ran{0};
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(producer
                    .submit("r\n",
                            [&](asio::RecordResult) {
                              std::this_thread::sleep_for(100us);  // a slow callback
                              ++ran;
                            })
                    .has_value());
  }
  ASSERT_TRUE(producer.async_flush(::asio::use_future).get().has_value());
  EXPECT_EQ(ran.load(), 300);
  ASSERT_TRUE(producer.submit("last\n", [&](asio::RecordResult) { ++ran; }).has_value());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(ran.load(), 301);
}

// A3: an exception from a callback is caught and reported; later callbacks still run.
TEST(A3, CallbackExceptionIsCaughtAndReported) {
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "a3"));
  std::atomic<int> reported{0};
  options.on_callback_exception = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& err) {
      if (std::string(err.what()) == "boom") ++reported;
    }
  };
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::atomic<int> after{0};
  ASSERT_TRUE(producer.submit("a\n", [](asio::RecordResult) { throw std::runtime_error("boom"); }).has_value());
  ASSERT_TRUE(producer.submit("b\n", [&](asio::RecordResult r) { after += r.has_value() ? 1 : 0; }).has_value());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(reported.load(), 1);
  EXPECT_EQ(after.load(), 1);
  EXPECT_EQ(producer.stats().callback_exceptions, 1U);
}

// A3 for completion tokens: a plain lambda given as the token has no executor of its
// own; it runs on the callback strand (as an Asio I/O object runs such handlers on its
// executor), so a throw is caught and reported like a callback's. It ran on the system
// executor, where a throw ended the process. Every kind of operation, in ticket order.
TEST(A3, ATokenHandlerThatThrowsIsCaughtAndReported) {
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "a3-token"));
  std::atomic<int> reported{0};
  options.on_callback_exception = [&](std::exception_ptr) { ++reported; };
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::vector<int> order;  // on the callback strand only
  std::promise<void> waited;
  producer.async_submit("a\n", [&](asio::RecordResult r) {
    order.push_back(r.has_value() ? 1 : -1);
    throw std::runtime_error("submit");
  });
  producer.async_submit_ticket("b\n", [&](tl::expected<asio::RecordTicket, Error> t) {
    order.push_back(t.has_value() ? 2 : -2);
    if (t) {
      t->async_wait([&](asio::RecordResult) { throw std::runtime_error("first wait"); });
      t->async_wait([&](asio::RecordResult r) {  // runs although the first wait threw
        order.push_back(r.has_value() ? 3 : -3);
        waited.set_value();
        throw std::runtime_error("ticket wait");
      });
    }
    throw std::runtime_error("ticket");
  });
  producer.async_flush([&](asio::VoidResult r) {
    order.push_back(r.has_value() ? 4 : -4);
    throw std::runtime_error("flush");
  });
  waited.get_future().wait();
  // Posted completions too (complete_later): a wait on a ticket already complete, and a
  // cancelled flush whose handler gets `cancelled` at once.
  std::promise<asio::RecordTicket> done_ticket;
  producer.async_submit_ticket("c\n", [&](tl::expected<asio::RecordTicket, Error> t) { done_ticket.set_value(*t); });
  auto late = done_ticket.get_future().get();
  ASSERT_TRUE(producer.async_flush(::asio::use_future).get().has_value());
  std::promise<void> late_ran;
  late.async_wait([&](asio::RecordResult) {
    late_ran.set_value();
    throw std::runtime_error("late wait");
  });
  late_ran.get_future().wait();
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + ds::StreamUrl::parse(options.url)->path +
                                                           R"(","method":"POST","delayMs":1000,"count":1})");
  ASSERT_TRUE(producer.submit("d\n"));  // held by the server for a second: the flush waits
  ::asio::cancellation_signal cancel;
  std::promise<bool> cancelled_ran;
  producer.async_flush(::asio::bind_cancellation_slot(cancel.slot(), [&](asio::VoidResult r) {
    cancelled_ran.set_value(!r && r.error().code == ErrorCode::cancelled);
    throw std::runtime_error("cancelled flush");
  }));
  ::asio::post(io.io, [&] { cancel.emit(::asio::cancellation_type::all); });
  EXPECT_TRUE(cancelled_ran.get_future().get()) << "the cancel's posted completion";
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  client.clear_faults(ReferenceServer::shared().url());
  ::asio::post(io.io, [] {});  // nothing left behind on the strand
  // submit, acceptance, flush, the record's two waits, the late wait, the cancelled flush.
  EXPECT_EQ(reported.load(), 7);
  EXPECT_EQ(producer.stats().callback_exceptions, 7U);
  ASSERT_GE(order.size(), 4U);
  EXPECT_EQ(order.front(), 2) << "accepted first";
  EXPECT_EQ(client.read_all(options.url, false), "a\nb\nc\nd\n");
}

// A1: a producer's callbacks run on a strand of their own over the producer's executor,
// not on its session's strand: on an io_context with two threads, a callback of X that
// waits for Y's acknowledgement (Y attached to the same session) gets it. With the
// callbacks on the session's strand, X's callback held up every read on the session
// until its wait gave up.
TEST(A1, ASlowCallbackDoesNotHoldUpItsSessionsIo) {
  ::asio::io_context io;
  auto guard = ::asio::make_work_guard(io);
  std::thread t1([&] { io.run(); });
  std::thread t2([&] { io.run(); });
  TestClient client;
  const std::string url_x = new_stream(client, "a1-slow-x");
  const std::string url_y = new_stream(client, "a1-slow-y");
  auto session = asio::Session::create(io.get_executor(), ds::StreamUrl::parse(url_x).value()).value();
  auto ox = options_for(url_x);
  ox.producer.protocol.idempotent->producer_id = "a1-slow-x";
  auto oy = options_for(url_y);
  oy.producer.protocol.idempotent->producer_id = "a1-slow-y";
  auto x = asio::Producer::attach(session, ox).value();
  auto y = asio::Producer::attach(session, oy).value();
  std::promise<void> y_acked;
  auto y_done = y_acked.get_future().share();
  std::promise<bool> x_saw;
  std::promise<void> x_started;
  ASSERT_TRUE(x.submit("x\n", [&](asio::RecordResult) {
    x_started.set_value();                                               // Y submits only now, while this callback runs
    x_saw.set_value(y_done.wait_for(30s) == std::future_status::ready);  // a liveness bound
  }));
  x_started.get_future().wait();
  ASSERT_TRUE(y.submit("y\n", [&](asio::RecordResult r) {
    if (r) y_acked.set_value();
  }));
  EXPECT_TRUE(x_saw.get_future().get()) << "Y's acknowledgement waited behind X's callback";
  ASSERT_TRUE(x.async_close(::asio::use_future).get().has_value());
  ASSERT_TRUE(y.async_close(::asio::use_future).get().has_value());
  session->close();
  guard.reset();
  t1.join();
  t2.join();
}

// A4: a refused submit registers no callback; an accepted one gets exactly one.
TEST(A4, RefusedSubmitNeverCallsItsCallback) {
  IoThread io;
  TestClient client;
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(new_stream(client, "a4"))).value();
  std::atomic<int> calls{0};
  ASSERT_TRUE(producer.submit("a\n", [&](asio::RecordResult) { ++calls; }).has_value());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  // The callback owns `token`; a registered callback would keep it alive.
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  auto refused = producer.submit("b\n", [&calls, token = std::move(token)](asio::RecordResult) { ++calls; });
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::closed);
  EXPECT_TRUE(watch.expired()) << "the refused submit kept its callback";
  auto again = producer.async_close(::asio::use_future).get();  // C1: same result
  EXPECT_TRUE(again.has_value());
  EXPECT_EQ(calls.load(), 1);
}

// R3: max_pending_records bounds the records accepted whose callback has not run: a slow
// callback makes submit refuse (would_block, naming the limit) instead of growing the
// callback queue, and room comes back once the callbacks ran.
TEST(R3, AsioMaxPendingRecordsBoundsRecordsAwaitingTheirCallback) {
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "pending"));
  options.max_pending_records = 4;
  options.producer.linger = Linger::after(0ms);
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  std::promise<void> release;
  auto gate = release.get_future().share();
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(producer.submit("r\n", [gate, &ran](asio::RecordResult) {
      gate.wait();  // the first callback holds the callback strand
      ++ran;
    }));
  }
  auto refused = producer.submit("over\n");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::would_block);
  EXPECT_EQ(refused.error().detail, "max_pending_records reached");
  release.set_value();
  auto accepted = producer.submit_blocking("after\n", 60s);
  ASSERT_TRUE(accepted.has_value()) << "room came back once the callbacks ran";
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(ran.load(), 4);
}

// Completion tokens: use_future, deferred, plain callbacks (use_awaitable below).
TEST(AsioTokens, FutureDeferredAndCallbackAllWork) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "tokens");
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(url)).value();
  // use_future
  auto f = producer.async_submit("future\n", ::asio::use_future);
  // callback token
  std::promise<bool> cb;
  producer.async_submit("callback\n", [&](asio::RecordResult r) { cb.set_value(r.has_value()); });
  // deferred: nothing happens until the deferred operation is invoked
  auto op = producer.async_flush(asio::deferred);
  std::promise<bool> deferred_done;
  std::move(op)([&](asio::VoidResult r) { deferred_done.set_value(r.has_value()); });
  auto fr = f.get();
  ASSERT_TRUE(fr.has_value()) << fr.error().describe();
  EXPECT_FALSE(fr->next_offset().empty());
  EXPECT_TRUE(cb.get_future().get());
  EXPECT_TRUE(deferred_done.get_future().get());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(client.read_all(url, false), "future\ncallback\n");
}

// use_awaitable inside a C++20 coroutine. (clang-14 with libstdc++ has no usable
// <coroutine>; Asio then has no awaitable support and the test is reported skipped.)
TEST(AsioTokens, UseAwaitableInACoroutine) {
#if defined(ASIO_HAS_CO_AWAIT)
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "awaitable");
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(url)).value();
  std::promise<std::string> awaited;
  ::asio::co_spawn(
      io.io,
      [&]() -> ::asio::awaitable<void> {
        auto r = co_await producer.async_submit("awaitable\n", ::asio::use_awaitable);
        auto flushed = co_await producer.async_flush(::asio::use_awaitable);
        awaited.set_value(r && flushed ? r->next_offset() : std::string{});
      },
      ::asio::detached);
  EXPECT_FALSE(awaited.get_future().get().empty());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(client.read_all(url, false), "awaitable\n");
#else
  GTEST_SKIP() << "this compiler's standard library has no C++20 coroutine support for Asio";
#endif
}

// Submit, then acknowledgement (P2, A4): async_submit_ticket completes at acceptance with
// a RecordTicket, so a coroutine awaiting it per record keeps many records in a batch;
// each ticket's async_wait then gives the record's outcome, in ticket order (P3).
TEST(AsioTokens, SubmitTicketThenAwaitTheAcknowledgement) {
#if defined(ASIO_HAS_CO_AWAIT)
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "submit-ticket");
  auto options = options_for(url);
  options.producer.linger = Linger::after(50ms);  // a batch stays open while the loop runs
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  constexpr int kRecords = 500;
  std::promise<std::vector<std::uint64_t>> awaited;
  ::asio::co_spawn(
      io.io,
      [&]() -> ::asio::awaitable<void> {
        std::vector<asio::RecordTicket> tickets;
        for (int i = 0; i < kRecords; ++i) {
          auto t = co_await producer.async_submit_ticket(std::to_string(i) + "\n", ::asio::use_awaitable);
          if (!t) break;
          tickets.push_back(*t);
        }
        std::vector<std::uint64_t> ids;
        for (auto& t : tickets) {
          auto r = co_await t.async_wait(::asio::use_awaitable);  // durable, or why not
          if (r && t.ready() && t.result()) ids.push_back(t.id().value);
        }
        awaited.set_value(std::move(ids));
      },
      ::asio::detached);
  const auto ids = awaited.get_future().get();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kRecords));
  for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i);
  // One batch per record is what awaiting the acknowledgement per record gives.
  EXPECT_LT(producer.stats().core.batches_sealed, static_cast<std::uint64_t>(kRecords / 2));
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  std::string expected;
  for (int i = 0; i < kRecords; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(client.read_all(url, false), expected);
#else
  GTEST_SKIP() << "this compiler's standard library has no C++20 coroutine support for Asio";
#endif
}

// async_submit_ticket's refusals (A4) and a ticket waited for from another thread.
TEST(AsioTokens, SubmitTicketRefusalsAndAFutureWait) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "submit-ticket-refused");
  auto producer = asio::Producer::create(io.io.get_executor(), options_for(url)).value();
  auto empty = producer.async_submit_ticket("", ::asio::use_future).get();
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::invalid_record);
  auto ticket = producer.async_submit_ticket("x\n", ::asio::use_future).get();
  ASSERT_TRUE(ticket) << ticket.error().describe();
  auto outcome = ticket->async_wait(::asio::use_future).get();
  ASSERT_TRUE(outcome) << outcome.error().describe();
  EXPECT_TRUE(ticket->ready());
  auto again = ticket->async_wait(::asio::use_future).get();  // a ready ticket answers every wait
  EXPECT_TRUE(again.has_value());
  ASSERT_TRUE(producer.async_close(::asio::use_future).get().has_value());
  auto late = producer.async_submit_ticket("y\n", ::asio::use_future).get();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::closed);  // C2
  EXPECT_EQ(client.read_all(url, false), "x\n");
}

// P1, P2, R3 with submit_many on Asio (no callbacks, never waits): records land once
// and in order; the gauges count the open batch and drain to zero after the flush.
TEST(SubmitMany, AsioRecordsLandInOrderAndTheGaugesDrain) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "submit-many");
  auto options = options_for(url);
  options.producer.max_batch_bytes = 256;
  options.producer.linger = Linger::after(60s);  // in effect only size and flush seal
  auto created = asio::Producer::create(io.io.get_executor(), options);
  ASSERT_TRUE(created) << created.error();
  auto& p = *created;
  const std::vector<std::string_view> first{"a\n", "b\n"};
  auto head = p.submit_many(first);
  ASSERT_EQ(head.accepted, 2U);
  EXPECT_FALSE(head.refused);
  auto gauges = p.stats();
  EXPECT_EQ(gauges.pending_records, 2U);
  EXPECT_EQ(gauges.unacked_bytes, 4U);
  EXPECT_EQ(gauges.unacked_batches, 1U);

  std::string expected = "a\nb\n";
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) lines.push_back("r" + std::to_string(i) + "\n");
  std::size_t next = 0;
  while (next < lines.size()) {
    const std::size_t n = std::min<std::size_t>(17, lines.size() - next);
    std::vector<std::string_view> views(lines.begin() + static_cast<std::ptrdiff_t>(next),
                                        lines.begin() + static_cast<std::ptrdiff_t>(next + n));
    auto r = p.submit_many(views);
    for (std::size_t i = 0; i < r.accepted; ++i) expected += lines[next + i];
    next += r.accepted;
    if (r.refused) {  // A4: refused now (would_block at max_unacked_bytes); wait and go on
      ASSERT_EQ(r.refused->reason, RejectReason::would_block) << r.refused->describe();
      ASSERT_TRUE(p.async_flush(::asio::use_future).get().has_value());
    }
  }
  ASSERT_TRUE(p.async_flush(::asio::use_future).get().has_value());
  const auto drained = p.stats();
  EXPECT_EQ(drained.pending_records, 0U);
  EXPECT_EQ(drained.unacked_bytes, 0U);
  EXPECT_EQ(drained.unacked_batches, 0U);
  EXPECT_EQ(drained.in_flight_batches, 0U);
  EXPECT_EQ(drained.core.records_succeeded, 3002U);
  ASSERT_TRUE(p.async_close(::asio::use_future).get().has_value());
  EXPECT_EQ(client.read_all(url, false), expected);
}

// C4: an owned session is closed by close(); an attached one is left open.
TEST(C4, OwnedSessionIsClosedAttachedSessionIsLeftOpen) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "c4");
  auto owned = asio::Producer::create(io.io.get_executor(), options_for(url)).value();
  auto owned_session = owned.session();
  ASSERT_TRUE(owned.async_close(::asio::use_future).get().has_value());
  auto after = owned_session->async_exchange(ds::encode_head(owned.url(), {}), true, ::asio::use_future).get();
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code, ErrorCode::closed);

  auto session = asio::Session::create(io.io.get_executor(), *ds::StreamUrl::parse(url)).value();
  auto options = options_for(url);
  options.producer.protocol.idempotent->producer_id = "attached";
  auto attached = asio::Producer::attach(session, options).value();
  ASSERT_TRUE(attached.submit("x\n").has_value());
  ASSERT_TRUE(attached.async_close(::asio::use_future).get().has_value());
  auto head = asio::async_head_stream(session, *ds::StreamUrl::parse(url), {}, ::asio::use_future).get();
  ASSERT_TRUE(head.has_value()) << head.error().describe();
  EXPECT_FALSE(head->closed) << "closing the producer never closes the stream";
  session->close();
}

// C5: destroying the producer without close fails the unresolved records with aborted.
TEST(C5, DestroyingWithoutCloseAbortsUnresolvedRecords) {
  IoThread io;
  TestClient client;
  auto options = options_for(new_stream(client, "c5"));
  options.producer.linger = Linger::after(1h);
  options.producer.delivery_timeout_ns = 2h;
  std::promise<asio::RecordResult> outcome;
  {
    auto producer = asio::Producer::create(io.io.get_executor(), options).value();
    ASSERT_TRUE(
        producer.submit("never sent\n", [&](asio::RecordResult r) { outcome.set_value(std::move(r)); }).has_value());
  }
  auto r = outcome.get_future().get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::aborted);
  EXPECT_EQ(r.error().certainty, Certainty::definite) << "never sent";
}

// E4 at the transport: a server that is not there gives definite, retryable
// `unavailable` failures, retried up to max_attempts, then terminal.
TEST(E4, UnreachableServerFailsDefiniteAfterBoundedRetries) {
  IoThread io;
  auto options = options_for("http://127.0.0.1:1/nowhere");
  options.producer.retry.max_attempts = 3;
  options.producer.retry.backoff_initial_ns = 10ms;
  options.producer.retry.backoff_max_ns = 20ms;
  auto producer = asio::Producer::create(io.io.get_executor(), options).value();
  auto f = producer.async_submit("x\n", ::asio::use_future);
  (void)producer.async_flush(::asio::use_future);
  auto r = f.get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_TRUE(r.error().retryable);
  EXPECT_EQ(producer.stats().core.sends, 3U);
}

// E6 (AdapterProducer::due_now, shared by both adapters): an input that arrives after a
// delivery deadline but before the adapter's timer ran — here the io_context never runs,
// so no timer and no socket work can — finds the deadline applied, as if the timer had
// run first: the producer failed with delivery_timeout and refuses the submit with it.
TEST(E6, AnInputAfterADeadlineFindsItAppliedBeforeTheTimerRan) {
  ::asio::io_context never_run;
  auto options = options_for("http://127.0.0.1:1/never-reached");
  options.producer.linger = Linger::disabled();
  options.producer.delivery_timeout_ns = 2ms;
  auto producer = asio::Producer::create(never_run.get_executor(), options).value();
  ASSERT_TRUE(producer.submit("a\n").has_value());
  EXPECT_EQ(producer.stats().core.records_failed, 0U) << "the deadline is still ahead";
  const auto deadline = std::chrono::steady_clock::now() + 2ms;
  while (std::chrono::steady_clock::now() <= deadline) std::this_thread::sleep_for(1ms);  // the input comes late
  auto late = producer.submit("b\n");
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().reason, RejectReason::failed);
  ASSERT_TRUE(late.error().terminal.has_value());
  EXPECT_EQ(late.error().terminal->code, ErrorCode::delivery_timeout);
  EXPECT_EQ(producer.stats().core.records_failed, 1U);
  EXPECT_EQ(producer.stats().core.sends, 0U) << "linger disabled, no flush: nothing was ever sent";
}

// Configuration errors name the option.
TEST(B3, AsioOptionsAreValidatedWithTheirNames) {
  IoThread io;
  auto bad_url = asio::Producer::create(io.io.get_executor(), options_for("ftp://x/y"));
  ASSERT_FALSE(bad_url.has_value());
  EXPECT_NE(bad_url.error().find("url:"), std::string::npos);
  auto json_mismatch = options_for("http://127.0.0.1:9/s");
  json_mismatch.content_type = "application/json";
  auto r = asio::Producer::create(io.io.get_executor(), json_mismatch);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("content_type"), std::string::npos);
  auto bad_core = options_for("http://127.0.0.1:9/s");
  bad_core.producer.max_in_flight = 0;
  r = asio::Producer::create(io.io.get_executor(), bad_core);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("max_in_flight"), std::string::npos);
  auto plain_pool = options_for("http://127.0.0.1:9/s");
  plain_pool.producer.protocol.idempotent.reset();
  plain_pool.session.mode = asio::ConnectionMode::pool;
  r = asio::Producer::create(io.io.get_executor(), plain_pool);
  ASSERT_FALSE(r.has_value()) << "plain appends over pooled connections would reorder";
  // E4 on attach: the session's mode is the one that runs, not the producer's own
  // (ignored) session options. Attached to a pool session, plain appends with more than
  // one in flight reordered records while every result said ok.
  asio::SessionOptions pool;
  pool.mode = asio::ConnectionMode::pool;
  auto pool_session =
      asio::Session::create(io.io.get_executor(), ds::StreamUrl::parse("http://127.0.0.1:9/s").value(), pool).value();
  auto plain = options_for("http://127.0.0.1:9/s");
  plain.producer.protocol.idempotent.reset();  // its own session options: pipelined
  auto attached = asio::Producer::attach(pool_session, plain);
  ASSERT_FALSE(attached.has_value()) << "attached to pooled connections, plain appends would reorder";
  EXPECT_NE(attached.error().find("over pooled connections"), std::string::npos) << attached.error();
  plain.producer.max_in_flight = 1;
  EXPECT_TRUE(asio::Producer::attach(pool_session, plain).has_value()) << "one in flight keeps the order";
  pool_session->close();
  EXPECT_TRUE(pool_session->closed());
  auto on_closed = asio::Producer::attach(pool_session, plain);
  ASSERT_FALSE(on_closed.has_value()) << "a closed session is refused at attach, not at the first flush";
  EXPECT_NE(on_closed.error().find("session: it is closed"), std::string::npos) << on_closed.error();
  auto header = options_for("http://127.0.0.1:9/s");
  header.extra_headers.push_back({"X-Evil", "a\r\nInjected: 1"});
  r = asio::Producer::create(io.io.get_executor(), header);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("extra_headers"), std::string::npos);
}

}  // namespace
}  // namespace prodsm::test

namespace prodsm::test {
namespace {

// S7 at the transport: a HEAD response on a reused keep-alive connection has no body;
// the parser must know before the bytes arrive. (Before the fix the response waited
// for the server's 5 s idle close; 3 s is the bound that tells the two apart.)
TEST(Session, HeadOnReusedConnectionCompletesWithoutWaitingForABody) {
  IoThread io;
  TestClient client;
  const std::string url = new_stream(client, "head");
  const auto u = *ds::StreamUrl::parse(url);
  auto session = asio::Session::create(io.io.get_executor(), u).value();
  auto put = asio::async_create_stream(session, u, "application/octet-stream", {}, {}, ::asio::use_future).get();
  ASSERT_TRUE(put.has_value());
  auto head = asio::async_head_stream(session, u, {}, ::asio::use_future);
  ASSERT_EQ(head.wait_for(3s), std::future_status::ready);
  auto r = head.get();
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(r->content_type, "application/octet-stream");
  EXPECT_EQ(session->stats().connections_opened, 1U) << "the same connection was reused";
  session->close();
}

}  // namespace
}  // namespace prodsm::test
