// SPDX-License-Identifier: Apache-2.0
// The checkers can fail: each test records a real trace from prodsm's core (which passes
// every checker), breaks it the way a faulty producer would, and expects the clause that
// forbids it to be reported. A checker that never fires would fail here.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "prodsm/conformance/checkers.hpp"
#include "prodsm/conformance/properties.hpp"
#include "prodsm/conformance/vectors.hpp"

namespace prodsm::conformance {
namespace {

using namespace std::chrono_literals;
using Kind = Command::Kind;

Trace run(Protocol protocol, const nlohmann::json& config, const std::vector<nlohmann::json>& steps) {
  std::string error;
  auto driver = core_driver_factory()(protocol, config, &error);
  EXPECT_NE(driver, nullptr) << error;
  for (const auto& s : steps) {
    auto c = command_from_json(s, &error);
    EXPECT_TRUE(c.has_value()) << error;
    EXPECT_TRUE(driver->run(*c)) << s.dump();
  }
  EXPECT_TRUE(check_trace(driver->trace(), {}).empty()) << "the unbroken trace must pass";
  return driver->trace();
}

bool reports(const Trace& trace, const std::string& clause) {
  for (const auto& v : check_trace(trace, {})) {
    if (v.clause == clause) return true;
  }
  return false;
}

std::string reported(const Trace& trace) {
  std::string out;
  for (const auto& v : check_trace(trace, {})) out += v.clause + ": " + v.message + "\n";
  return out.empty() ? "nothing" : out;
}

/// Finds the first observation of `kind` (optionally in step `step`).
Observation* find(Trace& t, Observation::Kind kind, std::size_t from_step = 0) {
  for (std::size_t i = from_step; i < t.steps.size(); ++i) {
    for (auto& o : t.steps[i].observed) {
      if (o.kind == kind) return &o;
    }
  }
  return nullptr;
}

const nlohmann::json kLong = {{"linger_ms", 3600000}, {"delivery_timeout_ms", 7200000}};
nlohmann::json with(nlohmann::json base, const nlohmann::json& more) {
  base.update(more);
  return base;
}
nlohmann::json submit(const std::string& r) {
  return {{"do", "submit"}, {"record", r}};
}
nlohmann::json simple(const char* what) {
  return {{"do", what}};
}
nlohmann::json answer(const char* what, const char* which = "oldest") {
  return {{"do", what}, {"which", which}};
}
nlohmann::json fail(const char* code, const char* which = "oldest") {
  return {{"do", "fail"}, {"code", code}, {"which", which}};
}

TEST(Checkers, P1BarrierBeforeCoveredRecord) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), answer("ack")});
  auto& obs = t.steps[2].observed;  // done, barrier
  std::swap(obs[0], obs[1]);
  EXPECT_TRUE(reports(t, "P1")) << reported(t);
}

// P1 on the wire: a send carries exactly its records in ticket order, and plain batches
// go out first in ticket order (their order at the server). A driver that dropped a
// record from a body, or sent a later plain batch first, passed before.
TEST(Checkers, P1SendsCarryTheirRecordsInTicketOrder) {
  const nlohmann::json one_per_batch = with(kLong, {{"max_batch_records", 1}});
  Trace body = run(Protocol::durable_streams, one_per_batch, {submit("a"), submit("b"), simple("flush")});
  EXPECT_FALSE(reports(body, "P1")) << reported(body);
  find(body, Observation::Kind::send)->body = "x";
  EXPECT_TRUE(reports(body, "P1")) << reported(body);

  Trace order = run(Protocol::durable_streams, one_per_batch, {submit("a"), submit("b"), simple("flush")});
  Observation* first = find(order, Observation::Kind::send);
  ASSERT_NE(first, nullptr);
  Observation* second = nullptr;
  for (auto& step : order.steps) {
    for (auto& o : step.observed) {
      if (o.kind == Observation::Kind::send && &o != first) second = &o;
    }
  }
  ASSERT_NE(second, nullptr);
  std::swap(first->first_ticket, second->first_ticket);  // the later batch went out first
  std::swap(first->body, second->body);
  EXPECT_TRUE(reports(order, "P1")) << reported(order);
  first->stamp.sequenced = second->stamp.sequenced = true;  // the server orders sequenced batches (S2, S4)
  EXPECT_FALSE(reports(order, "P1")) << reported(order);
}

