// SPDX-License-Identifier: Apache-2.0
// The blocking adapter's own clauses (A1–A4, C4, C5, R1) and its ticket waiting, against
// the reference server (A2 and C4 also against a scripted fake server). Its transport
// classification (E2, E4, S7) and option checks (B3) are in test_blocking_transport.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "blocking_test_support.hpp"
#include "liveness.hpp"
#include "prodsm/blocking/producer.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

/// A small thread pool used as an injected executor: tasks may run on any of its threads.
class ThreadPool {
 public:
  explicit ThreadPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  blocking::Executor executor() {
    return [this](std::function<void()> task) {
      {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(task));
      }
      cv_.notify_one();
    };
  }
  [[nodiscard]] bool owns_current_thread() const {
    for (const auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) return true;
    }
    return false;
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// P2 and P3 with four submitting threads, on the recorded completion history: every
// accepted record completes exactly once, refused ones never, in ticket order, from one
// dispatcher thread (A1); each thread's flushes cover its own earlier records (P1 cut,
// A2); the stream holds the records in ticket order (requests leave in seal order).
TEST(P2, FourSubmittingThreadsEveryAcceptedRecordCompletesOnceInTicketOrder) {
  TestClient client;
  const std::string url = new_stream(client, "four-threads");
  auto options = options_for(url);
  options.producer.linger = Linger::after(1ms);
  options.producer.max_batch_bytes = 1024;
  options.producer.max_unacked_bytes = 4096;  // submitters wait for capacity (R1)
  auto producer = blocking::Producer::create(options).value();
  // The first append is answered after 300 ms, so the submitters fill the 4 KiB and wait
  // whatever the machine's speed (under TSan a fast server once kept up with them).
  const std::string path = ds::StreamUrl::parse(url)->path;
  client.inject_fault(ReferenceServer::shared().url(),
                      R"({"path":")" + path + R"(","method":"POST","delayMs":300,"count":1})");

  struct Entry {
    std::uint64_t ticket;
    bool ok;
    std::thread::id thread;
  };
  std::mutex mu;
  std::vector<Entry> history;
  std::map<std::uint64_t, std::string> record_of;  // ticket -> record
  std::atomic<int> refused_callbacks{0};
  std::atomic<int> refused{0};
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};

  auto submitter = [&](int thread_index) {
    std::vector<blocking::RecordTicket> mine;
    for (int i = 0; i < 2000; ++i) {
      if (i % 500 == 250) {  // an empty record is refused (B5): no ticket, no callback
        auto r = producer.submit("", [&](const blocking::RecordResult&) { ++refused_callbacks; });
        EXPECT_FALSE(r.has_value());
        ++refused;
      }
      std::string record = "t" + std::to_string(thread_index) + "-" + std::to_string(i) + "\n";
      auto r = producer.submit(record, [&](const blocking::RecordResult& result) {
        if (running.fetch_add(1) != 0) overlapped = true;
        {
          std::lock_guard lock(mu);
          history.push_back({result ? result->ticket.value : ~0ULL, result.has_value(), std::this_thread::get_id()});
        }
        running.fetch_sub(1);
      });
      ASSERT_TRUE(r.has_value()) << to_string(r.error().reason);
      {
        std::lock_guard lock(mu);
        record_of[r->id().value] = record;
      }
      mine.push_back(*r);
      if (i % 500 == 499) {
        ASSERT_TRUE(producer.flush(kWait).has_value());
        for (const auto& t : mine) ASSERT_TRUE(t.ready()) << "A2: a flush covers this thread's earlier records";
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(submitter, t);
  for (auto& t : threads) t.join();
  ASSERT_TRUE(producer.close(kWait).has_value());

  ASSERT_EQ(history.size(), 8000U) << "P2: one completion per accepted record";
  ASSERT_EQ(record_of.size(), 8000U);
  std::string expected;
  for (std::size_t i = 0; i < history.size(); ++i) {
    ASSERT_TRUE(history[i].ok);
    ASSERT_EQ(history[i].ticket, i) << "P3: completions in ticket order, each ticket once";
    ASSERT_EQ(history[i].thread, history[0].thread) << "A1: one dispatcher thread";
    expected += record_of.at(i);
  }
  EXPECT_FALSE(overlapped) << "A1: callbacks never overlap";
  EXPECT_EQ(refused.load(), 16);
  EXPECT_EQ(refused_callbacks.load(), 0) << "P2/A4: a refused submit never completes";
  EXPECT_GT(producer.stats().capacity_waits, 0U) << "the submitters did wait for capacity";
  EXPECT_EQ(client.read_all(url, false), expected) << "the stream is in ticket order";
}

// A1: with an injected executor (a pool of three threads) the callbacks run on it, one
// at a time, in ticket order.
TEST(A1, BlockingInjectedExecutorRunsCallbacksInOrderOneAtATime) {
  TestClient client;
  ThreadPool pool(3);
  auto options = options_for(new_stream(client, "a1-exec"));
  options.callback_executor = pool.executor();
  options.producer.max_batch_records = 5;
  auto producer = blocking::Producer::create(options).value();
  std::mutex mu;
  std::vector<std::uint64_t> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int> off_pool{0};
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(producer
                    .submit("r\n",
                            [&](const blocking::RecordResult& r) {
                              if (running.fetch_add(1) != 0) overlapped = true;
                              if (!pool.owns_current_thread()) ++off_pool;
                              std::lock_guard lock(mu);
                              order.push_back(r ? r->ticket.value : ~0ULL);
                              running.fetch_sub(1);
                            })
                    .has_value());
  }
  ASSERT_TRUE(producer.close(kWait).has_value());
  ASSERT_EQ(order.size(), 300U);
  for (std::size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], i);
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(off_pool.load(), 0);
}

