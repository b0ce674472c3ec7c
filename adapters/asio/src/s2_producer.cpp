// SPDX-License-Identifier: Apache-2.0
// prodsm::asio::S2Producer: an s2::ProducerClient driven by a Session and one timer,
// through the adapter's one producer implementation (producer_impl.hpp). This file has
// the public calls.
#include "prodsm/asio/s2_producer.hpp"

#include "producer_impl.hpp"

namespace prodsm::asio {
namespace net = ::asio;

struct S2Producer::Impl : detail::ProducerImpl<s2::ProducerClient, S2ProducerOptions, S2RecordResult> {
  using ProducerImpl::ProducerImpl;
};

tl::expected<S2Producer, std::string> S2Producer::create(net::any_io_executor executor, S2ProducerOptions options) {
  auto impl = detail::create_owned<Impl>(std::move(executor), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return S2Producer(std::move(*impl));
}

tl::expected<S2Producer, std::string> S2Producer::attach(std::shared_ptr<Session> session, S2ProducerOptions options) {
  auto impl = detail::create_attached<Impl>(std::move(session), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return S2Producer(std::move(*impl));
}

S2Producer::S2Producer(std::shared_ptr<Impl> impl) : impl_{std::move(impl)} {}
S2Producer::S2Producer(S2Producer&&) noexcept = default;
S2Producer& S2Producer::operator=(S2Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) abort();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
S2Producer::~S2Producer() {
  if (impl_) abort();  // C5: no-op after a completed close
}

tl::expected<Ticket, Rejection> S2Producer::submit(std::string_view record) {
  return impl_->submit(record, nullptr);
}

tl::expected<Ticket, Rejection> S2Producer::submit_with(std::string_view record,
                                                        std::unique_ptr<detail::Completion<S2RecordResult>> c) {
  return impl_->submit(record, std::move(c));
}

tl::expected<Ticket, Rejection> S2Producer::submit_blocking(std::string_view record, Duration timeout_ns) {
  return impl_->submit_blocking(record, timeout_ns, nullptr);
}

tl::expected<Ticket, Rejection> S2Producer::submit_blocking_with(
    std::string_view record, Duration timeout_ns, std::unique_ptr<detail::Completion<S2RecordResult>> c) {
  return impl_->submit_blocking(record, timeout_ns, std::move(c));
}

void S2Producer::initiate_submit(std::string record, std::unique_ptr<detail::Completion<S2RecordResult>> c,
                                 std::function<void(std::function<void()>)> install_cancel) {
  impl_->initiate_submit(std::move(record), std::move(c), std::move(install_cancel));
}

void S2Producer::initiate_submit_ticket(std::string record, detail::TicketOperation<S2RecordResult> op) {
  impl_->initiate_submit(std::move(record), std::move(op.record), std::move(op.install_cancel), std::move(op.accepted));
}

void S2Producer::initiate_flush(std::unique_ptr<detail::Completion<VoidResult>> c) {
  impl_->initiate_flush(std::move(c));
}

detail::TokenFallback S2Producer::token_fallback() const {
  return impl_->token_fallback();
}

void S2Producer::initiate_close(std::unique_ptr<detail::Completion<VoidResult>> c) {
  impl_->initiate_close(std::move(c));
}

SubmitManyResult S2Producer::submit_many(std::span<const std::string_view> records) {
  return impl_->submit_many(records);
}

void S2Producer::abort() {
  impl_->abort();
}

ProducerAdapterStats S2Producer::stats() const {
  return impl_->stats();
}

const std::shared_ptr<Session>& S2Producer::session() const noexcept {
  return impl_->session;
}

const s2::ProducerOptions& S2Producer::options() const noexcept {
  return impl_->client.options();
}

}  // namespace prodsm::asio