TEST(Checkers, P2CompletionTwice) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), answer("ack")});
  t.steps[2].observed.push_back(*find(t, Observation::Kind::done));
  EXPECT_TRUE(reports(t, "P2")) << reported(t);
}

TEST(Checkers, P3CompletionsOutOfOrder) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"max_batch_records", 1}}),
                {submit("a"), submit("b"), answer("ack", "newest"), answer("ack")});
  auto& obs = t.steps[3].observed;
  ASSERT_GE(obs.size(), 2U);
  std::swap(obs[0], obs[1]);
  EXPECT_TRUE(reports(t, "P3")) << reported(t);
}

TEST(Checkers, P4AckRangeDoesNotMatchRecords) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), submit("b"), simple("flush"), answer("ack")});
  find(t, Observation::Kind::done)->ack.end += 1;
  EXPECT_TRUE(reports(t, "P4")) << reported(t);
}

// P4: a success carries the server's acknowledgement. A driver that made up its own
// offset or positions passed while only their presence was checked.
TEST(Checkers, P4AckIsNotWhatTheServerAnswered) {
  Trace ds = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush"), answer("ack")});
  EXPECT_FALSE(reports(ds, "P4")) << reported(ds);
  find(ds, Observation::Kind::done)->ack.next_offset += "0";
  EXPECT_TRUE(reports(ds, "P4")) << reported(ds);
  Trace s2 = run(Protocol::s2, kLong, {submit("a"), submit("b"), simple("flush"), answer("ack")});
  EXPECT_FALSE(reports(s2, "P4")) << reported(s2);
  auto& ack = find(s2, Observation::Kind::done)->ack;
  ack.start += 5;  // the same span, elsewhere in the stream
  ack.end += 5;
  if (ack.seq_num) *ack.seq_num += 5;
  EXPECT_TRUE(reports(s2, "P4")) << reported(s2);
}

TEST(Checkers, B1BatchAboveLimits) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"max_batch_records", 2}}),
                {submit("a"), submit("b"), answer("ack")});
  t.config.max_batch_records = 1;
  EXPECT_TRUE(reports(t, "B1")) << reported(t);
}

// B1 + B2: linger 0 means no intentional delay, so a batch may be sealed right after its
// first record even when the next one comes at the same instant; with a real linger and
// no time passing, the same cut is a B1 violation.
TEST(Checkers, B1CutWithRoomIsAllowedOnlyOnceLingerElapsed) {
  Trace t = run(Protocol::durable_streams, {{"linger_ms", 0}, {"max_batch_records", 1}},
                {submit("a"), submit("b"), answer("ack"), answer("ack")});
  t.config.max_batch_records = 10;  // the same cut, judged as if the batch had room
  EXPECT_FALSE(reports(t, "B1")) << reported(t);
  t.config.linger_ns = 5ms;
  EXPECT_TRUE(reports(t, "B1")) << reported(t);
}

// B2's other side: time moved past the linger, nothing was in flight, and the batch was
// still not sent (a producer waiting ten lingers passed before).
TEST(Checkers, B2NotSentOnceTheLingerElapsed) {
  Trace t = run(Protocol::durable_streams, {{"linger_ms", 5}},
                {submit("a"), {{"do", "advance"}, {"ms", 3}}, {{"do", "advance"}, {"ms", 2}}});
  EXPECT_FALSE(reports(t, "B2")) << reported(t);
  t.config.linger_ns = 2ms;  // the same trace, judged against a shorter linger: late at 3 ms
  EXPECT_TRUE(reports(t, "B2")) << reported(t);
}

TEST(Checkers, B2SentBeforeLinger) {
  Trace t = run(Protocol::durable_streams, {{"linger_ms", 5}}, {submit("a"), {{"do", "advance"}, {"ms", 5}}});
  t.config.linger_ns = 10ms;  // the same send, judged against a longer linger
  EXPECT_TRUE(reports(t, "B2")) << reported(t);
}