// A1: an executor that runs the task inline, inside the call, would deadlock the first
// flush (the producer posts while holding its lock, and the completion takes it again).
// create() and attach() refuse it, naming the option; an executor that queues is taken.
TEST(A1, BlockingExecutorThatRunsTasksInlineIsRefusedAtCreate) {
  TestClient client;
  auto options = options_for(new_stream(client, "a1-inline"));
  options.callback_executor = [](std::function<void()> task) { task(); };
  auto refused = blocking::Producer::create(options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().find("callback_executor: it ran the task inline"), std::string::npos) << refused.error();
  auto session = blocking::Session::create(ds::StreamUrl::parse(options.url).value()).value();
  auto refused_attach = blocking::Producer::attach(session, options);
  ASSERT_FALSE(refused_attach.has_value());
  EXPECT_NE(refused_attach.error().find("callback_executor"), std::string::npos) << refused_attach.error();
  ThreadPool pool(1);
  options.callback_executor = pool.executor();
  auto taken = blocking::Producer::create(options);
  ASSERT_TRUE(taken.has_value()) << taken.error();
  ASSERT_TRUE(taken->submit("r\n").has_value());
  EXPECT_TRUE(taken->close(kWait).has_value());
}

// A2: flush and close return only after the callbacks of the records they cover ran; a
// ticket turns ready after its callback ran.
TEST(A2, BlockingFlushAndCloseReturnAfterCoveredCallbacksRan) {
  TestClient client;
  auto producer = blocking::Producer::create(options_for(new_stream(client, "a2"))).value();
  std::atomic<int> ran{0};
  std::vector<blocking::RecordTicket> tickets;
  for (int i = 0; i < 300; ++i) {
    auto t = producer.submit("r\n", [&](const blocking::RecordResult&) {
      std::this_thread::sleep_for(100us);  // a slow callback
      ++ran;
    });
    ASSERT_TRUE(t.has_value());
    tickets.push_back(*t);
  }
  auto first = tickets.front().wait(kWait);
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(ran.load(), 1) << "the ticket turned ready after its callback";
  ASSERT_TRUE(producer.flush(kWait).has_value());
  EXPECT_EQ(ran.load(), 300);
  ASSERT_TRUE(producer.submit("last\n", [&](const blocking::RecordResult&) { ++ran; }).has_value());
  ASSERT_TRUE(producer.close(kWait).has_value());
  EXPECT_EQ(ran.load(), 301);
}

