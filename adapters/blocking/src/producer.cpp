// SPDX-License-Identifier: Apache-2.0
// prodsm::blocking::Producer: a ds::ProducerClient through the adapter's one producer
// implementation (producer_impl.hpp: the lock, the drive rule, the session's deadline,
// the dispatcher). This file has what is Durable Streams' own: creation and stream closes.
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
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) return tl::unexpected(client.error());
  SessionOptions session_options{options.session};
  session_options.header_provider = options.header_provider;
  auto session = Session::create(client->url(), std::move(session_options));
  if (!session) return tl::unexpected(session.error());
  auto impl = std::make_shared<Impl>(std::move(options), std::move(*session), true, std::move(*client));
  impl->start();
  return Producer(std::move(impl));
}

tl::expected<Producer, std::string> Producer::attach(std::shared_ptr<Session> session, ProducerOptions options) {
  if (auto why = prodsm::detail::attach_refusal(session, options.header_provider)) return tl::unexpected(*why);
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::now());
  if (!client) return tl::unexpected(client.error());
  const ds::StreamUrl& url = client->url();
  if (auto why = prodsm::detail::server_mismatch("url", url.host, url.port, url.authority(), *session)) {
    return tl::unexpected(*why);
  }
  auto impl = std::make_shared<Impl>(std::move(options), std::move(session), false, std::move(*client));
  impl->start();
  return Producer(std::move(impl));
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
