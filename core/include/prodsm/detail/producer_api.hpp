// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_api.hpp
/// Internal: Producer<Policy>'s public members, forwarding to Impl (producer_impl.hpp)
/// through one guard (D4: no exception crosses the core API; an allocation failure
/// becomes the terminal error `internal`), which also checks the core's invariants after
/// every input in builds with PRODSM_CHECK_INVARIANTS (invariants.hpp).

#include <type_traits>
#include <utility>

#include "prodsm/detail/config_validation.hpp"
#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {
namespace detail {

/// Runs `fn` (one input to `impl`), then checks the invariants; if it throws, the
/// producer fails with `internal` and `fallback` — which must not throw — gives the
/// result (D4): nothing escapes.
template <class Impl, class Fn, class Fallback>
auto guarded(Impl& impl, Fn&& fn, Fallback&& fallback) noexcept -> std::invoke_result_t<Fn&> {
  using Result = std::invoke_result_t<Fn&>;
  try {
    if constexpr (std::is_void_v<Result>) {
      fn();
      impl.check_invariants();
    } else {
      Result r = fn();
      impl.check_invariants();
      return r;
    }
  } catch (...) {
    impl.on_internal_error();  // poisons the state on purpose: nothing left to check (invariants.hpp)
    return fallback();
  }
}

/// guarded() for an input with no result.
template <class Impl, class Fn>
void guarded(Impl& impl, Fn&& fn) noexcept {
  guarded(impl, std::forward<Fn>(fn), [] {});
}

}  // namespace detail

// ---- Producer: thin, exception-free forwarding to Impl ---------------------------------

template <class Policy>
std::optional<ConfigError> Producer<Policy>::validate(const Config& c) {
  return detail::validate_config(c);
}

template <class Policy>
tl::expected<Producer<Policy>, ConfigError> Producer<Policy>::create(Config config) {
  if (auto error = validate(config)) return tl::unexpected(std::move(*error));
  try {
    return Producer(std::make_unique<Impl>(std::move(config)));
  } catch (const std::bad_alloc&) {
    return tl::unexpected(ConfigError{"max_unacked_batches", "allocation failed"});
  }
}

template <class Policy>
Producer<Policy>::Producer(std::unique_ptr<Impl> impl) noexcept : impl_{std::move(impl)}, unpolled_{&impl_->unpolled} {}
template <class Policy>
Producer<Policy>::Producer(Producer&& other) noexcept
    : impl_{std::move(other.impl_)}, unpolled_{std::exchange(other.unpolled_, &kNoActions)} {}
template <class Policy>
Producer<Policy>& Producer<Policy>::operator=(Producer&& other) noexcept {
  impl_ = std::move(other.impl_);
  unpolled_ = std::exchange(other.unpolled_, &kNoActions);
  return *this;
}
template <class Policy>
Producer<Policy>::~Producer() = default;

template <class Policy>
std::uint64_t Producer<Policy>::submit_fast(Instant now, std::span<const std::byte> record) noexcept {
  return detail::guarded(
      *impl_, [&] { return impl_->accept_fast(now, record); }, [] { return kNoTicket; });
}

template <class Policy>
tl::expected<Ticket, Rejection> Producer<Policy>::submit_slow(Instant now, std::span<const std::byte> record) {
  return detail::guarded(
      *impl_, [&] { return impl_->submit(now, record); },
      [&]() -> tl::expected<Ticket, Rejection> { return impl_->reject_failed(); });
}

template <class Policy>
template <class Record>
SubmitManyResult Producer<Policy>::submit_many_guarded(Instant now, std::span<const Record> records) {
  SubmitManyResult out;
  detail::guarded(
      *impl_, [&] { impl_->submit_many(now, records, out); },
      [&] {  // as submit() would: the record being added is refused with the failure (D4)
        ++impl_->stats.records_rejected;
        out.refused = impl_->reject_failed().value();
      });
  return out;
}

template <class Policy>
SubmitManyResult Producer<Policy>::submit_many(Instant now, std::span<const std::span<const std::byte>> records) {
  return submit_many_guarded(now, records);
}

template <class Policy>
SubmitManyResult Producer<Policy>::submit_many(Instant now, std::span<const std::string_view> records) {
  return submit_many_guarded(now, records);
}

template <class Policy>
tl::expected<BarrierId, Rejection> Producer<Policy>::flush(Instant now) {
  return detail::guarded(
      *impl_, [&] { return impl_->flush(now); },
      [&]() -> tl::expected<BarrierId, Rejection> { return impl_->reject_failed(); });
}

template <class Policy>
std::optional<tl::expected<void, Error>> Producer<Policy>::close(Instant now) {
  return detail::guarded(
      *impl_, [&] { return impl_->close(now); },
      []() -> std::optional<tl::expected<void, Error>> { return std::nullopt; });
}

template <class Policy>
void Producer<Policy>::seal_partial_batch(Instant now) {
  detail::guarded(*impl_, [&] { impl_->seal_partial_batch(now); });
}

template <class Policy>
void Producer<Policy>::abort(Instant now) {
  detail::guarded(*impl_, [&] { impl_->abort(now); });
}

template <class Policy>
void Producer<Policy>::handle_ack(Instant now, BatchId batch, std::uint32_t attempt, Ack ack) {
  detail::guarded(*impl_, [&] { impl_->handle_ack(now, batch, attempt, std::move(ack)); });
}

template <class Policy>
void Producer<Policy>::handle_failure(Instant now, BatchId batch, std::uint32_t attempt, Error failure) {
  detail::guarded(*impl_, [&] { impl_->handle_failure(now, batch, attempt, std::move(failure)); });
}

template <class Policy>
void Producer<Policy>::handle_timeout(Instant now) {
  detail::guarded(*impl_, [&] { impl_->handle_timeout(now); });
}

template <class Policy>
std::optional<typename Producer<Policy>::ActionType> Producer<Policy>::poll_action_slow() {
  return detail::guarded(
      *impl_, [&] { return impl_->poll_action(); }, []() -> std::optional<ActionType> { return std::nullopt; });
}

template <class Policy>
std::optional<Instant> Producer<Policy>::next_deadline() const {
  return impl_->next_deadline();
}
template <class Policy>
ProducerState Producer<Policy>::state() const noexcept {
  return impl_->lifecycle;
}
template <class Policy>
const std::optional<Error>& Producer<Policy>::terminal_error() const noexcept {
  return impl_->failed;
}
template <class Policy>
std::uint64_t Producer<Policy>::unacked_bytes() const noexcept {
  return impl_->unacked_bytes;
}
template <class Policy>
std::uint32_t Producer<Policy>::in_flight() const noexcept {
  return impl_->in_flight;
}
template <class Policy>
std::uint32_t Producer<Policy>::unacked_batches() const noexcept {
  return impl_->ring.size();
}
template <class Policy>
std::size_t Producer<Policy>::pending_actions() const noexcept {
  return impl_->actions.size() - impl_->action_read;
}
template <class Policy>
const ProducerStats& Producer<Policy>::stats() const noexcept {
  return impl_->stats;
}
template <class Policy>
const typename Producer<Policy>::Config& Producer<Policy>::config() const noexcept {
  return impl_->config;
}
template <class Policy>
const Policy& Producer<Policy>::policy() const noexcept {
  return impl_->policy;
}

}  // namespace prodsm