// A1, A2: outcomes are published in ticket order, each after its own callback: inside a
// record's callback every earlier ticket is ready — one of the same batch too, with or
// without a callback of its own.
TEST(A2, BlockingInsideACallbackEveryEarlierTicketOfItsBatchIsReady) {
  TestClient client;
  auto options = options_for(new_stream(client, "a2-ready"));
  options.producer.linger = Linger::after(std::chrono::seconds{60});  // one batch, sent by the flush
  auto producer = blocking::Producer::create(options).value();
  std::optional<blocking::RecordTicket> first;
  std::optional<blocking::RecordTicket> second;
  std::optional<blocking::RecordTicket> third;
  std::vector<std::string> seen;  // written by the dispatcher, read after flush()
  auto expect_ready = [&](const char* who, const std::optional<blocking::RecordTicket>& t) {
    if (!t->ready()) seen.push_back(std::string(who) + " not ready");
    auto r = t->wait(Duration::zero());
    if (!r || !r->has_value()) seen.push_back(std::string(who) + " has no outcome");
  };
  first = producer.submit("a\n").value();  // no callback
  second = producer.submit("b\n", [&](const blocking::RecordResult&) { expect_ready("first", first); }).value();
  third = producer.submit("c\n").value();  // no callback
  auto fourth = producer
                    .submit("d\n",
                            [&](const blocking::RecordResult&) {
                              expect_ready("first", first);
                              expect_ready("second", second);
                              expect_ready("third", third);
                              seen.emplace_back("fourth ran");
                            })
                    .value();
  ASSERT_TRUE(producer.flush(kWait).has_value());
  EXPECT_EQ(producer.stats().core.batches_acked, 1U) << "the four records are one batch";
  EXPECT_EQ(seen, std::vector<std::string>{"fourth ran"});
  EXPECT_TRUE(fourth.ready());
  ASSERT_TRUE(producer.close(kWait).has_value());
}

// A2: a flush, close or wait from inside a callback would wait for its own dispatcher;
// it fails at once instead of deadlocking.
TEST(A2, BlockingFlushFromACallbackFailsInsteadOfDeadlocking) {
  TestClient client;
  auto producer = blocking::Producer::create(options_for(new_stream(client, "a2-reentrant"))).value();
  std::promise<std::pair<ErrorCode, ErrorCode>> seen;
  ASSERT_TRUE(
      producer
          .submit(
              "r\n",
              [&](const blocking::RecordResult&) {
                auto f = producer.flush();
                auto c = producer.close();
                seen.set_value({f ? ErrorCode::internal : f.error().code, c ? ErrorCode::internal : c.error().code});
              })
          .has_value());
  ASSERT_TRUE(producer.flush(kWait).has_value());
  const auto codes = seen.get_future().get();
  EXPECT_EQ(codes.first, ErrorCode::would_block);
  EXPECT_EQ(codes.second, ErrorCode::would_block);
  ASSERT_TRUE(producer.close(kWait).has_value());
}

// A2 after a terminal failure: the core refuses the flush at once (E1), yet flush()
// returns only after the callbacks of the failed records ran.
TEST(A2, BlockingFlushRefusedAfterAFailureStillReturnsAfterTheCallbacks) {
  FakeServer fake([](int) {
    return FakeServer::Reply{FakeServer::Action::respond, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"};
  });
  auto producer = blocking::Producer::create(options_for(fake.url(), "")).value();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(producer
                    .submit("x\n",
                            [&, released](const blocking::RecordResult& r) {
                              EXPECT_FALSE(r.has_value());
                              released.wait();  // hold the dispatcher
                              ++ran;
                            })
                    .has_value());
  }
  ASSERT_TRUE(eventually([&] { return producer.stats().core.records_failed == 2; })) << "the core failed";
  int ran_when_flush_returned = -1;
  std::thread flusher([&] {
    auto r = producer.flush(kWait);
    ran_when_flush_returned = ran.load();
    EXPECT_EQ(r.error().code, ErrorCode::rejected) << "E1: the sticky error";
  });
  std::this_thread::sleep_for(20ms);  // lets a wrong flush return early; no timing is asserted
  release.set_value();
  flusher.join();
  EXPECT_EQ(ran_when_flush_returned, 2);
}

// A3: an exception from a callback is caught and reported; later callbacks still run.
TEST(A3, BlockingCallbackExceptionIsCaughtReportedAndLaterCallbacksRun) {
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
  auto producer = blocking::Producer::create(options).value();
  std::atomic<int> after{0};
  auto thrower = producer.submit("a\n", [](const blocking::RecordResult&) { throw std::runtime_error("boom"); });
  ASSERT_TRUE(thrower.has_value());
  ASSERT_TRUE(producer.submit("b\n", [&](const blocking::RecordResult& r) { after += r ? 1 : 0; }).has_value());
  ASSERT_TRUE(producer.close(kWait).has_value());
  EXPECT_EQ(reported.load(), 1);
  EXPECT_EQ(after.load(), 1);
  EXPECT_TRUE(thrower->wait().has_value()) << "the record itself is durable";
  EXPECT_EQ(producer.stats().callback_exceptions, 1U);
}

