// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_policy.hpp
/// The ProducerPolicy concept: everything Producer<Policy> asks of its protocol policy
/// (detail/producer_impl.hpp and the detail headers it includes, config.hpp, action.hpp),
/// and nothing more. A policy author reads this file to learn what to provide; the shipped
/// policies are DurableStreamsPolicy (prodsm/durable_streams_policy.hpp) and S2Policy
/// (prodsm/s2_policy.hpp). Clause IDs are those of docs/contract.md.
///
/// How to read the requirements:
///  - `p.name(...)`: called on the core's own policy object, a non-const `Policy&`; the
///    member may be const or static (the shipped policies make every query const);
///  - `P::name(...)`: called without an object, so it must be a static member function;
///  - a result the core binds with `auto` and then tests and dereferences (or passes to
///    `std::min`) must be exactly the named type (`std::same_as`); a result the core only
///    converts, assigns or tests must convert to it (`std::convertible_to`);
///  - constants are static data members of the named type (`static constexpr` in the
///    shipped policies; only kKeepsRecordEnds and kChecksOrder, read by `if constexpr`,
///    must be constant expressions).
/// Not the policy's: the retry backoff (backoff_initial_ns, backoff_max_ns,
/// backoff_multiplier, jitter_seed) is RetryPolicy in config.hpp, the same for every
/// protocol (E4, detail/backoff.hpp).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "prodsm/batch_body.hpp"
#include "prodsm/config.hpp"

