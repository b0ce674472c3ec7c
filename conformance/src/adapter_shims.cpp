// SPDX-License-Identifier: Apache-2.0
// The Asio and blocking Durable Streams producers behind one interface (adapter_shim.hpp).
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "adapter_shim.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/blocking/producer.hpp"

namespace prodsm::conformance::detail {
namespace {

using namespace std::chrono_literals;

/// The Asio producer on an io_context run by one thread of its own: its callback strand
/// is the default FIFO dispatcher (A1).
class AsioShim final : public AdapterShim {
 public:
  static tl::expected<std::unique_ptr<AdapterShim>, std::string> create(asio::ProducerOptions options) {
    auto shim = std::unique_ptr<AsioShim>(new AsioShim());
    auto producer = asio::Producer::create(shim->io_.get_executor(), std::move(options));
    if (!producer) return tl::unexpected(producer.error());
    shim->producer_.emplace(std::move(*producer));
    shim->thread_ = std::thread([io = &shim->io_] { io->run(); });
    return std::unique_ptr<AdapterShim>(std::move(shim));
  }
  ~AsioShim() override { shutdown(); }

  tl::expected<Ticket, Rejection> submit(std::string_view record,
                                         std::function<void(const ds::RecordResult&)> callback) override {
    return producer_->submit(record, [cb = std::move(callback)](const asio::RecordResult& r) { cb(r); });
  }
  void flush(std::function<void(const ds::VoidResult&)> done) override {
    producer_->async_flush([d = std::move(done)](asio::VoidResult r) { d(r); });
  }
  void close(std::function<void(const ds::VoidResult&)> done) override {
    producer_->async_close([d = std::move(done)](asio::VoidResult r) { d(r); });
  }
  void close_stream(std::function<void(const ds::CloseStreamResult&)> done) override {
    producer_->async_close_stream([d = std::move(done)](tl::expected<ds::CloseResult, Error> r) { d(r); });
  }
  void abort() override { producer_->abort(); }
  [[nodiscard]] ProducerAdapterStats stats() const override { return producer_->stats(); }
  [[nodiscard]] bool outcomes_are_callbacks() const override { return true; }

  void shutdown() override {
    if (!thread_.joinable()) return;
    producer_.reset();  // aborts unless closed (C5); its handlers are posted to the strand
    guard_.reset();
    // The context runs out of work once the owned session closed its sockets; a bound
    // keeps a wedged context from hanging the harness.
    for (int i = 0; i < 2000 && !io_.stopped(); ++i) std::this_thread::sleep_for(1ms);
    io_.stop();
    thread_.join();
  }

 private:
  AsioShim() = default;
  ::asio::io_context io_{1};
  std::optional<::asio::executor_work_guard<::asio::io_context::executor_type>> guard_{io_.get_executor()};
  std::optional<asio::Producer> producer_;
  std::thread thread_;
};

/// The blocking producer: its dispatcher thread runs the callbacks (A1); flush, close and
/// close_stream block, so each runs on a thread of the shim, and the shim returns once
/// the producer took the call (stats().core.barriers_accepted moved, or the call returned).
class BlockingShim final : public AdapterShim {
 public:
  static tl::expected<std::unique_ptr<AdapterShim>, std::string> create(blocking::ProducerOptions options) {
    auto producer = blocking::Producer::create(std::move(options));
    if (!producer) return tl::unexpected(producer.error());
    auto shim = std::unique_ptr<BlockingShim>(new BlockingShim());
    shim->producer_.emplace(std::move(*producer));
    return std::unique_ptr<AdapterShim>(std::move(shim));
  }
  ~BlockingShim() override { shutdown(); }

  tl::expected<Ticket, Rejection> submit(std::string_view record,
                                         std::function<void(const ds::RecordResult&)> callback) override {
    auto r = producer_->submit(record, [cb = std::move(callback)](const blocking::RecordResult& x) { cb(x); });
    if (!r) return tl::unexpected(std::move(r.error()));
    return r->id();
  }
  void flush(std::function<void(const ds::VoidResult&)> done) override {
    blocking_call([this] { return producer_->flush(); }, std::move(done));
  }
  void close(std::function<void(const ds::VoidResult&)> done) override {
    // close(0) registers the close at once (C1) and reports it if already done; a second
    // close() on a thread of ours waits for it (a second close returns the same result).
    auto r = producer_->close(Duration::zero());
    if (r || r.error().code != ErrorCode::cancelled || r.error().message.find("timeout_ns") == std::string::npos) {
      done(r);
      return;
    }
    start([this, d = std::move(done)] { d(producer_->close()); });
  }
  void close_stream(std::function<void(const ds::CloseStreamResult&)> done) override {
    blocking_call([this] { return producer_->close_stream(); }, std::move(done));
  }
  void abort() override { producer_->abort(); }
  [[nodiscard]] ProducerAdapterStats stats() const override { return producer_->stats(); }
  [[nodiscard]] bool outcomes_are_callbacks() const override { return false; }

  void shutdown() override {
    if (!producer_) return;
    producer_->abort();  // the blocked calls return (C5) ...
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();  // ... before the producer goes
    producer_.reset();
  }

 private:
  BlockingShim() = default;

  void start(std::function<void()> f) {
    std::lock_guard lock(mu_);
    threads_.emplace_back(std::move(f));
  }

  /// Runs a blocking call that takes a flush barrier (flush, close_stream) on a thread of
  /// ours; returns once the barrier was taken or the call returned (refused at once).
  template <class Call, class Done>
  void blocking_call(Call call, Done done) {
    const std::uint64_t before = producer_->stats().core.barriers_accepted;
    auto returned = std::make_shared<std::atomic<bool>>(false);
    start([call = std::move(call), done = std::move(done), returned] {
      auto r = call();
      returned->store(true);
      done(r);
    });
    for (int i = 0; i < 200000 && !returned->load(); ++i) {  // bounded: 10 s
      if (producer_->stats().core.barriers_accepted > before) return;
      std::this_thread::sleep_for(50us);
    }
  }

  std::optional<blocking::Producer> producer_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace

tl::expected<std::unique_ptr<AdapterShim>, std::string> make_adapter_shim(
    AdapterKind kind, ds::ProducerOptions options, std::function<void(std::exception_ptr)> on_callback_exception) {
  if (kind == AdapterKind::asio) {
    asio::ProducerOptions o;
    static_cast<ds::ProducerOptions&>(o) = std::move(options);
    o.on_callback_exception = std::move(on_callback_exception);
    return AsioShim::create(std::move(o));
  }
  blocking::ProducerOptions o;
  static_cast<ds::ProducerOptions&>(o) = std::move(options);
  o.on_callback_exception = std::move(on_callback_exception);
  return BlockingShim::create(std::move(o));
}

}  // namespace prodsm::conformance::detail
