// SPDX-License-Identifier: Apache-2.0
// The ProducerPolicy concept (prodsm/producer_policy.hpp): the shipped policies satisfy it;
// policies that lack one thing the core uses do not; and a minimal policy that satisfies
// it — no more than the concept asks: non-const members, a move-only Options, an Ack with
// no default constructor, no check_order without kChecksOrder — instantiates and drives
// the core. Compile-time checks are static_asserts (the file does not build when one
// breaks), repeated as EXPECTs so the tests report them.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "prodsm/detail/producer_impl.hpp"
#include "prodsm/durable_streams_policy.hpp"
#include "prodsm/producer_policy.hpp"
#include "prodsm/s2_policy.hpp"

// ---- a sketch policy: positions like S2, every part switchable ----------------------
// (In a named namespace: the core is explicitly instantiated for it at the end, which
// needs types with external linkage.)
namespace prodsm::test::policy_sketch {

/// Stamp: the position of the batch's first record.
struct SketchStamp {
  std::uint64_t first = 0;
};

/// Ack: the batch occupies positions [start, end). No default constructor.
struct SketchAck {
  SketchAck(std::uint64_t s, std::uint64_t e) : start{s}, end{e} {}
  std::uint64_t start;
  std::uint64_t end;
};

/// Options: move-only (the core moves the config, never copies it).
struct SketchOptions {
  SketchOptions() = default;
  SketchOptions(SketchOptions&&) = default;
  SketchOptions& operator=(SketchOptions&&) = default;
  SketchOptions(const SketchOptions&) = delete;
  SketchOptions& operator=(const SketchOptions&) = delete;
  std::uint64_t first_position = 0;
};

/// What a Sketch leaves out.
enum Omit : unsigned {
  kOmitNothing = 0,
  kOmitFrameSeal = 1U << 0,
  kOmitStampType = 1U << 1,
  kOmitCheckOrder = 1U << 2,
};

struct WithStampType {
  using Stamp = SketchStamp;
};
struct WithoutStampType {};

/// A complete policy unless `kOmit` says otherwise; `kOrdered` sets kChecksOrder.
/// Members are non-const on purpose: the core calls them on its own non-const policy.
template <unsigned kOmit = kOmitNothing, bool kOrdered = false>
class Sketch : public std::conditional_t<(kOmit & kOmitStampType) == 0, WithStampType, WithoutStampType> {
 public:
  using Ack = SketchAck;
  using Options = SketchOptions;

  static constexpr std::uint32_t kDefaultMaxBatchRecords = 100;
  static constexpr std::uint32_t kMaxBatchRecordsCap = 1000;
  static constexpr std::uint64_t kDefaultMaxBatchBytes = 1024;
  static constexpr std::uint64_t kMinBatchBytes = 1;
  static constexpr std::uint64_t kMaxBatchBytesCap = 1U << 20;
  static constexpr bool kKeepsRecordEnds = false;
  static constexpr bool kChecksOrder = kOrdered;
  static constexpr std::string_view kExhausted = "positions used up";

  static std::optional<ConfigError> validate(const Options& options) {
    if (options.first_position > 1000) return ConfigError{"protocol.first_position", "must be at most 1000"};
    return std::nullopt;
  }
  explicit Sketch(const Options& options) : next_{options.first_position} {}

  std::optional<std::string_view> check_record(std::span<const std::byte> record) {
    if (record.empty()) return "empty record";
    return std::nullopt;
  }
  std::uint64_t metered_bytes(std::size_t record_size) { return record_size; }
  std::uint64_t min_record_bytes() { return 1; }
  std::uint64_t batch_overhead_bytes() { return 0; }
  void frame_record(prodsm::BatchBody& body, std::span<const std::byte> record, std::uint32_t index) {
    (void)index;
    body.append(record);
  }
  void frame_seal(prodsm::BatchBody& body) requires((kOmit & kOmitFrameSeal) == 0) { (void)body; }
  SketchStamp stamp(std::uint32_t record_count) {
    const SketchStamp s{next_};
    next_ += record_count;
    return s;
  }
  std::uint32_t record_room(std::uint32_t open_records = 0) {
    (void)open_records;
    return UINT32_MAX;
  }
  bool resend_is_safe() { return true; }
  bool can_claim_epoch() { return false; }
  std::optional<std::string> claim_epoch(std::uint64_t server_epoch) {
    (void)server_epoch;
    return std::string{"no epochs"};
  }
  static std::optional<std::uint64_t> sequence_of(const SketchStamp& stamp) {
    (void)stamp;
    return std::nullopt;
  }
  std::optional<std::string> check_ack(const SketchStamp& stamp, std::uint32_t record_count, const SketchAck& ack) {
    if (ack.start != stamp.first || ack.end - ack.start != record_count) return std::string{"ack does not match"};
    return std::nullopt;
  }
  static bool is_duplicate(const SketchAck& ack) {
    (void)ack;
    return false;
  }
  static void mark_earlier_incarnation(SketchAck& ack) { (void)ack; }
  bool fails_first_attempt_duplicates() { return false; }
  std::optional<std::string> check_order(const SketchAck& previous,
                                         const SketchAck& next) requires(kOrdered && (kOmit & kOmitCheckOrder) == 0) {
    if (next.start < previous.end) return std::string{"positions went backwards"};
    return std::nullopt;
  }

