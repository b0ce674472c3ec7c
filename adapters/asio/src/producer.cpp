// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::Producer: a ds::ProducerClient driven by a Session and one timer, through
// the adapter's one producer implementation (producer_impl.hpp: the timer, the callback
// strand, capacity waits; the lock and the drive rule are its base's,
// prodsm/detail/adapter_producer.hpp). This file has the public calls and what is
// Durable Streams' own: which stream close to start.
#include "prodsm/asio/producer.hpp"

#include "producer_impl.hpp"

namespace prodsm::asio {
namespace net = ::asio;

struct Producer::Impl : detail::ProducerImpl<ds::ProducerClient, ProducerOptions, RecordResult, ds::CloseStreamResult> {
  using ProducerImpl::ProducerImpl;
};

// ---- Producer ---------------------------------------------------------------------------

tl::expected<Producer, std::string> Producer::create(net::any_io_executor executor, ProducerOptions options) {
  auto impl = detail::create_owned<Impl>(std::move(executor), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return Producer(std::move(*impl));
}

tl::expected<Producer, std::string> Producer::attach(std::shared_ptr<Session> session, ProducerOptions options) {
  auto impl = detail::create_attached<Impl>(std::move(session), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return Producer(std::move(*impl));
}

Producer::Producer(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}
Producer::Producer(Producer&&) noexcept = default;
Producer& Producer::operator=(Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) abort();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Producer::~Producer() {
  if (impl_) abort();  // C5: no-op after a completed close
}

tl::expected<Ticket, Rejection> Producer::submit(std::string_view record) {
  return impl_->submit(record, nullptr);
}

tl::expected<Ticket, Rejection> Producer::submit_with(std::string_view record,
                                                      std::unique_ptr<detail::Completion<RecordResult>> c) {
  return impl_->submit(record, std::move(c));
}

tl::expected<Ticket, Rejection> Producer::submit_blocking(std::string_view record, Duration timeout_ns) {
  return impl_->submit_blocking(record, timeout_ns, nullptr);
}

tl::expected<Ticket, Rejection> Producer::submit_blocking_with(std::string_view record, Duration timeout_ns,
                                                               std::unique_ptr<detail::Completion<RecordResult>> c) {
  return impl_->submit_blocking(record, timeout_ns, std::move(c));
}

void Producer::initiate_submit(std::string record, std::unique_ptr<detail::Completion<RecordResult>> c,
                               std::function<void(std::function<void()>)> install_cancel) {
  impl_->initiate_submit(std::move(record), std::move(c), std::move(install_cancel));
}

void Producer::initiate_submit_ticket(std::string record, detail::TicketOperation<RecordResult> op) {
  impl_->initiate_submit(std::move(record), std::move(op.record), std::move(op.install_cancel), std::move(op.accepted));
}

void Producer::initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c) {
  impl_->initiate_flush(std::move(c));
}

detail::TokenFallback Producer::token_fallback() const {
  return impl_->token_fallback();
}

void Producer::initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c) {
  impl_->initiate_close(std::move(c));
}

void Producer::initiate_close_stream(std::unique_ptr<detail::Completion<ds::CloseStreamResult>> c) {
  impl_->initiate_stream_close([](ds::ProducerClient& client, Instant now) { return client.close_stream(now); },
                               std::move(c), false);
}

void Producer::initiate_close_with_stream(std::optional<std::string> final_record,
                                          std::unique_ptr<detail::Completion<ds::CloseStreamResult>> c) {
  impl_->initiate_stream_close(
      [&](ds::ProducerClient& client, Instant now) { return client.close_with_stream(now, std::move(final_record)); },
      std::move(c), true);
}

SubmitManyResult Producer::submit_many(std::span<const std::string_view> records) {
  return impl_->submit_many(records);
}

void Producer::abort() {
  impl_->abort();
}

ProducerAdapterStats Producer::stats() const {
  return impl_->stats();
}

const std::shared_ptr<Session>& Producer::session() const noexcept {
  return impl_->session;
}
const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->client.url();
}

}  // namespace prodsm::asio
