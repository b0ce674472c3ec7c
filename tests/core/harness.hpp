// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test harness for the Producer core on virtual time: drains every action after each
// input (the drive rule), copies what it sees into plain records, and keeps a textual
// trace of every action so tests can assert order and D2 can compare runs byte for byte.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "prodsm/durable_streams.hpp"
#include "prodsm/s2.hpp"

namespace prodsm::test {

using namespace std::chrono_literals;

inline Instant at_ms(std::int64_t ms) {
  return Instant{} + std::chrono::milliseconds{ms};
}

inline std::string stamp_text(const DurableStreamsPolicy::Stamp& s) {
  if (!s.sequenced) return "plain";
  return "e" + std::to_string(s.epoch) + "/s" + std::to_string(s.seq);
}
inline std::string stamp_text(const S2Policy::Stamp& s) {
  std::string out = s.match_seq_num ? "m" + std::to_string(*s.match_seq_num) : "m-";
  if (s.fenced) out += "/f:" + std::string(s.fencing_token());
  return out;
}
inline std::string ack_text(const DurableStreamsPolicy::Ack& a) {
  return a.duplicate ? "dup" : "off=" + a.next_offset;
}
inline std::string ack_text(const S2Policy::Ack& a) {
  return "[" + std::to_string(a.start_seq_num) + "," + std::to_string(a.end_seq_num) + ")";
}

/// One SendBatch as seen by the driver, copied (the body is owned by the core).
template <class Policy>
struct Sent {
  BatchId batch;
  std::uint32_t attempt = 0;
  std::uint64_t first = 0;
  std::uint32_t count = 0;
  std::string body;
  std::vector<std::uint32_t> record_ends;
  typename Policy::Stamp stamp;
};

/// One TicketsCompleted, copied.
template <class Policy>
struct Done {
  BatchId batch;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::optional<typename Policy::Ack> ack;
  std::optional<Error> error;
  [[nodiscard]] bool ok() const { return ack.has_value(); }
};

struct BarrierDone {
  std::uint64_t id = 0;
  std::optional<Error> error;
  [[nodiscard]] bool ok() const { return !error.has_value(); }
};

template <class Policy>
class Harness {
 public:
  using Config = ProducerConfig<Policy>;

  explicit Harness(Config config) : producer_{make(std::move(config))} {}
  /// Virtual time starting at `start` instead of the clock's epoch (D3: only differences
  /// between instants matter, so a start before the epoch is as good as any).
  Harness(Config config, Instant start) : producer_{make(std::move(config))}, now_{start} {}

  static Producer<Policy> make(Config config) {
    auto created = Producer<Policy>::create(std::move(config));
    if (!created) {
      ADD_FAILURE() << "config rejected: " << created.error().message();
      std::abort();
    }
    return std::move(*created);
  }

  Producer<Policy>& producer() { return producer_; }
  Instant now() const { return now_; }

