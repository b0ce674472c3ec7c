// SPDX-License-Identifier: Apache-2.0
// submit_many: many records in one call, exactly as if each had been submitted in turn
// with the same `now`, stopping at the first refusal (P1, P2, B1, B4, R1, R2, C2, E1).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "harness.hpp"

namespace prodsm::test {
namespace {

// P1: the accepted records get contiguous tickets in list order, and the batch body
// holds them in that order.
TEST(P1, SubmitManyGivesContiguousTicketsInListOrder) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  auto r = h.submit_many({"bb", "ccc", "d"});
  EXPECT_EQ(r.first.value, 1U);
  EXPECT_EQ(r.accepted, 3U);
  EXPECT_FALSE(r.refused.has_value());
  EXPECT_TRUE(h.outbox().empty()) << "the records joined the lingering partial batch";
  h.flush();
  auto s = h.take_send();
  EXPECT_EQ(s.body, "abbcccd");
  EXPECT_EQ(s.first, 0U);
  EXPECT_EQ(s.count, 4U);
  h.ack(s, offset("o1"));
  ASSERT_EQ(h.completions().size(), 1U);
  EXPECT_EQ(h.completions()[0].first, 0U);
  EXPECT_EQ(h.completions()[0].last, 3U);
  EXPECT_EQ(h.producer().stats().records_accepted, 4U);
}

// P1: an empty list accepts nothing, refuses nothing and emits nothing; `first` is the
// ticket the next accepted record will get.
TEST(P1, SubmitManyOfNothingDoesNothing) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  auto r = h.submit_many({});
  EXPECT_EQ(r.first.value, 1U);
  EXPECT_EQ(r.accepted, 0U);
  EXPECT_FALSE(r.refused.has_value());
  EXPECT_TRUE(h.outbox().empty());
  EXPECT_EQ(h.submit("b"), 1U);
}

// B1: batches are cut where repeated submits would cut them, inside one call.
TEST(B1, SubmitManyCutsFullBatchesInsideOneCall) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_records = 3;
  DsHarness h(c);
  auto r = h.submit_many({"a", "b", "c", "d", "e", "f", "g"});
  EXPECT_EQ(r.accepted, 7U);
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U) << "two full batches sealed; the seventh record lingers";
  EXPECT_EQ(sends[0].body, "abc");
  EXPECT_EQ(sends[1].body, "def");
  EXPECT_EQ(sends[1].first, 3U);
  h.flush();
  EXPECT_EQ(h.take_send().body, "g");
}

// B1 (S2): each record's end offset is kept for the S2 framing, across a cut.
TEST(B1, SubmitManyKeepsS2RecordEnds) {
  auto c = s2_config(Linger::after(1h));
  c.max_batch_records = 2;
  S2Harness h(c);
  auto r = h.submit_many({"ab", "c", "def"});
  EXPECT_EQ(r.accepted, 3U);
  h.flush();
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U);
  EXPECT_EQ(sends[0].body, "abc");
  EXPECT_EQ(sends[0].record_ends, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(sends[1].body, "def");
  EXPECT_EQ(sends[1].record_ends, (std::vector<std::uint32_t>{3}));
}

// B1 (JSON mode): the body is framed as one JSON array whatever the call shape.
TEST(B1, SubmitManyFramesJsonArrays) {
  auto c = ds_config(Linger::after(1h));
  c.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  DsHarness h(c);
  EXPECT_EQ(h.submit_many({"1", "{\"a\":2}", "[3]"}).accepted, 3U);
  h.flush();
  EXPECT_EQ(h.take_send().body, "[1,{\"a\":2},[3]]");
}

// R1, R2: the call stops at the first would_block; the records before it keep their
// tickets, the refused one and those after it were not submitted, and the would_block
// seals the partial batch as a single submit would.
TEST(R1, SubmitManyStopsAtTheFirstWouldBlock) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 4;
  c.max_unacked_bytes = 8;
  DsHarness h(c);
  auto r = h.submit_many({"ab", "cd", "ef", "gh", "ij", "kl"});
  EXPECT_EQ(r.accepted, 4U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::would_block);
  EXPECT_EQ(r.refused->detail, "max_unacked_bytes reached");
  EXPECT_EQ(h.producer().stats().records_accepted, 4U);
  EXPECT_EQ(h.producer().stats().records_rejected, 1U) << "only the refused record counts; the rest was not looked at";
  auto sends = h.take_all_sends();
  ASSERT_EQ(sends.size(), 2U) << "R2: the partial batch was sealed at the would_block";
  EXPECT_EQ(sends[0].body, "abcd");
  EXPECT_EQ(sends[1].body, "efgh");
  h.ack(sends[0], offset("o1"));
  EXPECT_EQ(h.capacity_events(), 1);
  auto rest = h.submit_many({"ij", "kl"});
  EXPECT_EQ(rest.first.value, 4U);
  EXPECT_EQ(rest.accepted, 2U);
}

