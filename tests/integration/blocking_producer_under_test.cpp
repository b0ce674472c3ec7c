// SPDX-License-Identifier: Apache-2.0
// The blocking adapter behind the shared scenarios (scenarios.cpp).
#include "prodsm/blocking/producer.hpp"
#include "producer_under_test.hpp"

namespace prodsm::test {
namespace {

class BlockingProducerUnderTest final : public ProducerUnderTest {
 public:
  explicit BlockingProducerUnderTest(const ProducerSetup& setup) {
    blocking::ProducerOptions options;
    options.url = setup.url;
    options.content_type = setup.content_type;
    options.producer = setup.config;
    options.session = setup.session;
    options.header_provider = setup.header_provider;
    options.start = setup.start;
    options.events = event_options(setup, events_);
    options.submit_timeout_ns = std::chrono::minutes{2};  // "waiting while the producer is full"
    auto p = blocking::Producer::create(options);
    if (!p) {
      ADD_FAILURE() << p.error();
      return;
    }
    producer_.emplace(std::move(*p));
  }

  tl::expected<Ticket, Rejection> submit(std::string_view record) override {
    if (!producer_) return tl::unexpected(Rejection{RejectReason::closed, "no producer", {}});
    auto log = log_;
    return producer_
        ->submit(record,
                 [log](const blocking::RecordResult& result) {
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
                 })
        .map([](const blocking::RecordTicket& t) { return t.id(); });
  }
  tl::expected<void, Error> flush(Duration timeout) override { return producer_->flush(timeout); }
  tl::expected<void, Error> close(Duration timeout) override { return producer_->close(timeout); }
  std::vector<Completion> completions() override { return log_->snapshot(); }
  ProducerStats stats() override { return producer_->stats().core; }
  ProducerAdapterStats adapter_stats() override { return producer_->stats(); }
  std::vector<ProducerEvent> events() override { return events_->snapshot(); }

 private:
  std::optional<blocking::Producer> producer_;
  std::shared_ptr<CompletionLog> log_ = std::make_shared<CompletionLog>();
  std::shared_ptr<EventLog> events_ = std::make_shared<EventLog>();
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    Blocking, Scenario,
    ::testing::Values(AdapterParam{"blocking",
                                   [](const ProducerSetup& s) -> std::unique_ptr<ProducerUnderTest> {
                                     return std::make_unique<BlockingProducerUnderTest>(s);
                                   }}),
    [](const ::testing::TestParamInfo<AdapterParam>& param_info) { return param_info.param.name; });

}  // namespace prodsm::test