 private:
  std::uint64_t next_;
};

/// check_ack returning static text, as check_record does: the core appends the reason to
/// a std::string, which a string_view cannot do in C++20.
struct CheckAckReturnsStaticText : Sketch<> {
  using Sketch::Sketch;
  std::optional<std::string_view> check_ack(const SketchStamp& stamp, std::uint32_t record_count,
                                            const SketchAck& ack) {
    (void)stamp;
    (void)record_count;
    (void)ack;
    return std::nullopt;
  }
};

/// record_room as a u64: std::min(max_batch_records, record_room()) does not deduce.
struct RecordRoomIsU64 : Sketch<> {
  using Sketch::Sketch;
  std::uint64_t record_room(std::uint32_t open_records = 0) {
    (void)open_records;
    return UINT32_MAX;
  }
};

/// is_duplicate as a non-static member: the core calls Policy::is_duplicate(ack).
struct IsDuplicateIsNotStatic : Sketch<> {
  using Sketch::Sketch;
  bool is_duplicate(const SketchAck& ack) const {
    (void)ack;
    return false;
  }
};

/// kChecksOrder as a mutable static: the core reads it with `if constexpr`.
struct ChecksOrderIsNotConstant : Sketch<> {
  using Sketch::Sketch;
  static inline bool kChecksOrder = false;
};

}  // namespace prodsm::test::policy_sketch

namespace prodsm::test {
namespace {

using namespace policy_sketch;

// ---- the shipped policies ------------------------------------------------------------

static_assert(ProducerPolicy<DurableStreamsPolicy>);
static_assert(ProducerPolicy<S2Policy>);

TEST(ProducerPolicy, ShippedPoliciesSatisfyTheConcept) {
  EXPECT_TRUE(ProducerPolicy<DurableStreamsPolicy>);
  EXPECT_TRUE(ProducerPolicy<S2Policy>);
  EXPECT_FALSE(ProducerPolicy<int>);
  EXPECT_FALSE(ProducerPolicy<DurableStreamsPolicy::Options>);
}

// ---- one thing missing or wrong: not a policy ----------------------------------------

// The baseline the variants below differ from by one thing each.
static_assert(ProducerPolicy<Sketch<>>);
static_assert(ProducerPolicy<Sketch<kOmitNothing, true>>);

// B1, S2: the body is completed once, at seal (Impl::seal calls frame_seal).
static_assert(!ProducerPolicy<Sketch<kOmitFrameSeal>>);
TEST(ProducerPolicy, S2_WithoutFrameSealItIsNotAPolicy) {
  EXPECT_TRUE(ProducerPolicy<Sketch<>>);
  EXPECT_FALSE(ProducerPolicy<Sketch<kOmitFrameSeal>>);
}

// S1, S2: every batch carries the policy's stamps (SendBatch::stamp).
static_assert(!ProducerPolicy<Sketch<kOmitStampType>>);
TEST(ProducerPolicy, S1_WithoutAStampTypeItIsNotAPolicy) {
  EXPECT_FALSE(ProducerPolicy<Sketch<kOmitStampType>>);
}

// E5: check_ack's reason becomes part of the invalid_ack message.
static_assert(!ProducerPolicy<CheckAckReturnsStaticText>);
TEST(ProducerPolicy, E5_CheckAckMustReturnAnOptionalString) {
  EXPECT_FALSE(ProducerPolicy<CheckAckReturnsStaticText>);
}

// S8: the open batch's cap is std::min(config.max_batch_records, record_room()).
static_assert(!ProducerPolicy<RecordRoomIsU64>);
TEST(ProducerPolicy, S8_RecordRoomMustBeExactlyUint32) {
  EXPECT_FALSE(ProducerPolicy<RecordRoomIsU64>);
}

// S3: the core asks Policy::is_duplicate(ack) without a policy object.
static_assert(!ProducerPolicy<IsDuplicateIsNotStatic>);
TEST(ProducerPolicy, S3_IsDuplicateMustBeStatic) {
  EXPECT_FALSE(ProducerPolicy<IsDuplicateIsNotStatic>);
}

// E5: check_order is needed exactly when kChecksOrder is true, and kChecksOrder must be
// a constant expression.
static_assert(!ProducerPolicy<Sketch<kOmitCheckOrder, true>>);
static_assert(ProducerPolicy<Sketch<kOmitCheckOrder, false>>);
static_assert(!ProducerPolicy<ChecksOrderIsNotConstant>);
TEST(ProducerPolicy, E5_CheckOrderIsRequiredOnlyWithKChecksOrder) {
  EXPECT_FALSE((ProducerPolicy<Sketch<kOmitCheckOrder, true>>));
  EXPECT_TRUE((ProducerPolicy<Sketch<kOmitCheckOrder, false>>));
  EXPECT_FALSE(ProducerPolicy<ChecksOrderIsNotConstant>);
}

// ---- what the concept allows is enough for the core ----------------------------------

std::string text_of(std::span<const std::byte> body) {
  return {reinterpret_cast<const char*>(body.data()), body.size()};
}

/// Submits, flushes and acknowledges two batches on Producer<P>; the second ack breaks
/// check_ack (B5, P4, S1, E5).
template <class P>
void drive_two_batches() {
  ProducerConfig<P> config;
  config.linger = Linger::disabled();
  config.protocol.first_position = 7;
  auto created = Producer<P>::create(std::move(config));
  ASSERT_TRUE(created.has_value());
  Producer<P>& producer = *created;
  const Instant now{};

  ASSERT_TRUE(producer.submit(now, "ab").has_value());
  ASSERT_TRUE(producer.submit(now, "c").has_value());
  const auto refused = producer.submit(now, "");  // B5: check_record
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason, RejectReason::invalid_record);
  EXPECT_EQ(refused.error().detail, "empty record");
  ASSERT_TRUE(producer.flush(now).has_value());