// B4: an oversized record stops the call with record_too_large; the record after it is
// not submitted, so order is never broken around a refusal (P1).
TEST(B4, SubmitManyStopsAtAnOversizedRecord) {
  auto c = ds_config(Linger::after(1h));
  c.max_batch_bytes = 4;
  DsHarness h(c);
  auto r = h.submit_many({"ab", "abcde", "c"});
  EXPECT_EQ(r.accepted, 1U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::record_too_large);
  h.flush();
  EXPECT_EQ(h.take_send().body, "ab");
}

// B4 (Durable Streams): an empty record is refused as invalid, by the fast path too.
TEST(B4, SubmitManyStopsAtAnEmptyRecord) {
  DsHarness h(ds_config(Linger::after(1h)));
  auto r = h.submit_many({"a", "b", "", "c"});
  EXPECT_EQ(r.accepted, 2U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::invalid_record);
  EXPECT_EQ(r.first.value, 0U);
}

// C2: after close, nothing is accepted.
TEST(C2, SubmitManyAfterCloseIsRefused) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.close();
  auto r = h.submit_many({"b", "c"});
  EXPECT_EQ(r.accepted, 0U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::closed);
}

// E1: after a terminal error, the refusal carries the sticky error.
TEST(E1, SubmitManyAfterATerminalErrorCarriesIt) {
  DsHarness h(ds_config(Linger::after(1h)));
  h.submit("a");
  h.flush();
  h.fail(h.take_send(), stream_closed("o9"));
  auto r = h.submit_many({"b"});
  EXPECT_EQ(r.accepted, 0U);
  ASSERT_TRUE(r.refused.has_value());
  EXPECT_EQ(r.refused->reason, RejectReason::failed);
  ASSERT_TRUE(r.refused->terminal.has_value());
  EXPECT_EQ(r.refused->terminal->code, ErrorCode::stream_closed);
}

// The byte-span and string_view forms are the same call.
TEST(P1, SubmitManyBytesAndTextFormsAgree) {
  DsHarness text(ds_config(Linger::after(1h)));
  DsHarness bytes(ds_config(Linger::after(1h)));
  text.submit_many({"ab", "c"});
  const std::string a = "ab";
  const std::string b = "c";
  const std::vector<std::span<const std::byte>> spans{std::as_bytes(std::span(a)), std::as_bytes(std::span(b))};
  auto r = bytes.producer().submit_many(Instant{}, std::span<const std::span<const std::byte>>(spans));
  EXPECT_EQ(r.accepted, 2U);
  text.flush();
  bytes.flush();
  EXPECT_EQ(text.take_send().body, bytes.take_send().body);
}

// ---- property: submit_many == repeated submit ------------------------------------------

/// Only the action lines of a harness trace (inputs are traced differently).
std::string actions_of(const std::string& trace) {
  std::string out;
  std::size_t pos = 0;
  while (pos < trace.size()) {
    std::size_t end = trace.find('\n', pos);
    if (end == std::string::npos) end = trace.size();
    if (trace.compare(pos, 2, "  ") == 0) out.append(trace, pos, end - pos + 1);
    pos = end + 1;
  }
  return out;
}

enum class Mode { ds_bytes, ds_json, ds_json_unvalidated, ds_idempotent, s2, s2_match_seq_num };

template <class Policy>
typename Policy::Ack ack_for(std::uint64_t& position, std::uint32_t count, std::uint64_t n) {
  if constexpr (std::is_same_v<Policy, S2Policy>) {
    auto a = positions(position, position + count);
    position += count;
    return a;
  } else {
    (void)position;
    (void)count;
    return offset("o" + std::to_string(n));
  }
}