TEST(Checkers, B4OversizedAccepted) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"max_batch_bytes", 8}}), {submit("12345678")});
  t.config.max_batch_bytes = 4;
  EXPECT_TRUE(reports(t, "B4")) << reported(t);
}

TEST(Checkers, B5BatchSpansBarrier) {
  Trace t = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush"), submit("b"), simple("flush")});
  find(t, Observation::Kind::send)->count = 2;  // batch 0 now claims ticket 1, after the barrier
  EXPECT_TRUE(reports(t, "B5")) << reported(t);
}

// B5's refusal half: a record Durable Streams cannot carry (empty; in JSON mode not
// exactly one JSON value) must be refused at submit. An SDK that took one passed B5
// (conformance red team, A3: ds-ts takes an empty record).
TEST(Checkers, B5AcceptedRecordTheProtocolCannotCarry) {
  Trace empty = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush")});
  empty.steps[0].input.record.clear();  // accepted as ticket 0
  EXPECT_TRUE(reports(empty, "B5")) << reported(empty);

  Trace json = run(Protocol::durable_streams, with(kLong, {{"json", true}}), {submit("12"), simple("flush")});
  EXPECT_FALSE(reports(json, "B5")) << reported(json);
  json.steps[0].input.record = "1 2";  // two JSON values
  EXPECT_TRUE(reports(json, "B5")) << reported(json);

  Trace s2 = run(Protocol::s2, kLong, {submit("a"), simple("flush")});
  s2.steps[0].input.record.clear();  // S2 carries an empty record
  EXPECT_FALSE(reports(s2, "B5")) << reported(s2);
}

TEST(Checkers, F1FlushDidNotSealAtOnce) {
  Trace t = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush"), {{"do", "advance"}, {"ms", 1}}});
  Observation send = t.steps[1].observed.at(0);
  t.steps[1].observed.clear();
  t.steps[2].observed.push_back(send);  // sent one step late
  EXPECT_TRUE(reports(t, "F1")) << reported(t);
}

// F1: a barrier's completion arrives when every record before it is acknowledged. A
// barrier reported before its record's acknowledgement used to pass F1 and fail F2 with
// "did not complete when every record before it was durable", which was not what
// happened (red-team report, TOY_BUG=early_flush).
TEST(Checkers, F1BarrierCompletedBeforeItsRecordsWereAcknowledged) {
  Trace t = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush"), answer("ack")});
  auto& acked = t.steps[2].observed;  // done t0, barrier 0
  ASSERT_EQ(acked.size(), 2U);
  ASSERT_EQ(acked.back().kind, Observation::Kind::barrier);
  t.steps[1].observed.push_back(acked.back());  // reported with the flush, before the ack
  acked.pop_back();
  bool f1 = false;
  for (const auto& v : check_trace(t, {})) {
    if (v.clause != "F1") continue;
    f1 = true;
    EXPECT_NE(v.message.find("before ticket 0"), std::string::npos) << v.message;
  }
  EXPECT_TRUE(f1) << reported(t);
  EXPECT_FALSE(reports(t, "F2")) << "F2 is about waiting for later records: " << reported(t);
}

TEST(Checkers, F2BarrierWaitedLonger) {
  Trace t = run(Protocol::durable_streams, kLong,
                {submit("a"), simple("flush"), submit("b"), simple("flush"), answer("ack"), answer("ack")});
  auto& obs = t.steps[4].observed;  // done t0, barrier 0
  Observation barrier = obs.back();
  obs.pop_back();
  t.steps[5].observed.insert(t.steps[5].observed.begin(), barrier);
  EXPECT_TRUE(reports(t, "F2")) << reported(t);
}

// F2 on a target that reports no per-record outcomes (ds-ts): when its records were
// durable is known from the step their sends were acknowledged in, on virtual time. Such a
// target passed F2 whatever its barrier waited for (conformance red team, A2).
std::vector<Violation> checked_without_record_outcomes(Trace t, bool virtual_time) {
  for (auto& step : t.steps) {
    std::erase_if(step.observed, [](const Observation& o) { return o.kind == Observation::Kind::done; });
  }
  Capabilities caps;
  caps.per_record_completions = false;
  caps.virtual_time = virtual_time;
  caps.measured_time = !virtual_time;
  return check_trace(t, caps);
}