namespace prodsm {
namespace detail {

/// `Ptr` is `decltype(&Policy::name)` for a static data member of type `T` (const or
/// not): a plain pointer, where a non-static member would give a pointer to member.
template <class Ptr, class T>
concept static_member_of = std::is_pointer_v<Ptr> && std::same_as<std::remove_cv_t<std::remove_pointer_t<Ptr>>, T>;

/// Likewise for static text the core keeps as a std::string_view (so it must outlive the
/// Producer: a static data member, e.g. `static constexpr std::string_view`).
template <class Ptr>
concept static_text_member = std::is_pointer_v<Ptr> &&
    std::convertible_to<std::add_lvalue_reference_t<std::remove_pointer_t<Ptr>>, std::string_view>;

/// ProducerPolicy, part 1: the types.
template <class P>
concept policy_types = requires {
  /// Stamps of one batch: fixed at seal, kept by every resend (S1, S2), renumbered by an epoch claim (S5).
  typename P::Stamp;
  /// What the transport reports for an appended batch; TicketsCompleted carries it (P4, S3).
  typename P::Ack;
  /// The protocol options: ProducerConfig<P>::protocol (B3).
  typename P::Options;
  /// Stamp: default-constructed in every new batch, copied into every SendBatch (S1, S2).
  requires std::semiregular<typename P::Stamp>;
  /// Ack: copied as the previous ack for the order check (E5), moved into TicketsCompleted (P4).
  requires std::copyable<typename P::Ack>;
  /// Options: value-initialized as ProducerConfig's default (`protocol{}`), moved into the Producer (B3).
  requires std::default_initializable<typename P::Options> && std::move_constructible<typename P::Options>;
  /// Built once per Producer from options that passed validate(): starts the configured sequencing (S1, S2).
  requires std::constructible_from<P, typename P::Options&>;
};

/// ProducerPolicy, part 2: the constants.
template <class P>
concept policy_constants = requires {
  /// ProducerConfig's default max_batch_records (B1, B3).
  { &P::kDefaultMaxBatchRecords } -> static_member_of<std::uint32_t>;
  /// Largest valid max_batch_records: validation's upper bound (B3).
  { &P::kMaxBatchRecordsCap } -> static_member_of<std::uint32_t>;
  /// ProducerConfig's default max_batch_bytes, in metered bytes (B1, B3).
  { &P::kDefaultMaxBatchBytes } -> static_member_of<std::uint64_t>;
  /// Smallest valid max_batch_bytes, validation's lower bound: room for the smallest record (B3, B4).
  { &P::kMinBatchBytes } -> static_member_of<std::uint64_t>;
  /// Largest valid max_batch_bytes: validation's upper bound (B3).
  { &P::kMaxBatchBytesCap } -> static_member_of<std::uint64_t>;
  /// True: SendBatch::record_ends marks where record i (ticket first + i) ends in the body (P4).
  { &P::kKeepsRecordEnds } -> static_member_of<bool>;
  /// True: every completed ack is checked against the one completed before it, by check_order (E5).
  { &P::kChecksOrder } -> static_member_of<bool>;
  /// Static text of the sequence_exhausted refusal, given when record_room is 0 (S8).
  { &P::kExhausted } -> static_text_member;
  /// kKeepsRecordEnds is a constant expression: the core reads it with `if constexpr` (P4).
  typename std::bool_constant<P::kKeepsRecordEnds>;
  /// kChecksOrder is a constant expression: the core reads it with `if constexpr` (E5).
  typename std::bool_constant<P::kChecksOrder>;
};

/// ProducerPolicy, part 3: the functions, with the arguments the core passes.
template <class P>
concept policy_functions = requires(P& p, const typename P::Options& options, std::span<const std::byte> record,
                                    std::size_t record_size, BatchBody& body, std::uint32_t count,
                                    std::uint64_t server_epoch, typename P::Stamp& stamp, typename P::Ack& ack) {
  /// The options' own checks, run after the core's; the error names its field, "protocol.<field>" (B3).
  { P::validate(options) } -> std::convertible_to<std::optional<ConfigError>>;
  /// Why the protocol cannot carry `record` (static text), or nullopt: checked at every submit (B5).
  { p.check_record(record) } -> std::same_as<std::optional<std::string_view>>;
  /// Bytes a record of `record_size` bytes adds, against max_batch_bytes and max_unacked_bytes (B1, B4, R1).
  { p.metered_bytes(record_size) } -> std::convertible_to<std::uint64_t>;
  /// Metered bytes of the smallest acceptable record: a batch with less room left is full, sealed (B1).
  { p.min_record_bytes() } -> std::convertible_to<std::uint64_t>;
  /// Body bytes beyond the records' metered bytes; a record too large with them is record_too_large (B4).
  { p.batch_overhead_bytes() } -> std::convertible_to<std::uint64_t>;
  /// Appends record `count` (from 0) of the batch to `body`, framed once, resent byte-identical (B1, S2).
  p.frame_record(body, record, count);
  /// Completes `body` when the batch is sealed; no record is framed after it (B1, B5, S2).
  p.frame_seal(body);
  /// Stamps a batch of `count` records: at seal, and again when an epoch claim renumbers it (S1, S2, S5).
  { p.stamp(count) } -> std::convertible_to<typename P::Stamp>;
  /// Records a new batch may hold and still be stamped; exactly u32: std::min with max_batch_records (S8).
  { p.record_room() } -> std::same_as<std::uint32_t>;
  /// The same once the open batch of `count` records is sealed; 0 refuses with sequence_exhausted (S8).
  { p.record_room(count) } -> std::convertible_to<std::uint32_t>;
  /// True when an indefinite failure may be resent without duplicating (RetryMode::all; E4).
  { p.resend_is_safe() } -> std::convertible_to<bool>;
  /// True when a stale epoch may be answered with an epoch claim (S5).
  { p.can_claim_epoch() } -> std::convertible_to<bool>;
  /// Claims server_epoch + 1, or says why not (then a terminal stale_epoch); the core restamps (S5, S8).
  { p.claim_epoch(server_epoch) } -> std::same_as<std::optional<std::string>>;
  /// The batch's seq when the protocol numbers batches, for the gap rule; nullopt: no gap is resolvable (S4).
  { P::sequence_of(stamp) } -> std::same_as<std::optional<std::uint64_t>>;
  /// Why `ack` cannot acknowledge a batch stamped `stamp` of `count` records, or nullopt: invalid_ack (E5).
  { p.check_ack(stamp, count, ack) } -> std::same_as<std::optional<std::string>>;
  /// True when the ack reports an already-applied duplicate, which has no position to order (S3, E5).
  { P::is_duplicate(ack) } -> std::convertible_to<bool>;
  /// Flags a duplicate that answered a first attempt: an earlier incarnation appended it, not us (S3).
  P::mark_earlier_incarnation(ack);
  /// True when such a duplicate fails the producer; the epoch's first batch then goes alone (S3).
  { p.fails_first_attempt_duplicates() } -> std::convertible_to<bool>;
};

/// ProducerPolicy, part 4: the order check, needed only with kChecksOrder (policy_order_check).
template <class P>
concept policy_check_order = requires(P& p, typename P::Ack& previous, typename P::Ack& next) {
  /// Why `next` cannot follow `previous`, the acks of two batches completed one after the other, or nullopt (E5).
  { p.check_order(previous, next) } -> std::same_as<std::optional<std::string>>;
};
// A failure here means: kChecksOrder is true but `p.check_order(previous, next)`
// returning std::optional<std::string> is missing (E5); compilers name it only with a
// deeper concepts diagnostic (g++: -fconcepts-diagnostics-depth=3).
template <class P>
concept policy_order_check = !P::kChecksOrder || policy_check_order<P>;

}  // namespace detail

/// What a wire protocol supplies to Producer<P>: record metering, body framing,
/// sequencing stamps and ack validation (the four parts above, checked in order, so a
/// failed check names the part). Satisfied by DurableStreamsPolicy and S2Policy.
template <class P>
concept ProducerPolicy = detail::policy_types<P> && detail::policy_constants<P> && detail::policy_functions<P> &&
    detail::policy_order_check<P>;

}  // namespace prodsm