  auto action = producer.poll_action();
  ASSERT_TRUE(action.has_value());
  const auto* send = std::get_if<SendBatch<P>>(&*action);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->record_count, 2U);
  EXPECT_EQ(text_of(send->body), "abc");   // frame_record, frame_seal
  EXPECT_TRUE(send->record_ends.empty());  // kKeepsRecordEnds is false
  EXPECT_EQ(send->stamp.first, 7U);        // stamp, from the options
  const BatchId first_batch = send->batch;
  const std::uint32_t first_attempt = send->attempt;
  EXPECT_FALSE(producer.poll_action().has_value());

  producer.handle_ack(now, first_batch, first_attempt, SketchAck{7, 9});
  action = producer.poll_action();
  ASSERT_TRUE(action.has_value());
  const auto* done = std::get_if<TicketsCompleted<P>>(&*action);
  ASSERT_NE(done, nullptr);
  ASSERT_TRUE(done->result.has_value());
  EXPECT_EQ(done->first.value, 0U);
  EXPECT_EQ(done->last.value, 1U);
  EXPECT_EQ(done->result->end, 9U);
  action = producer.poll_action();
  ASSERT_TRUE(action.has_value());
  EXPECT_NE(std::get_if<BarrierCompleted>(&*action), nullptr);

  ASSERT_TRUE(producer.submit(now, "d").has_value());
  ASSERT_TRUE(producer.flush(now).has_value());
  action = producer.poll_action();
  ASSERT_TRUE(action.has_value());
  send = std::get_if<SendBatch<P>>(&*action);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->stamp.first, 9U);  // advanced by the first batch's record count
  const BatchId second_batch = send->batch;
  const std::uint32_t second_attempt = send->attempt;
  producer.handle_ack(now, second_batch, second_attempt, SketchAck{9, 11});  // one record, two positions
  action = producer.poll_action();
  ASSERT_TRUE(action.has_value());
  done = std::get_if<TicketsCompleted<P>>(&*action);
  ASSERT_NE(done, nullptr);
  ASSERT_FALSE(done->result.has_value());
  EXPECT_EQ(done->result.error().code, ErrorCode::invalid_ack);
  EXPECT_NE(done->result.error().message.find("ack does not match"), std::string::npos) << done->result.error().message;
  EXPECT_EQ(producer.state(), ProducerState::failed);
}

TEST(ProducerPolicy, AMinimalPolicyDrivesTheCore) {
  drive_two_batches<Sketch<>>();
}

TEST(ProducerPolicy, AMinimalOrderedPolicyDrivesTheCore) {
  drive_two_batches<Sketch<kOmitNothing, true>>();
}

// B3: the policy's validate runs after the core's own checks, and names its field.
TEST(ProducerPolicy, B3_ThePolicysValidateIsTheLastCheck) {
  ProducerConfig<Sketch<>> config;
  config.protocol.first_position = 1001;
  const auto created = Producer<Sketch<>>::create(std::move(config));
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().field, "protocol.first_position");
}

}  // namespace
}  // namespace prodsm::test

// Every member of the core, compiled for policies with no more than the concept asks
// (as protocols/*/src/producer_*.cpp do for the shipped ones).
template class prodsm::Producer<prodsm::test::policy_sketch::Sketch<>>;
template class prodsm::Producer<prodsm::test::policy_sketch::Sketch<prodsm::test::policy_sketch::kOmitCheckOrder>>;
template class prodsm::Producer<prodsm::test::policy_sketch::Sketch<prodsm::test::policy_sketch::kOmitNothing, true>>;