// A4: submit answers at once; a refused submit registers no callback (it is destroyed
// uncalled) and gets no ticket.
TEST(A4, BlockingRefusedSubmitRegistersNoCallback) {
  TestClient client;
  auto options = options_for(new_stream(client, "a4"));
  options.producer.max_batch_bytes = 64;
  auto producer = blocking::Producer::create(options).value();
  std::atomic<int> calls{0};
  auto refuse = [&](std::string_view record, RejectReason reason) {
    auto token = std::make_shared<int>(0);
    std::weak_ptr<int> watch = token;
    auto r = producer.submit(record, [&calls, token = std::move(token)](const blocking::RecordResult&) { ++calls; });
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().reason, reason);
    EXPECT_TRUE(watch.expired()) << "the refused submit kept its callback";
  };
  refuse("", RejectReason::invalid_record);
  refuse(std::string(100, 'x'), RejectReason::record_too_large);
  auto accepted = producer.submit("a\n", [&](const blocking::RecordResult&) { ++calls; });
  ASSERT_TRUE(accepted.has_value());
  EXPECT_EQ(accepted->id().value, 0U) << "refusals consume no ticket";
  ASSERT_TRUE(producer.close(kWait).has_value());
  refuse("b\n", RejectReason::closed);
  EXPECT_TRUE(producer.close(kWait).has_value()) << "C1: a second close gives the same result";
  EXPECT_EQ(calls.load(), 1);
}

// Ticket waiting: wait(timeout) gives nullopt while the record is pending, then the
// outcome (P4: next offset and index) once it is durable.
TEST(A4, BlockingTicketWaitTimesOutWhilePendingThenReturnsTheOutcome) {
  TestClient client;
  auto options = options_for(new_stream(client, "ticket"));
  options.producer.linger = Linger::after(1h);  // nothing is sent before the flush
  options.producer.delivery_timeout_ns = 2h;
  auto producer = blocking::Producer::create(options).value();
  auto ticket = producer.submit("one\n").value();
  auto second = producer.submit("two\n").value();
  EXPECT_FALSE(ticket.wait(1ms).has_value());
  EXPECT_FALSE(ticket.ready());
  ASSERT_TRUE(producer.flush(kWait).has_value());
  EXPECT_TRUE(ticket.ready());
  auto r = ticket.wait(0ns);
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->has_value()) << r->error().describe();
  EXPECT_FALSE((*r)->next_offset().empty());
  EXPECT_EQ((*r)->index, 0U);
  auto r2 = second.wait();
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->index, 1U);
  EXPECT_EQ(r2->next_offset(), (*r)->next_offset()) << "one batch, one acknowledgement";
  ASSERT_TRUE(producer.close(kWait).has_value());
}

// R1/R3: a submit past capacity waits; it is accepted once capacity frees, or refused
// with would_block after submit_timeout_ns.
TEST(R1, BlockingSubmitWaitsForCapacityThenIsAcceptedOrRefused) {
  TestClient client;
  const std::string url = new_stream(client, "capacity");
  auto options = options_for(url);
  options.producer.linger = Linger::after(1h);
  options.producer.delivery_timeout_ns = 2h;
  options.max_pending_records = 1;
  options.submit_timeout_ns = 10min;
  auto producer = blocking::Producer::create(options).value();
  ASSERT_TRUE(producer.submit("a\n").has_value());
  std::optional<tl::expected<blocking::RecordTicket, Rejection>> waited;
  std::thread waiter([&] { waited = producer.submit("b\n"); });
  ASSERT_TRUE(eventually([&] { return producer.stats().capacity_waits == 1; }));
  ASSERT_TRUE(producer.flush(kWait).has_value());  // "a" completes: capacity for "b"
  waiter.join();
  ASSERT_TRUE(waited->has_value());
  ASSERT_TRUE(producer.close(kWait).has_value());
  EXPECT_EQ(client.read_all(url, false), "a\nb\n");

  // The refusal seals "c" at once (R2: no waiting out the hour of linger); the server
  // holds its acknowledgement for a second, so the room does not come back in time.
  options.submit_timeout_ns = 1ms;
  options.producer.protocol.idempotent->producer_id = "capacity-2";
  const std::string url2 = new_stream(client, "capacity");
  options.url = url2;
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + ds::StreamUrl::parse(url2)->path +
                                                           R"(","method":"POST","delayMs":1000,"count":1})");
  auto full = blocking::Producer::create(options).value();
  ASSERT_TRUE(full.submit("c\n").has_value());
  auto refused = full.submit("d\n");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::would_block);
  EXPECT_NE(refused.error().detail.find("submit_timeout_ns"), std::string_view::npos);
  ASSERT_TRUE(full.close(kWait).has_value());
  client.clear_faults(ReferenceServer::shared().url());
  EXPECT_EQ(client.read_all(url2, false), "c\n");
}