  // ---- inputs (each followed by a full drain) ----------------------------------------
  tl::expected<Ticket, Rejection> try_submit(std::string_view record) {
    auto r = producer_.submit(now_, record);
    trace_ << "submit " << record.size() << "B -> "
           << (r ? "t" + std::to_string(r->value) : std::string(to_string(r.error().reason))) << "\n";
    drain();
    return r;
  }
  std::uint64_t submit(std::string_view record) {
    auto r = try_submit(record);
    EXPECT_TRUE(r.has_value()) << "submit refused: " << (r ? "" : r.error().detail);
    return r ? r->value : UINT64_MAX;
  }
  /// submit_many of `records`, traced as one input, then a full drain.
  SubmitManyResult submit_many(const std::vector<std::string_view>& records) {
    auto r = producer_.submit_many(now_, std::span<const std::string_view>(records));
    trace_ << "submit_many " << records.size() << " -> t" << r.first.value << "+" << r.accepted;
    if (r.refused) trace_ << " refused " << to_string(r.refused->reason);
    trace_ << "\n";
    drain();
    return r;
  }
  tl::expected<BarrierId, Rejection> try_flush() {
    auto r = producer_.flush(now_);
    trace_ << "flush -> " << (r ? "b" + std::to_string(r->value) : std::string(to_string(r.error().reason))) << "\n";
    drain();
    return r;
  }
  std::uint64_t flush() {
    auto r = try_flush();
    EXPECT_TRUE(r.has_value());
    return r ? r->value : UINT64_MAX;
  }
  std::optional<tl::expected<void, Error>> close() {
    auto r = producer_.close(now_);
    trace_ << "close -> " << (r ? (*r ? "ok" : "err") : "pending") << "\n";
    drain();
    return r;
  }
  void seal_partial_batch() {
    producer_.seal_partial_batch(now_);
    trace_ << "seal_partial_batch\n";
    drain();
  }
  void abort() {
    producer_.abort(now_);
    trace_ << "abort\n";
    drain();
  }
  /// Moves virtual time forward by `d` and fires the timer (D3: may be spurious).
  void advance(Duration d) {
    now_ += d;
    producer_.handle_timeout(now_);
    trace_ << "timeout @" << now_.time_since_epoch().count() << "\n";
    drain();
  }
  /// Fires the timer at exactly next_deadline(), if any.
  bool fire_next_deadline() {
    auto d = producer_.next_deadline();
    if (!d) return false;
    if (*d > now_) now_ = *d;
    producer_.handle_timeout(now_);
    trace_ << "timeout @" << now_.time_since_epoch().count() << "\n";
    drain();
    return true;
  }
  void ack(const Sent<Policy>& s, typename Policy::Ack a) {
    trace_ << "ack b" << s.batch.value << "#" << s.attempt << " " << ack_text(a) << "\n";
    producer_.handle_ack(now_, s.batch, s.attempt, std::move(a));
    drain();
  }
  void fail(const Sent<Policy>& s, Error e) {
    trace_ << "fail b" << s.batch.value << "#" << s.attempt << " " << e.describe() << "\n";
    producer_.handle_failure(now_, s.batch, s.attempt, std::move(e));
    drain();
  }

  // ---- observations ------------------------------------------------------------------
  /// Sends not yet taken by the test, oldest first.
  std::vector<Sent<Policy>>& outbox() { return outbox_; }
  /// Removes and returns the oldest unanswered send.
  Sent<Policy> take_send() {
    EXPECT_FALSE(outbox_.empty()) << "expected a SendBatch";
    if (outbox_.empty()) return {};
    Sent<Policy> s = outbox_.front();
    outbox_.erase(outbox_.begin());
    return s;
  }
  std::vector<Sent<Policy>> take_all_sends() {
    auto out = std::move(outbox_);
    outbox_.clear();
    return out;
  }
  const std::vector<Sent<Policy>>& all_sends() const { return all_sends_; }
  const std::vector<Done<Policy>>& completions() const { return completions_; }
  const std::vector<BarrierDone>& barriers() const { return barriers_; }
  const std::optional<tl::expected<void, Error>>& closed() const { return closed_; }
  int closed_count() const { return closed_count_; }
  int capacity_events() const { return capacity_events_; }
  /// Order of completion-like events: "t0-2", "b0", "closed", "cap".
  const std::vector<std::string>& order() const { return order_; }
  std::string trace() const { return trace_.str(); }
  /// Every ticket's outcome, indexed by ticket: 1 success, -1 failure, 0 none yet.
  std::vector<int> ticket_outcomes(std::uint64_t tickets) const {
    std::vector<int> out(tickets, 0);
    for (const auto& d : completions_) {
      for (std::uint64_t t = d.first; t <= d.last && t < tickets; ++t) {
        EXPECT_EQ(out[t], 0) << "ticket " << t << " completed twice (P2)";
        out[t] = d.ok() ? 1 : -1;
      }
    }
    return out;
  }

  void drain() {
    while (auto action = producer_.poll_action()) record(std::move(*action));
  }

