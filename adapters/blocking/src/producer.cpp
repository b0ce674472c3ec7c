// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Producer: a ds::ProducerClient through the adapter's one producer
// implementation (producer_impl.hpp: the session's deadline, the dispatcher, the waits;
// the lock and the drive rule are its base's, prodsm/detail/adapter_producer.hpp). This
// file has the public calls and what is Durable Streams' own: which stream close to start.
#include "prodsm/blocking/producer.hpp"

#include "producer_impl.hpp"

namespace prodsm::blocking {
namespace detail {
struct TicketState : RecordState<RecordResult> {
  using RecordState::RecordState;
};
}  // namespace detail

struct Producer::Impl
    : detail::ProducerImpl<ds::ProducerClient, ProducerOptions, detail::TicketState, CloseStreamResult> {
  using ProducerImpl::ProducerImpl;
};

// ---- RecordTicket ----------------------------------------------------------------------------

bool RecordTicket::ready() const {
  return detail::ticket_ready<RecordResult>(*state_);
}

std::optional<RecordResult> RecordTicket::wait(Duration timeout_ns) const {
  return detail::ticket_wait<RecordResult>(*state_, timeout_ns);
}

RecordResult RecordTicket::wait() const {
  return detail::ticket_wait<RecordResult>(*state_, "RecordTicket::wait()");
}

// ---- Producer --------------------------------------------------------------------------------

tl::expected<Producer, std::string> Producer::create(ProducerOptions options) {
  auto impl = detail::create_owned<Impl>(std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return Producer(std::move(*impl));
}

tl::expected<Producer, std::string> Producer::attach(std::shared_ptr<Session> session, ProducerOptions options) {
  auto impl = detail::create_attached<Impl>(std::move(session), std::move(options));
  if (!impl) return tl::unexpected(impl.error());
  return Producer(std::move(*impl));
}

Producer::Producer(std::shared_ptr<Impl> impl) noexcept : impl_{std::move(impl)} {}
Producer::Producer(Producer&&) noexcept = default;
Producer& Producer::operator=(Producer&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Producer::~Producer() {
  if (impl_) impl_->shutdown();
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record) {
  return submit(record, nullptr);
}

tl::expected<RecordTicket, Rejection> Producer::submit(std::string_view record, RecordCallback on_complete) {
  auto r = impl_->submit(record, std::move(on_complete));
  if (!r) return tl::unexpected(std::move(r.error()));
  return RecordTicket(r->first, std::move(r->second));
}

VoidResult Producer::flush(std::optional<Duration> timeout_ns) {
  return impl_->flush(timeout_ns);
}

VoidResult Producer::close(std::optional<Duration> timeout_ns) {
  return impl_->close(timeout_ns);
}

CloseStreamResult Producer::close_stream(std::optional<Duration> timeout_ns) {
  return impl_->stream_close([](ds::ProducerClient& client, Instant now) { return client.close_stream(now); },
                             timeout_ns, "close_stream()", false);
}

CloseStreamResult Producer::close_with_stream(std::optional<std::string> final_record,
                                              std::optional<Duration> timeout_ns) {
  return impl_->stream_close(
      [&](ds::ProducerClient& client, Instant now) { return client.close_with_stream(now, std::move(final_record)); },
      timeout_ns, "close_with_stream()", true);
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

const ds::StreamUrl& Producer::url() const noexcept {
  return impl_->client.url();
}

const std::shared_ptr<Session>& Producer::session() const noexcept {
  return impl_->session;
}

}  // namespace prodsm::blocking