// C2: a submit waiting for capacity when close() is called is refused with `closed` at
// once, not when the room comes back (here: the server holds the acknowledgement 3 s) or
// submit_timeout_ns (10 min) passes. Before, it waited until the close had finished.
TEST(C2, ABlockingSubmitWaitingForCapacityIsRefusedClosedWhenCloseIsCalled) {
  TestClient client;
  const std::string url = new_stream(client, "c2-waiting");
  auto options = options_for(url);
  options.producer.linger = Linger::after(1h);
  options.producer.delivery_timeout_ns = 2h;
  options.producer.max_batch_bytes = 16;  // room for one record: the next waits (R1)
  options.producer.max_unacked_bytes = 16;
  options.submit_timeout_ns = 10min;
  client.inject_fault(ReferenceServer::shared().url(), R"({"path":")" + ds::StreamUrl::parse(url)->path +
                                                           R"(","method":"POST","delayMs":3000,"count":1})");
  auto producer = blocking::Producer::create(options).value();
  ASSERT_TRUE(producer.submit("0123456789abcde\n").has_value());  // 16 bytes: all the room
  std::optional<tl::expected<blocking::RecordTicket, Rejection>> waited;
  std::thread waiter([&] { waited = producer.submit("b\n"); });
  ASSERT_TRUE(eventually([&] { return producer.stats().capacity_waits == 1; }));
  std::atomic<bool> close_returned = false;
  std::thread closer([&] {
    EXPECT_TRUE(producer.close(kWait).has_value());
    close_returned = true;
  });
  waiter.join();
  EXPECT_FALSE(close_returned) << "the waiting submit was refused at close(), not after it finished";
  ASSERT_TRUE(waited.has_value());
  ASSERT_FALSE(waited->has_value());
  EXPECT_EQ(waited->error().reason, RejectReason::closed);
  closer.join();
  client.clear_faults(ReferenceServer::shared().url());
  EXPECT_EQ(client.read_all(url, false), "0123456789abcde\n");
}

// C4: close_stream closes the stream (a separate operation), close releases the owned
// connection (the server sees it closed), and the stream's state is the stream's.
TEST(C4, BlockingCloseStreamIsSeparateAndCloseReleasesTheConnection) {
  TestClient client;
  const std::string url = new_stream(client, "c4");
  auto producer = blocking::Producer::create(options_for(url)).value();
  ASSERT_TRUE(producer.submit("x\n").has_value());
  auto closed = producer.close_stream(kWait);
  ASSERT_TRUE(closed.has_value()) << closed.error().describe();
  EXPECT_FALSE(closed->final_offset.empty());
  ASSERT_TRUE(producer.submit("y\n").has_value()) << "the producer stays open";
  auto late = producer.flush(kWait);
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, ErrorCode::stream_closed) << "S6";
  EXPECT_EQ(client.read_all(url, false), "x\n");

  FakeServer fake([](int) { return FakeServer::ok_plain(); });
  auto owned = blocking::Producer::create(options_for(fake.url(), "")).value();
  ASSERT_TRUE(owned.submit("z\n").has_value());
  ASSERT_TRUE(owned.flush(kWait).has_value());
  EXPECT_EQ(fake.eofs.load(), 0) << "the connection is kept alive between requests";
  ASSERT_TRUE(owned.close(kWait).has_value());
  EXPECT_TRUE(eventually([&] { return fake.eofs.load() == 1; })) << "close closed the owned connection";
}

// C5: destroying the producer without close aborts: the unresolved record fails with
// aborted, definite (never sent), and its callback ran before the destructor returned.
TEST(C5, BlockingDestructionWithoutCloseAbortsUnresolvedRecords) {
  TestClient client;
  auto options = options_for(new_stream(client, "c5"));
  options.producer.linger = Linger::after(1h);
  options.producer.delivery_timeout_ns = 2h;
  std::optional<blocking::RecordResult> seen;
  std::optional<blocking::RecordTicket> ticket;
  {
    auto producer = blocking::Producer::create(options).value();
    ticket = producer.submit("never sent\n", [&](const blocking::RecordResult& r) { seen = r; }).value();
  }
  ASSERT_TRUE(seen.has_value()) << "the callback ran before the destructor returned";
  ASSERT_FALSE(seen->has_value());
  EXPECT_EQ(seen->error().code, ErrorCode::aborted);
  EXPECT_EQ(seen->error().certainty, Certainty::definite);
  EXPECT_EQ(ticket->wait().error().code, ErrorCode::aborted) << "the ticket outlives the producer";
}

}  // namespace
}  // namespace prodsm::test
