// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file producer_submit.hpp
/// Internal: Producer<Policy>::Impl (producer_impl.hpp), part of its definition.
/// The inputs that add work: submit, submit_many and their fast paths (B1, B4, R1, R2,
/// S8), and flush (F1–F3).

#include "prodsm/detail/producer_impl.hpp"

namespace prodsm {

template <class Policy>
inline auto Producer<Policy>::Impl::submit(Instant now, std::span<const std::byte> record)
    -> tl::expected<Ticket, Rejection> {
  auto result = accept(now, record);
  if (!result) ++stats.records_rejected;
  return result;
}

template <class Policy>
template <class Record>
inline void Producer<Policy>::Impl::submit_many(Instant now, std::span<const Record> records, SubmitManyResult& out) {
  out.first = Ticket{next_ticket};
  if (records.empty()) return;  // like no submit at all: not even `now` is observed
  now = observe(now);
  const std::size_t n = records.size();
  std::size_t i = 0;
  while (i < n) {
    if (open_ != nullptr && lifecycle == ProducerState::open) [[likely]] {
      i = fill_open_batch(records, i, out);
      if (i == n) break;
    }
    auto result = accept_slow(now, record_bytes(records[i]));
    if (!result) {
      ++stats.records_rejected;
      out.refused = std::move(result.error());
      return;
    }
    out.accepted = ++i;
  }
}

template <class Policy>
template <class Record>
inline std::size_t Producer<Policy>::Impl::fill_open_batch(std::span<const Record> records, std::size_t i,
                                                           SubmitManyResult& out) {
  Batch& target = *open_;
  struct WriteBack {
    Impl& self;
    Batch& target;
    SubmitManyResult& out;
    std::size_t& i;
    std::uint32_t count;
    std::uint64_t body_bytes;
    std::uint64_t metered = 0;
    ~WriteBack() {
      const std::uint32_t added = count - target.count;
      target.count = count;
      target.body_bytes = body_bytes;
      target.metered_bytes += metered;
      self.unacked_bytes += metered;
      self.next_ticket += added;
      self.stats.records_accepted += added;
      self.stats.metered_bytes_accepted += metered;
      out.accepted = i;
    }
  } w{*this, target, out, i, target.count, target.body_bytes};
  const std::uint32_t max_records = max_batch_records;
  const std::uint64_t max_bytes = max_batch_bytes - policy.min_record_bytes();  // >= 0: B2 validation
  const std::uint64_t room = unacked_bytes < max_unacked_bytes ? max_unacked_bytes - unacked_bytes : 0;  // R1
  auto& body = target.buffers.body;
  const std::size_t n = records.size();
  for (; i < n; ++i) {
    const auto record = record_bytes(records[i]);
    const std::uint64_t meter = policy.metered_bytes(record.size());
    if (w.count + 1 >= max_records || w.body_bytes + meter > max_bytes || w.metered + meter > room ||
        policy.check_record(record)) {
      break;
    }
    policy.frame_record(body, record, w.count);
    if constexpr (Policy::kKeepsRecordEnds) {
      target.buffers.record_ends.push_back(static_cast<std::uint32_t>(body.size()));
    }
    ++w.count;
    w.body_bytes += meter;
    w.metered += meter;
  }
  return i;
}

template <class Policy>
inline std::uint64_t Producer<Policy>::Impl::accept_fast(Instant now, std::span<const std::byte> record) {
  observe(now);
  Batch* target = open_;
  if (target != nullptr && lifecycle == ProducerState::open) [[likely]] {
    const std::uint64_t meter = policy.metered_bytes(record.size());
    if (target->count + 1 < max_batch_records &&
        target->body_bytes + meter + policy.min_record_bytes() <= max_batch_bytes &&
        unacked_bytes + meter <= max_unacked_bytes && !policy.check_record(record)) {
      append(*target, record, meter);
      return next_ticket++;
    }
  }
  return kNoTicket;
}

template <class Policy>
inline auto Producer<Policy>::Impl::accept(Instant now, std::span<const std::byte> record)
    -> tl::expected<Ticket, Rejection> {
  const std::uint64_t ticket = accept_fast(now, record);
  if (ticket != kNoTicket) [[likely]]
    return Ticket{ticket};
  return accept_slow(last_now.latest(), record);  // accept_fast observed `now`
}

template <class Policy>
inline void Producer<Policy>::Impl::append(Batch& target, std::span<const std::byte> record, std::uint64_t meter) {
  policy.frame_record(target.buffers.body, record, target.count);
  if constexpr (Policy::kKeepsRecordEnds) {
    target.buffers.record_ends.push_back(static_cast<std::uint32_t>(target.buffers.body.size()));
  }
  ++target.count;
  target.body_bytes += meter;
  target.metered_bytes += meter;
  unacked_bytes += meter;
  ++stats.records_accepted;
  stats.metered_bytes_accepted += meter;
}

template <class Policy>
auto Producer<Policy>::Impl::accept_slow(Instant now, std::span<const std::byte> record)
    -> tl::expected<Ticket, Rejection> {
  if (lifecycle == ProducerState::closing || lifecycle == ProducerState::closed) {
    return reject(RejectReason::closed, "the producer is closed");  // C2
  }
  if (lifecycle == ProducerState::failed) return reject_failed();  // E1
  if (auto why = policy.check_record(record)) return reject(RejectReason::invalid_record, *why);
  const std::uint64_t meter = policy.metered_bytes(record.size());
  if (meter + policy.batch_overhead_bytes() > config.max_batch_bytes) {  // B4
    return reject(RejectReason::record_too_large, "record exceeds max_batch_bytes");
  }
  Batch* target = open_;
  const bool fits =
      target != nullptr && target->count < max_batch_records && target->body_bytes + meter <= config.max_batch_bytes;
  const bool bytes_full = unacked_bytes + meter > config.max_unacked_bytes;
  const bool batches_full = !fits && ring.full();
  if (bytes_full || batches_full) {  // R1
    if (target != nullptr) {         // R2: linger never holds capacity hostage
      seal(*target);
      pump();
    }
    capacity_wanted = true;
    ++stats.would_blocks;
    return reject(RejectReason::would_block, bytes_full ? "max_unacked_bytes reached" : "max_unacked_batches reached");
  }
  bool sealed = false;
  if (!fits) {  // B1: the record that would overflow starts the next batch
    // S8: no batch could be numbered after the open one: refused, the open batch left as it is.
    if (policy.record_room(target != nullptr ? target->count : 0) == 0) {
      return reject(RejectReason::sequence_exhausted, Policy::kExhausted);
    }
    if (target != nullptr) {
      seal(*target);
      sealed = true;
    }
    target = &start_batch(now);
  }
  append(*target, record, meter);
  const Ticket ticket{next_ticket++};
  if (target->count == max_batch_records ||  // B1: full (S8: or at the protocol's limit)
      target->body_bytes + policy.min_record_bytes() > config.max_batch_bytes) {
    seal(*target);
    sealed = true;
  }
  if (sealed) pump();
  return ticket;
}

template <class Policy>
void Producer<Policy>::Impl::seal_partial_batch(Instant now) {
  observe(now);
  if (lifecycle != ProducerState::open) return;
  if (Batch* open = open_batch()) {  // R2: a refusal above the core never waits on linger
    seal(*open);
    pump();
  }
}

template <class Policy>
auto Producer<Policy>::Impl::flush(Instant now) -> tl::expected<BarrierId, Rejection> {
  observe(now);
  if (lifecycle == ProducerState::closing || lifecycle == ProducerState::closed) {
    return reject(RejectReason::closed, "the producer is closed");  // C2
  }
  if (lifecycle == ProducerState::failed) return reject_failed();  // E1
  if (barriers.size() >= config.max_pending_barriers) {            // R3
    capacity_wanted = true;
    ++stats.would_blocks;
    return reject(RejectReason::would_block, "max_pending_barriers reached");
  }
  if (Batch* open = open_batch()) seal(*open);  // F1: no linger wait; B5: no batch spans it
  const std::uint64_t id = next_barrier_id++;
  ++stats.barriers_accepted;
  const std::uint64_t cutoff = next_ticket;  // P1: covers everything submitted before it
  if (cutoff <= completed_tickets) {
    emit_barrier(id, cutoff);  // F3: nothing before it; sends nothing
  } else {
    barriers.push_back(PendingBarrier{id, cutoff});
  }
  pump();
  return BarrierId{id};
}

}  // namespace prodsm