 private:
  void record(Action<Policy> action) {
    EXPECT_EQ(closed_count_, 0) << "an action after Closed (C1: Closed is last)";
    std::visit(
        [this](auto&& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, SendBatch<Policy>>) {
            Sent<Policy> s;
            s.batch = a.batch;
            s.attempt = a.attempt;
            s.first = a.first_ticket.value;
            s.count = a.record_count;
            s.body.assign(reinterpret_cast<const char*>(a.body.data()), a.body.size());
            s.record_ends.assign(a.record_ends.begin(), a.record_ends.end());
            s.stamp = a.stamp;
            EXPECT_GE(s.count, 1U) << "B5: empty batch sent";
            trace_ << "  SEND b" << s.batch.value << "#" << s.attempt << " t" << s.first << "+" << s.count << " "
                   << stamp_text(s.stamp) << " body=" << s.body << "\n";
            outbox_.push_back(s);
            all_sends_.push_back(s);
          } else if constexpr (std::is_same_v<T, TicketsCompleted<Policy>>) {
            Done<Policy> d;
            d.batch = a.batch;
            d.first = a.first.value;
            d.last = a.last.value;
            if (a.result) {
              d.ack = *a.result;
            } else {
              d.error = a.result.error();
            }
            trace_ << "  DONE t" << d.first << "-" << d.last << " " << (d.ok() ? ack_text(*d.ack) : d.error->describe())
                   << "\n";
            order_.push_back("t" + std::to_string(d.first) + "-" + std::to_string(d.last));
            completions_.push_back(std::move(d));
          } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
            BarrierDone b;
            b.id = a.barrier.value;
            if (!a.result) b.error = a.result.error();
            trace_ << "  BARRIER b" << b.id << " " << (b.ok() ? "ok" : b.error->describe()) << "\n";
            order_.push_back("b" + std::to_string(b.id));
            barriers_.push_back(std::move(b));
          } else if constexpr (std::is_same_v<T, Closed>) {
            ++closed_count_;
            closed_ = a.result;
            trace_ << "  CLOSED " << (a.result ? "ok" : a.result.error().describe()) << "\n";
            order_.push_back("closed");
          } else if constexpr (std::is_same_v<T, CapacityAvailable>) {
            ++capacity_events_;
            trace_ << "  CAPACITY\n";
            order_.push_back("cap");
          }
        },
        std::move(action));
  }

  Producer<Policy> producer_;
  Instant now_{};
  std::vector<Sent<Policy>> outbox_;
  std::vector<Sent<Policy>> all_sends_;
  std::vector<Done<Policy>> completions_;
  std::vector<BarrierDone> barriers_;
  std::optional<tl::expected<void, Error>> closed_;
  int closed_count_ = 0;
  int capacity_events_ = 0;
  std::vector<std::string> order_;
  std::ostringstream trace_;
};

using DsHarness = Harness<DurableStreamsPolicy>;
using S2Harness = Harness<S2Policy>;

/// Long lingers (tests use 1 h to show a flush does not wait) need a delivery timeout
/// above them (validation, E6); 24 h keeps E6 out of the way of those tests.
inline Duration delivery_for(Linger linger) {
  return (!linger.is_disabled() && linger.duration_ns() >= 120s) ? Duration{24h} : Duration{120s};
}

/// A Durable Streams config with the given linger; other fields at their defaults.
inline DurableStreamsConfig ds_config(Linger linger = Linger::after(5ms)) {
  DurableStreamsConfig c;
  c.linger = linger;
  c.delivery_timeout_ns = delivery_for(linger);
  return c;
}
/// The same with the idempotent producer "p1", epoch 0.
inline DurableStreamsConfig ds_idempotent(Linger linger = Linger::after(5ms), bool auto_claim = false) {
  DurableStreamsConfig c = ds_config(linger);
  c.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"p1", 0, auto_claim};
  return c;
}
inline S2Config s2_config(Linger linger = Linger::after(5ms)) {
  S2Config c;
  c.linger = linger;
  c.delivery_timeout_ns = delivery_for(linger);
  return c;
}

inline DurableStreamsPolicy::Ack offset(std::string o) {
  return {std::move(o), false};
}
inline DurableStreamsPolicy::Ack duplicate() {
  return {"", true};
}
inline S2Policy::Ack positions(std::uint64_t start, std::uint64_t end) {
  return {start, end};
}

inline Error failure(ErrorCode code, Certainty certainty, bool retryable) {
  return make_error(code, certainty, retryable, std::string(to_string(code)));
}
inline Error unavailable() {
  return failure(ErrorCode::unavailable, Certainty::definite, true);
}
inline Error connection_lost() {
  return failure(ErrorCode::connection_lost, Certainty::indefinite, true);
}
inline Error gap(std::uint64_t expected, std::uint64_t received) {
  Error e = failure(ErrorCode::sequence_gap, Certainty::definite, false);
  e.expected_seq = expected;
  e.received_seq = received;
  return e;
}
inline Error stale_epoch(std::uint64_t server_epoch) {
  Error e = failure(ErrorCode::stale_epoch, Certainty::definite, false);
  e.server_epoch = server_epoch;
  return e;
}
inline Error stream_closed(std::string final_offset) {
  Error e = failure(ErrorCode::stream_closed, Certainty::definite, false);
  e.final_offset = std::move(final_offset);
  return e;
}

}  // namespace prodsm::test