/// Runs the same generated script on two producers, one fed by submit_many and one by
/// single submits that stop at the first refusal, and requires the same results and the
/// same actions, byte for byte (P1, P2, B1, B4, R1, R2 hold for both by construction).
template <class Policy>
void same_as_repeated_submit(ProducerConfig<Policy> config, bool json_records) {
  Harness<Policy> many(config);
  Harness<Policy> single(config);
  const auto max_size = static_cast<int>(std::min<std::uint64_t>(config.max_batch_bytes + 3, 40));
  const int steps = *rc::gen::inRange(1, 25);
  std::uint64_t many_pos = 0;
  std::uint64_t single_pos = 0;
  std::uint64_t acks = 0;
  for (int step = 0; step < steps; ++step) {
    const int what = *rc::gen::inRange(0, 10);
    if (what < 6) {
      const auto sizes = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, max_size + 1));
      std::vector<std::string> records;
      for (int size : sizes) {
        const bool valid = *rc::gen::weightedElement<bool>({{9, true}, {1, false}});
        records.push_back(json_records && valid && size > 0 ? "1" + std::string(static_cast<std::size_t>(size - 1), '0')
                                                            : std::string(static_cast<std::size_t>(size), 'x'));
      }
      const std::vector<std::string_view> views(records.begin(), records.end());
      const auto r = many.submit_many(views);
      std::size_t accepted = 0;
      std::optional<RejectReason> refused;
      const std::uint64_t first = single.producer().stats().records_accepted;
      for (const auto& v : views) {
        auto one = single.try_submit(v);
        if (!one) {
          refused = one.error().reason;
          break;
        }
        RC_ASSERT(one->value == first + accepted);
        ++accepted;
      }
      RC_ASSERT(r.first.value == first);
      RC_ASSERT(r.accepted == accepted);
      RC_ASSERT(r.refused.has_value() == refused.has_value());
      if (refused) RC_ASSERT(r.refused->reason == *refused);
    } else if (what < 8) {
      if (many.outbox().empty()) continue;
      const auto a = many.take_send();
      const auto b = single.take_send();
      ++acks;
      many.ack(a, ack_for<Policy>(many_pos, a.count, acks));
      single.ack(b, ack_for<Policy>(single_pos, b.count, acks));
    } else if (what == 8) {
      (void)many.try_flush();
      (void)single.try_flush();
    } else {
      many.advance(3ms);
      single.advance(3ms);
    }
    RC_ASSERT(actions_of(many.trace()) == actions_of(single.trace()));
  }
  const auto& sm = many.producer().stats();
  const auto& ss = single.producer().stats();
  RC_ASSERT(sm.records_accepted == ss.records_accepted);
  RC_ASSERT(sm.records_rejected == ss.records_rejected);
  RC_ASSERT(sm.would_blocks == ss.would_blocks);
  RC_ASSERT(sm.metered_bytes_accepted == ss.metered_bytes_accepted);
}

RC_GTEST_PROP(P1, SubmitManyEqualsRepeatedSubmit, ()) {
  const auto mode = *rc::gen::element(Mode::ds_bytes, Mode::ds_json, Mode::ds_json_unvalidated, Mode::ds_idempotent,
                                      Mode::s2, Mode::s2_match_seq_num);
  const auto linger = *rc::gen::element(Linger::disabled(), Linger::after(0ms), Linger::after(5ms));
  const auto records = *rc::gen::inRange<std::uint32_t>(1, 6);
  const bool s2 = mode == Mode::s2 || mode == Mode::s2_match_seq_num;
  const auto batch_bytes = *rc::gen::inRange<std::uint64_t>(s2 ? 8 : 3, 48);
  const auto unacked_bytes = batch_bytes * *rc::gen::inRange<std::uint64_t>(1, 4);
  const auto in_flight = *rc::gen::inRange<std::uint32_t>(1, 3);
  if (s2) {
    auto c = s2_config(linger);
    c.max_batch_records = records;
    c.max_batch_bytes = batch_bytes;
    c.max_unacked_bytes = unacked_bytes;
    c.max_in_flight = in_flight;
    if (mode == Mode::s2_match_seq_num) c.protocol.match_seq_num = 0;
    same_as_repeated_submit<S2Policy>(c, false);
  } else {
    auto c = mode == Mode::ds_idempotent ? ds_idempotent(linger) : ds_config(linger);
    c.max_batch_records = records;
    c.max_batch_bytes = batch_bytes;
    c.max_unacked_bytes = unacked_bytes;
    c.max_in_flight = in_flight;
    const bool json = mode == Mode::ds_json || mode == Mode::ds_json_unvalidated;
    if (json) c.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
    if (mode == Mode::ds_json_unvalidated) c.protocol.validate_json = false;
    same_as_repeated_submit<DurableStreamsPolicy>(c, json);
  }
}

}  // namespace
}  // namespace prodsm::test