bool has_clause(const std::vector<Violation>& vs, const std::string& clause) {
  return std::any_of(vs.begin(), vs.end(), [&](const Violation& v) { return v.clause == clause; });
}

TEST(Checkers, F2BarrierWaitedForALaterBatchWithoutRecordOutcomes) {
  Trace t = run(Protocol::durable_streams, kLong,
                {submit("a"), simple("flush"), submit("b"), simple("flush"), answer("ack"), answer("ack")});
  EXPECT_FALSE(has_clause(checked_without_record_outcomes(t, true), "F2")) << "the unbroken trace passes";
  auto& obs = t.steps[4].observed;  // done t0, barrier 0
  ASSERT_EQ(obs.back().kind, Observation::Kind::barrier);
  Observation barrier = obs.back();
  obs.pop_back();
  t.steps[5].observed.insert(t.steps[5].observed.begin(), barrier);  // waited for batch 1's ack
  const auto vs = checked_without_record_outcomes(t, true);
  ASSERT_TRUE(has_clause(vs, "F2"));
  for (const auto& v : vs) {
    if (v.clause != "F2") continue;
    EXPECT_NE(v.message.find("completed later than"), std::string::npos) << v.message;
  }
  // On real time a barrier may be observed a step after the ack that resolved it: not judged.
  EXPECT_FALSE(has_clause(checked_without_record_outcomes(t, false), "F2"));
}

// F1 on such a target: a barrier that succeeds before its records' sends are acknowledged
// passed F1, F2 and F5 alike (conformance red team: a driver completing every flush at once
// was "conformant").
TEST(Checkers, F1BarrierBeforeTheAcksWithoutRecordOutcomes) {
  Trace t = run(Protocol::durable_streams, kLong, {submit("a"), simple("flush"), answer("ack")});
  EXPECT_FALSE(has_clause(checked_without_record_outcomes(t, true), "F1")) << "the unbroken trace passes";
  auto& acked = t.steps[2].observed;  // done t0, barrier 0
  ASSERT_EQ(acked.back().kind, Observation::Kind::barrier);
  t.steps[1].observed.push_back(acked.back());  // reported with the flush, before the ack
  acked.pop_back();
  const auto vs = checked_without_record_outcomes(t, true);
  ASSERT_TRUE(has_clause(vs, "F1"));
  for (const auto& v : vs) {
    if (v.clause != "F1") continue;
    EXPECT_NE(v.message.find("completed before ticket 0 it covers was acknowledged"), std::string::npos) << v.message;
    EXPECT_EQ(v.evidence, (std::vector<std::size_t>{1, 2})) << "the flush with its barrier, then the ack";
  }
  EXPECT_FALSE(has_clause(checked_without_record_outcomes(t, false), "F1")) << "real time: not judged this way";
}

TEST(Checkers, F3EmptyFlushSent) {
  Trace t = run(Protocol::s2, {}, {simple("flush")});
  Observation send;
  send.kind = Observation::Kind::send;
  send.count = 1;
  t.steps[0].observed.insert(t.steps[0].observed.begin(), send);
  EXPECT_TRUE(reports(t, "F3") || reports(t, "B5")) << reported(t);
}

TEST(Checkers, F4RefusedClosedWhileOpen) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), submit("b")});
  t.steps[2].result.kind = SyncResult::Kind::rejected;
  t.steps[2].result.reason = RejectReason::closed;
  EXPECT_TRUE(reports(t, "F4")) << reported(t);
}

TEST(Checkers, F5BarrierSucceedsOverFailedRecord) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), fail("rejected")});
  Observation* barrier = find(t, Observation::Kind::barrier);
  barrier->ok = true;
  EXPECT_TRUE(reports(t, "F5")) << reported(t);
}

