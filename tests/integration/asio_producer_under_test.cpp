// SPDX-License-Identifier: Apache-2.0
// The Asio adapter behind the shared scenarios.
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <thread>
#include <vector>

#include "prodsm/asio/producer.hpp"
#include "producer_under_test.hpp"

namespace prodsm::test {
namespace {

/// The Asio producer on an io_context run by `threads` threads (the adapter must be
/// correct on any number: its session and callbacks run on strands).
class AsioProducerUnderTest final : public ProducerUnderTest {
 public:
  AsioProducerUnderTest(const ProducerSetup& setup, int threads) : guard_{::asio::make_work_guard(io_)} {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
    asio::ProducerOptions options;
    options.url = setup.url;
    options.content_type = setup.content_type;
    options.producer = setup.config;
    options.session = setup.session;
    options.header_provider = setup.header_provider;
    options.start = setup.start;
    options.events = event_options(setup, events_);
    auto p = asio::Producer::create(io_.get_executor(), options);
    if (!p) {
      ADD_FAILURE() << p.error();
      return;
    }
    producer_.emplace(std::move(*p));
  }
  ~AsioProducerUnderTest() override {
    producer_.reset();  // aborts if not closed (C5)
    guard_.reset();
    for (auto& t : threads_) t.join();
  }

  tl::expected<Ticket, Rejection> submit(std::string_view record) override {
    if (!producer_) return tl::unexpected(Rejection{RejectReason::closed, "no producer", {}});
    auto log = log_;
    auto r = producer_->submit_blocking(record, std::chrono::minutes{2}, [log](asio::RecordResult result) {
      Completion c;
      if (result) {
        c.ticket = result->ticket.value;
        c.ok = true;
        c.next_offset = result->next_offset();
        c.duplicate = result->duplicate();
        c.earlier_incarnation = result->earlier_incarnation();
      } else {
        c.code = result.error().code;
        c.certainty = result.error().certainty;
      }
      log->add(std::move(c));
    });
    return r;
  }
  tl::expected<void, Error> flush(Duration timeout) override {
    return wait(producer_->async_flush(::asio::use_future), timeout);
  }
  tl::expected<void, Error> close(Duration timeout) override {
    return wait(producer_->async_close(::asio::use_future), timeout);
  }
  std::vector<Completion> completions() override { return log_->snapshot(); }
  ProducerStats stats() override { return producer_->stats().core; }
  ProducerAdapterStats adapter_stats() override { return producer_->stats(); }
  std::vector<ProducerEvent> events() override { return events_->snapshot(); }

 private:
  static tl::expected<void, Error> wait(std::future<asio::VoidResult> f, Duration timeout) {
    if (f.wait_for(timeout) != std::future_status::ready) {
      return tl::unexpected(
          make_error(ErrorCode::cancelled, Certainty::indefinite, false, "the operation did not complete in time"));
    }
    return f.get();
  }

  ::asio::io_context io_;
  ::asio::executor_work_guard<::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
  std::optional<asio::Producer> producer_;
  std::shared_ptr<CompletionLog> log_ = std::make_shared<CompletionLog>();
  std::shared_ptr<EventLog> events_ = std::make_shared<EventLog>();
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    Asio, Scenario,
    ::testing::Values(AdapterParam{"asio",
                                   [](const ProducerSetup& s) -> std::unique_ptr<ProducerUnderTest> {
                                     return std::make_unique<AsioProducerUnderTest>(s, 1);
                                   }},
                      AdapterParam{"asio_4_threads",
                                   [](const ProducerSetup& s) -> std::unique_ptr<ProducerUnderTest> {
                                     return std::make_unique<AsioProducerUnderTest>(s, 4);
                                   }}),
    [](const ::testing::TestParamInfo<AdapterParam>& param_info) { return param_info.param.name; });

}  // namespace prodsm::test
