// SPDX-License-Identifier: Apache-2.0
// The blocking adapter's own clauses (A1–A4, C4, C5, R1), its ticket waiting and its
// transport classification (E2, E4, S7): against the reference server, and against a
// scripted in-process fake server where the transport must misbehave on purpose.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "liveness.hpp"
#include "prodsm/blocking/producer.hpp"
#include "prodsm/ds/http_codec.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

using namespace std::chrono_literals;

blocking::ProducerOptions options_for(const std::string& url, const std::string& producer_id = "blocking-test") {
  blocking::ProducerOptions o;
  o.url = url;
  if (!producer_id.empty()) {
    o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{producer_id, 0, false};
  }
  return o;
}

/// Polls `done` until it holds (a liveness bound of 60 s, not a timing assertion).
template <class F>
bool eventually(F done) {
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// A scripted HTTP/1.1 server on 127.0.0.1 for transport misbehaviour: one connection at
/// a time; for the n-th request (from 0) `script(n)` says what to do.
class FakeServer {
 public:
  enum class Action { respond, drop, hang };
  struct Reply {
    Action action = Action::respond;
    std::string bytes;
  };
  static Reply ok_plain() {
    return {Action::respond, "HTTP/1.1 204 No Content\r\nStream-Next-Offset: 0000_0001\r\n\r\n"};
  }

  explicit FakeServer(std::function<Reply(int)> script) : script_{std::move(script)} {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/s"; }
  std::atomic<int> connections{0};  ///< accepted
  std::atomic<int> eofs{0};         ///< connections the client closed
  std::atomic<int> requests{0};

 private:
  bool wait_readable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }
  void run() {
    while (wait_readable(listen_fd_)) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections;
      serve(fd);
      ::close(fd);
    }
  }
  void serve(int fd) {
    std::string buffer;
    bool hang = false;
    char chunk[4096];
    while (wait_readable(fd)) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        ++eofs;
        return;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
      while (!hang) {
        const auto head_end = buffer.find("\r\n\r\n");
        if (head_end == std::string::npos) break;
        std::size_t body = 0;
        if (auto at = buffer.find("Content-Length: "); at != std::string::npos && at < head_end) {
          body = std::stoul(buffer.substr(at + 16));
        }
        if (buffer.size() < head_end + 4 + body) break;
        buffer.erase(0, head_end + 4 + body);
        const Reply reply = script_(requests++);
        if (reply.action == Action::drop) return;
        if (reply.action == Action::hang) {
          hang = true;
          break;
        }
        (void)!::send(fd, reply.bytes.data(), reply.bytes.size(), MSG_NOSIGNAL);
      }
    }
  }
  std::function<Reply(int)> script_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

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

  options.submit_timeout_ns = 1ms;
  options.producer.protocol.idempotent->producer_id = "capacity-2";
  auto full = blocking::Producer::create(options).value();
  ASSERT_TRUE(full.submit("c\n").has_value());
  auto refused = full.submit("d\n");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::would_block);
  EXPECT_NE(refused.error().detail.find("submit_timeout_ns"), std::string_view::npos);
  ASSERT_TRUE(full.close(kWait).has_value());
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

// E2/E4: no server → unavailable, definite, retryable; retried max_attempts times.
TEST(E2, BlockingRefusedConnectionIsUnavailableDefiniteAndRetried) {
  auto options = options_for("http://127.0.0.1:1/nowhere");
  options.producer.retry.max_attempts = 3;
  options.producer.retry.backoff_initial_ns = 10ms;
  options.producer.retry.backoff_max_ns = 20ms;
  auto producer = blocking::Producer::create(options).value();
  auto ticket = producer.submit("x\n").value();
  auto r = ticket.wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().certainty, Certainty::definite);
  EXPECT_TRUE(r.error().retryable);
  EXPECT_EQ(producer.stats().core.sends, 3U);
}

// E2/E4: the server takes the request and drops the connection → connection_lost,
// indefinite; without idempotence that is terminal (E4), and nothing is resent.
TEST(E2, BlockingDroppedConnectionAfterTheWriteIsConnectionLostIndefinite) {
  FakeServer fake([](int) { return FakeServer::Reply{FakeServer::Action::drop, {}}; });
  auto producer = blocking::Producer::create(options_for(fake.url(), "")).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::connection_lost);
  EXPECT_EQ(r.error().certainty, Certainty::indefinite);
  EXPECT_EQ(fake.requests.load(), 1) << "E4: an indefinite failure of a plain append is not resent";
}