TEST(Checkers, C1CloseSuccessAfterFailure) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("close"), fail("rejected")});
  find(t, Observation::Kind::closed)->ok = true;
  EXPECT_TRUE(reports(t, "C1")) << reported(t);
}

TEST(Checkers, C2AcceptedAfterClose) {
  Trace t = run(Protocol::s2, kLong, {simple("close"), submit("late")});
  t.steps[1].result.kind = SyncResult::Kind::ticket;
  t.steps[1].result.value = 0;
  EXPECT_TRUE(reports(t, "C2")) << reported(t);
}

TEST(Checkers, C3BarrierAfterClosed) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), simple("close"), answer("ack")});
  auto& obs = t.steps[3].observed;  // done, barrier, closed
  std::swap(obs[1], obs[2]);
  EXPECT_TRUE(reports(t, "C3")) << reported(t);
}

// P3: Closed is the last thing a producer reports. The evidence names the step of what
// came after it as well: it used to show only the Closed, and the flush that broke the
// rule was missing from the counterexample (conformance red team, s2-ts).
TEST(Checkers, P3SomethingAfterClosedIsShownWithIt) {
  Trace t = run(Protocol::s2, kLong, {simple("close"), submit("a"), simple("flush")});
  ASSERT_FALSE(t.steps[0].observed.empty());
  Observation barrier;
  barrier.kind = Observation::Kind::barrier;
  barrier.barrier = 0;
  barrier.ok = true;
  t.steps[2].observed.push_back(barrier);  // a barrier reported after Closed
  bool p3 = false;
  for (const auto& v : check_trace(t, {})) {
    if (v.clause != "P3" || v.message.find("after Closed") == std::string::npos) continue;
    p3 = true;
    EXPECT_EQ(v.evidence, (std::vector<std::size_t>{0, 2})) << "the Closed and what came after it";
  }
  EXPECT_TRUE(p3) << reported(t);
}

TEST(Checkers, C5AbortWithAnotherCode) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("abort")});
  find(t, Observation::Kind::done)->error.code = ErrorCode::closed;
  EXPECT_TRUE(reports(t, "C5")) << reported(t);
}

TEST(Checkers, E1ErrorNotSticky) {
  Trace t = run(Protocol::s2, with(kLong, {{"max_batch_records", 1}}), {submit("a"), submit("b"), fail("rejected")});
  t.steps[2].observed.at(1).error.code = ErrorCode::not_found;
  EXPECT_TRUE(reports(t, "E1")) << reported(t);
}

TEST(Checkers, E2NeverSentButIndefinite) {
  Trace t = run(Protocol::s2, with(kLong, {{"max_batch_records", 1}, {"max_in_flight", 1}}),
                {submit("a"), submit("b"), fail("rejected")});
  t.steps[2].observed.at(1).error.certainty = Certainty::indefinite;
  EXPECT_TRUE(reports(t, "E2")) << reported(t);
}

TEST(Checkers, E3ResentAfterConditionFailure) {
  Trace t =
      run(Protocol::s2, with(kLong, {{"match_seq_num", 0}}), {submit("a"), simple("flush"), fail("condition_failed")});
  Observation resend = *find(t, Observation::Kind::send);
  resend.attempt = 2;
  resend.send_index = 1;
  t.steps[2].observed.push_back(resend);
  EXPECT_TRUE(reports(t, "E3")) << reported(t);
}

TEST(Checkers, E4UnsafeResendAfterConnectionLost) {
  Trace t = run(Protocol::durable_streams,
                with(kLong, {{"idempotent", {{"producer_id", "p"}}}, {"backoff_initial_ms", 1}, {"backoff_max_ms", 1}}),
                {submit("a"), simple("flush"), fail("connection_lost"), {{"do", "advance"}, {"ms", 0}}});
  t.config.sequencing = Sequencing::none;  // the same resend, without safe sequencing
  EXPECT_TRUE(reports(t, "E4")) << reported(t);
}

