// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::S2Producer: an s2::ProducerClient through the adapter's one producer
// implementation (producer_impl.hpp). This file has the public calls and the ticket.
#include "prodsm/blocking/s2_producer.hpp"

#include "producer_impl.hpp"

namespace prodsm::blocking {
namespace detail {
struct S2TicketState : RecordState<S2RecordResult> {
  using RecordState::RecordState;
};
}  // namespace detail

struct S2Producer::Impl : detail::ProducerImpl<s2::ProducerClient, S2ProducerOptions, detail::S2TicketState> {
  using ProducerImpl::ProducerImpl;
};

// ---- S2RecordTicket --------------------------------------------------------------------------

bool S2RecordTicket::ready() const {
  return detail::ticket_ready<S2RecordResult>(*state_);
}

std::optional<S2RecordResult> S2RecordTicket::wait(Duration timeout_ns) const {
  return detail::ticket_wait<S2RecordResult>(*state_, timeout_ns);
}

S2RecordResult S2RecordTicket::wait() const {
  return detail::ticket_wait<S2RecordResult>(*state_, "S2RecordTicket::wait()");
}

// ---- S2Producer ------------------------------------------------------------------------------

tl::expected<S2Producer, std::string> S2Producer::create(S2ProducerOptions options) {
  auto impl = detail::create_owned<Impl>(std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return S2Producer(std::move(*impl));
}

tl::expected<S2Producer, std::string> S2Producer::attach(std::shared_ptr<Session> session, S2ProducerOptions options) {
  auto impl = detail::create_attached<Impl>(std::move(session), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return S2Producer(std::move(*impl));
}

S2Producer::S2Producer(std::shared_ptr<Impl> impl) noexcept : impl_{std::move(impl)} {}
S2Producer::S2Producer(S2Producer&&) noexcept = default;
S2Producer& S2Producer::operator=(S2Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
S2Producer::~S2Producer() {
  if (impl_) impl_->shutdown();
}

tl::expected<S2RecordTicket, Rejection> S2Producer::submit(std::string_view record) {
  return submit(record, nullptr);
}

tl::expected<S2RecordTicket, Rejection> S2Producer::submit(std::string_view record, S2RecordCallback on_complete) {
  auto r = impl_->submit(record, std::move(on_complete));
  if (!r) return tl::unexpected(std::move(r.error()));
  return S2RecordTicket(r->first, std::move(r->second));
}

VoidResult S2Producer::flush(std::optional<Duration> timeout_ns) {
  return impl_->flush(timeout_ns);
}

VoidResult S2Producer::close(std::optional<Duration> timeout_ns) {
  return impl_->close(timeout_ns);
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

}  // namespace prodsm::blocking