// E2: no response within request_timeout_ns → connection_lost, indefinite; the
// idempotent producer resends the same bytes on a new connection (E4).
TEST(E2, BlockingRequestTimeoutIsConnectionLostAndTheIdempotentProducerResends) {
  FakeServer fake([](int n) {
    if (n == 0) return FakeServer::Reply{FakeServer::Action::hang, {}};
    return FakeServer::Reply{FakeServer::Action::respond,
                             // No echo headers: the producer's epoch is fresh per run (an echo
                             // of another epoch would be refused, issue 22).
                             "HTTP/1.1 200 OK\r\nStream-Next-Offset: 0000_0001\r\nContent-Length: 0\r\n\r\n"};
  });
  auto options = options_for(fake.url(), "timeout-test");
  options.session.request_timeout_ns = 100ms;
  options.producer.retry.backoff_initial_ns = 1ms;
  auto producer = blocking::Producer::create(options).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_TRUE(r.has_value()) << r.error().describe();
  EXPECT_EQ(producer.stats().core.retries, 1U);
  EXPECT_EQ(producer.stats().session.connections_opened, 2U);
  EXPECT_EQ(fake.requests.load(), 2);
}

// S7 at the transport: a malformed response is a protocol_error (terminal).
TEST(S7, BlockingMalformedResponseIsAProtocolError) {
  FakeServer fake([](int) { return FakeServer::Reply{FakeServer::Action::respond, "HTTP/1.1 abc\r\n\r\n"}; });
  auto producer = blocking::Producer::create(options_for(fake.url(), "")).value();
  auto r = producer.submit("x\n").value().wait();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::protocol_error);
}

// A connection idle for longer than idle_reuse_limit_ns is replaced before reuse; a
// fresher one is reused.
TEST(Connection, BlockingIdleConnectionIsReplacedBeforeReuse) {
  FakeServer fake([](int) { return FakeServer::ok_plain(); });
  auto reuse = blocking::Producer::create(options_for(fake.url(), "")).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reuse.submit("x\n").has_value());
    ASSERT_TRUE(reuse.flush(kWait).has_value());
  }
  EXPECT_EQ(reuse.stats().session.connections_opened, 1U) << "one keep-alive connection";
  ASSERT_TRUE(reuse.close(kWait).has_value());  // the fake server serves one connection at a time
  auto options = options_for(fake.url(), "");
  options.session.idle_reuse_limit_ns = 0ns;
  auto replace = blocking::Producer::create(options).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(replace.submit("x\n").has_value());
    ASSERT_TRUE(replace.flush(kWait).has_value());
    std::this_thread::sleep_for(1ms);  // idle for longer than the limit (0)
  }
  EXPECT_EQ(replace.stats().session.connections_opened, 3U);
}

// B3: options are validated and the error names the option.
TEST(B3, BlockingOptionsAreValidatedWithTheirNames) {
  auto expect_named = [](blocking::ProducerOptions o, std::string_view name) {
    auto r = blocking::Producer::create(std::move(o));
    ASSERT_FALSE(r.has_value()) << name;
    EXPECT_NE(r.error().find(name), std::string::npos) << r.error();
  };
  expect_named(options_for("ftp://x/y"), "url:");
  auto o = options_for("http://127.0.0.1:9/s");
  o.content_type = "application/json";
  expect_named(o, "content_type");
  o = options_for("http://127.0.0.1:9/s");
  o.producer.max_in_flight = 0;
  expect_named(o, "max_in_flight");
  o = options_for("http://127.0.0.1:9/s");
  o.session.request_timeout_ns = 0ns;
  expect_named(o, "request_timeout_ns");
  o = options_for("http://127.0.0.1:9/s");
  o.max_pending_records = 0;
  expect_named(o, "max_pending_records");
  o = options_for("http://127.0.0.1:9/s");
  o.extra_headers.push_back({"X-Evil", "a\r\nInjected: 1"});
  expect_named(o, "extra_headers");
}

}  // namespace
}  // namespace prodsm::test