TEST(Checkers, E5InvalidAckReportedSuccessful) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), simple("flush"), {{"do", "invalid_ack"}, {"kind", "wrong_count"}}});
  Observation* done = find(t, Observation::Kind::done);
  done->ok = true;
  done->ack.start = 0;
  done->ack.end = 1;
  EXPECT_TRUE(reports(t, "E5") || reports(t, "E1")) << reported(t);
  EXPECT_TRUE(reports(t, "E5")) << reported(t);
}

TEST(Checkers, E6RecordOutlivesDeliveryDeadline) {
  Trace t = run(Protocol::s2, kLong, {submit("a"), {{"do", "advance"}, {"ms", 2000}}});
  t.config.delivery_timeout_ns = 1s;
  EXPECT_TRUE(reports(t, "E6")) << reported(t);
}

TEST(Checkers, R1TooManyInFlight) {
  Trace t =
      run(Protocol::s2, with(kLong, {{"max_batch_records", 1}, {"max_in_flight", 2}}), {submit("a"), submit("b")});
  t.config.max_in_flight = 1;
  EXPECT_TRUE(reports(t, "R1")) << reported(t);
}

TEST(Checkers, R2WouldBlockLeftBatchLingering) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"max_batch_bytes", 8}, {"max_unacked_bytes", 8}}),
                {submit("abc"), submit("de"), submit("fghi"), {{"do", "advance"}, {"ms", 1}}});
  Observation send = t.steps[2].observed.at(0);
  t.steps[2].observed.clear();
  t.steps[3].observed.push_back(send);
  EXPECT_TRUE(reports(t, "R2")) << reported(t);
}

TEST(Checkers, R3TooManyAttempts) {
  Trace t = run(Protocol::s2, with(kLong, {{"backoff_initial_ms", 1}, {"backoff_max_ms", 1}}),
                {submit("a"), simple("flush"), fail("unavailable"), {{"do", "advance"}, {"ms", 1}}});
  t.config.max_attempts = 1;
  EXPECT_TRUE(reports(t, "R3")) << reported(t);
}

TEST(Checkers, S1MatchSeqNumDoesNotAdvance) {
  Trace t = run(Protocol::s2, with(kLong, {{"match_seq_num", 10}}),
                {submit("a"), submit("b"), simple("flush"), submit("c"), simple("flush")});
  find(t, Observation::Kind::send, 4)->stamp.match_seq_num = 11;  // should be 12
  EXPECT_TRUE(reports(t, "S1")) << reported(t);
}

TEST(Checkers, S2ResendNotByteIdentical) {
  Trace t = run(Protocol::durable_streams,
                with(kLong, {{"idempotent", {{"producer_id", "p"}}}, {"backoff_initial_ms", 1}, {"backoff_max_ms", 1}}),
                {submit("a"), simple("flush"), fail("unavailable"), {{"do", "advance"}, {"ms", 1}}});
  find(t, Observation::Kind::send, 3)->body = "b";
  EXPECT_TRUE(reports(t, "S2")) << reported(t);
}

TEST(Checkers, S3DuplicateNotReported) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"idempotent", {{"producer_id", "p"}}}}),
                {submit("a"), simple("flush"), answer("duplicate")});
  find(t, Observation::Kind::done)->ack.duplicate = false;
  find(t, Observation::Kind::done)->ack.next_offset = "x";
  EXPECT_TRUE(reports(t, "S3")) << reported(t);
}

TEST(Checkers, S4ResentBeforeLowerSeqCompleted) {
  Trace t =
      run(Protocol::durable_streams, with(kLong, {{"max_batch_records", 1}, {"idempotent", {{"producer_id", "p"}}}}),
          {submit("a"), submit("b"), fail("sequence_gap", "newest"), answer("ack")});
  // Move the resend of batch 1 (made when batch 0 completed) one step earlier.
  auto& late = t.steps[3].observed;
  auto it =
      std::find_if(late.begin(), late.end(), [](const Observation& o) { return o.kind == Observation::Kind::send; });
  ASSERT_NE(it, late.end());
  Observation resend = *it;
  late.erase(it);
  t.steps[2].observed.push_back(resend);
  EXPECT_TRUE(reports(t, "S4")) << reported(t);
}

TEST(Checkers, S5WrongClaimedEpoch) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"idempotent", {{"producer_id", "p"}, {"auto_claim", true}}}}),
                {submit("a"), simple("flush"), fail("stale_epoch")});
  find(t, Observation::Kind::send, 2)->stamp.epoch = 5;  // server epoch was 1: must claim 2
  EXPECT_TRUE(reports(t, "S5")) << reported(t);
}

TEST(Checkers, S6SentAfterStreamClosed) {
  Trace t = run(Protocol::durable_streams, with(kLong, {{"idempotent", {{"producer_id", "p"}}}}),
                {submit("a"), simple("flush"), fail("stream_closed")});
  Observation resend = *find(t, Observation::Kind::send);
  resend.attempt = 2;
  resend.send_index = 1;
  t.steps[2].observed.push_back(resend);
  EXPECT_TRUE(reports(t, "S6")) << reported(t);
}

TEST(Checkers, D2ReplayDiffers) {
  Trace a = run(Protocol::s2, kLong, {submit("a"), simple("flush")});
  Trace b = a;
  find(b, Observation::Kind::send)->body = "z";
  ASSERT_TRUE(check_replay(a, b).has_value());
  EXPECT_EQ(check_replay(a, b)->clause, "D2");
  EXPECT_FALSE(check_replay(a, a).has_value());
  // The same observation at another instant within its step (an unseeded jitter).
  Trace c = a;
  find(c, Observation::Kind::send)->at = Instant{} + 3ms;
  ASSERT_TRUE(check_replay(a, c).has_value());
  EXPECT_NE(check_replay(a, c)->message.find("another instant"), std::string::npos);
}

TEST(Checkers, D3DeliveryTimeoutEarly) {
  Trace t = run(Protocol::s2, {{"linger_ms", 1}, {"delivery_timeout_ms", 100}},
                {submit("a"), {{"do", "advance"}, {"ms", 100}}});
  t.config.delivery_timeout_ns = 200ms;
  EXPECT_TRUE(reports(t, "D3")) << reported(t);
}

// The property machinery fails on a broken producer, shrinks, and hands back a vector:
// a driver that turns failed records into successes is caught.
class LyingDriver final : public Driver {
 public:
  explicit LyingDriver(std::unique_ptr<Driver> inner) : inner_{std::move(inner)} {}
  bool run(const Command& c) override {
    const bool ran = inner_->run(c);
    trace_ = inner_->trace();
    for (auto& step : trace_.steps) {
      for (auto& o : step.observed) {
        if (o.kind == Observation::Kind::done && !o.ok) o.ok = true;
      }
    }
    return ran;
  }
  [[nodiscard]] const Trace& trace() const override { return trace_; }
  [[nodiscard]] Capabilities capabilities() const override { return inner_->capabilities(); }
  [[nodiscard]] std::size_t unanswered_sends() const override { return inner_->unanswered_sends(); }

 private:
  std::unique_ptr<Driver> inner_;
  Trace trace_;
};

TEST(Checkers, PropertyFindsABrokenProducerAndShrinksItToAVector) {
  const DriverFactory lying = [](Protocol p, const nlohmann::json& config,
                                 std::string* error) -> std::unique_ptr<Driver> {
    auto inner = core_driver_factory()(p, config, error);
    if (!inner) return nullptr;
    return std::make_unique<LyingDriver>(std::move(inner));
  };
  PropertyOptions options;
  options.tests = 500;
  options.seed = 7;
  const auto r = run_property(default_properties().front(), lying, options);
  ASSERT_FALSE(r.passed);
  ASSERT_TRUE(r.violation.has_value());
  EXPECT_FALSE(r.reproduce.empty());
  ASSERT_TRUE(r.counterexample.contains("steps"));
  EXPECT_LE(r.counterexample["steps"].size(), 6U) << "shrunk: " << r.counterexample.dump();
  // The vector reproduces the failure on the broken target and passes on the real core.
  EXPECT_FALSE(run_vector(r.counterexample, "finding", lying).passed);
  EXPECT_TRUE(run_vector(r.counterexample, "finding", core_driver_factory()).passed);
}

}  // namespace
}  // namespace prodsm::conformance
