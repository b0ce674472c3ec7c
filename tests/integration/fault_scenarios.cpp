// SPDX-License-Identifier: Apache-2.0
// Faults that repeat, against the real reference server, shared by every adapter: the
// server's fault injection mixed in one run (scripts/ds-server.mjs /_test/fault-mix),
// several thousand batches, and a mid-run takeover by a higher epoch. Every run that
// reports success must leave every record in the stream exactly once and in order (E4,
// S2, S4, S5), and while the server answers at all no record may fail.
#include <nlohmann/json.hpp>

#include <thread>

#include "scenario_support.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

/// `n` records "<tag><k>\n" (k from `first`), submitted one by one, appended to `expected`.
void produce(ProducerUnderTest& p, int first, int n, std::string& expected, char tag = 'f') {
  for (int k = first; k < first + n; ++k) {
    std::string record = tag + std::to_string(k) + "\n";
    ASSERT_TRUE(p.submit(record).has_value()) << tag << k;
    expected += record;
  }
}

/// How many faults of each kind the server injected into `path`'s mix.
std::vector<int> injected(TestClient& client, const std::string& path) {
  auto counts = nlohmann::json::parse(client.fault_mix_counts(server().url()), nullptr, false);
  std::vector<int> out;
  if (counts.is_object() && counts.contains(path)) {
    for (const auto& n : counts[path]["injected"]) out.push_back(n.get<int>());
  }
  return out;
}

/// The fault mix of the issue: dropped connections (swallowed when pipelined), 503, 500,
/// 429 with Retry-After: 0, and responses slowed by 20-40 ms, each an equal share of
/// `probability` of the stream's POSTs.
std::string mix(const std::string& path, double probability, int seed) {
  nlohmann::json m;
  m["path"] = path;
  m["method"] = "POST";
  m["probability"] = probability;
  m["seed"] = seed;
  m["faults"] = nlohmann::json::array({
      {{"dropConnection", true}},
      {{"status", 503}},
      {{"status", 500}},
      {{"status", 429}, {"retryAfter", 0}},
      {{"delayMs", 20}, {"jitterMs", 20}},
  });
  return m.dump();
}

/// Runs `records` small records (≈ `batches` batches of 400 bytes) through a producer with
/// `session` under a 3% fault mix and checks exactly once, in order, nothing failed.
void run_mixed_faults(const AdapterParam& adapter, http::TransportOptions session, const std::string& name) {
  const std::string url = server().stream_url(name);
  const std::string path = ds::StreamUrl::parse(url)->path;
  TestClient client;
  client.create(url, "application/octet-stream");
  auto config = idempotent(name + "-producer");
  config.max_batch_bytes = 400;  // ~55 records per batch: 150,000 records are ~2,800 batches
  config.max_unacked_bytes = 64 * 1024;
  ProducerSetup setup{url, "application/octet-stream", config, session};
  auto producer = adapter.make(setup);
  client.set_fault_mix(server().url(), mix(path, 0.03, 7));
  std::string expected;
  produce(*producer, 0, 150'000, expected);
  auto flushed = producer->flush(kWait);
  ASSERT_TRUE(flushed.has_value()) << flushed.error().describe();
  const auto counts = injected(client, path);
  client.clear_fault_mix(server().url());
  ASSERT_TRUE(producer->close(kWait).has_value());
  // The test is only worth something if every kind of fault happened.
  ASSERT_EQ(counts.size(), 5U);
  for (std::size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], 0) << "fault kind " << i << " never injected";
  auto log = producer->completions();
  expect_each_ticket_once_in_order(log, 150'000);
  for (const auto& c : log) ASSERT_TRUE(c.ok) << "ticket " << c.ticket << ": " << to_string(c.code);
  EXPECT_EQ(client.read_all(url, false), expected) << "exactly once, in order";
  EXPECT_GT(producer->stats().retries + producer->stats().gap_resends, 0U);
}

// E4, S4, S2: pipelined (the default) under drops, 503, 500, 429 and slow responses mixed
// in one run of ~2,800 batches: every record exactly once, in order, none failed.
TEST_P(Scenario, E4MixedFaultsPipelinedEveryRecordOnceInOrder) {
  run_mixed_faults(GetParam(), {}, "mix-pipelined");
}

// The same over pooled connections (one request per connection, in sequence order).
TEST_P(Scenario, E4MixedFaultsPooledEveryRecordOnceInOrder) {
  http::TransportOptions session;
  session.mode = http::ConnectionMode::pool;
  run_mixed_faults(GetParam(), session, "mix-pool");
}

// E4: slow responses (a tenth of the POSTs delayed 50-150 ms) are survived with nothing
// lost or doubled; stall detection may give up on them and resend (deduplicated).
TEST_P(Scenario, E4SlowResponsesAreSurvived) {
  const std::string url = server().stream_url("slow");
  const std::string path = ds::StreamUrl::parse(url)->path;
  TestClient client;
  client.create(url, "application/octet-stream");
  auto config = idempotent("slow-producer");
  config.max_batch_bytes = 400;
  auto producer = GetParam().make({url, "application/octet-stream", config, {}});
  client.set_fault_mix(server().url(),
                       R"({"path":")" + path +
                           R"(","method":"POST","probability":0.1,"seed":3,"faults":[{"delayMs":50,"jitterMs":100}]})");
  std::string expected;
  produce(*producer, 0, 8'000, expected);
  ASSERT_TRUE(producer->flush(kWait).has_value());
  const auto counts = injected(client, path);
  client.clear_fault_mix(server().url());
  ASSERT_TRUE(producer->close(kWait).has_value());
  ASSERT_EQ(counts.size(), 1U);
  EXPECT_GT(counts[0], 0);
  auto log = producer->completions();
  expect_each_ticket_once_in_order(log, 8'000);
  for (const auto& c : log) ASSERT_TRUE(c.ok);
  EXPECT_EQ(client.read_all(url, false), expected);
}

/// Another incarnation of producer `id` claims epoch `epoch` with one record of its own.
void take_over(TestClient& client, const std::string& url, const std::string& id, std::uint64_t epoch) {
  ASSERT_GT(epoch, 0U);
  ds::AppendOptions other;
  other.producer = ds::ProducerHeaders{id, epoch, 0};
  const auto r = client.post(url, "application/octet-stream", "TAKEOVER\n", other);
  EXPECT_EQ(r.status, 200) << r.body;
}

/// The epoch a producer starting now would take (ds::ProducerStart::fresh_epoch).
std::uint64_t fresh_epoch() {
  std::this_thread::sleep_for(std::chrono::milliseconds{2});  // strictly later than ours
  return ds::starting_config(
             [] {
               ds::ProducerOptions o;
               o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{"x", 0, false};
               return o;
             }(),
             std::chrono::system_clock::now())
      .protocol.idempotent->epoch;
}

/// `stream` without the first "TAKEOVER\n" line, and whether there was exactly one.
std::pair<std::string, int> without_takeover(std::string stream) {
  int found = 0;
  for (std::size_t at = 0; (at = stream.find("TAKEOVER\n", at)) != std::string::npos;) {
    stream.erase(at, 9);
    ++found;
  }
  return {stream, found};
}

/// The setup of an S5 scenario with auto-claim: a new stream `name`, an idempotent
/// producer id `<name>-producer` that claims the next epoch when fenced, 400-byte batches,
/// and no stall detection: on a loaded machine it may replace a connection with a batch
/// in flight (its attempt then ended ambiguously), and S5 refuses by design to claim past
/// such a batch (the flake these tests had); the stall detector has its own scenarios.
struct AutoClaimRun {
  explicit AutoClaimRun(const std::string& name)
      : url{server().stream_url(name)}, config{idempotent(name + "-producer", 0, true)} {
    TestClient().create(url, "application/octet-stream");
    config.max_batch_bytes = 400;
    session.stall.enabled = false;
  }
  /// A producer of the adapter under test on the stream (a new incarnation each call).
  [[nodiscard]] std::unique_ptr<ProducerUnderTest> make() const {
    return Scenario::GetParam().make({url, "application/octet-stream", config, session});
  }
  std::string url;
  DurableStreamsConfig config;
  http::TransportOptions session;
};

// S5 with auto-claim: a second incarnation takes the producer id at a higher epoch in
// the middle of a run, with batches in flight; ours claims the next epoch and every one
// of its records still lands exactly once, in order. (Without injected faults: a
// takeover that fences a batch whose earlier attempt ended ambiguously is refused by
// design, S5 — see docs/contract.md.)
TEST_P(Scenario, S5TakeoverMidRunWithAutoClaimLosesNothing) {
  const AutoClaimRun run("takeover-claim");
  const std::string& url = run.url;
  TestClient client;
  auto producer = run.make();
  std::string expected;
  produce(*producer, 0, 10'000, expected);  // no flush: batches are in flight
  // A restarted incarnation starts a fresh epoch (microseconds since the Unix epoch):
  // above ours, which was taken when our producer was created.
  take_over(client, url, "takeover-claim-producer", fresh_epoch());
  produce(*producer, 10'000, 10'000, expected);
  auto flushed = producer->flush(kWait);
  ASSERT_TRUE(flushed.has_value()) << flushed.error().describe();
  ASSERT_TRUE(producer->close(kWait).has_value());
  auto log = producer->completions();
  expect_each_ticket_once_in_order(log, 20'000);
  for (const auto& c : log) ASSERT_TRUE(c.ok) << "ticket " << c.ticket << ": " << to_string(c.code);
  EXPECT_GE(producer->stats().epoch_claims, 1U);
  const auto [ours, takeovers] = without_takeover(client.read_all(url, false));
  EXPECT_EQ(takeovers, 1);
  EXPECT_EQ(ours, expected) << "every record of ours exactly once, in order";
}

// S5 without auto-claim: the takeover is terminal (stale_epoch). The stream holds every
// record reported durable, in order, then possibly some of the records that failed
// indefinite (E2: a batch whose attempt ended ambiguously, e.g. on a connection the
// stall detector replaced on a loaded machine, may have been appended before the
// takeover): only a prefix of them, since the server appends seqs in order (S4), and
// never a record that failed definite.
TEST_P(Scenario, S5TakeoverMidRunWithoutAutoClaimFailsDefinite) {
  const std::string url = server().stream_url("takeover-fence");
  TestClient client;
  client.create(url, "application/octet-stream");
  auto config = idempotent("takeover-fence-producer", 0, false);
  config.max_batch_bytes = 400;
  auto producer = GetParam().make({url, "application/octet-stream", config, {}});
  std::string ignored;
  produce(*producer, 0, 5'000, ignored);
  take_over(client, url, "takeover-fence-producer", fresh_epoch());
  for (int k = 5'000; k < 10'000; ++k) {
    if (!producer->submit("f" + std::to_string(k) + "\n")) break;  // refused once failed (E1)
  }
  auto flushed = producer->flush(kWait);
  ASSERT_FALSE(flushed.has_value());
  EXPECT_EQ(flushed.error().code, ErrorCode::stale_epoch);
  (void)producer->close(kWait);
  std::string durable;
  std::string may_have_landed;  // the failed records before the first definite one
  std::size_t failed = 0;
  std::size_t definite = 0;
  const auto log = producer->completions();
  for (std::size_t i = 0; i < log.size(); ++i) {
    // A1: completions come in ticket order, from ticket 0; a failure's result names no
    // ticket, so its place in the log is its ticket.
    const auto& c = log[i];
    const std::string line = "f" + std::to_string(i) + "\n";
    if (c.ok) {
      EXPECT_EQ(c.ticket, i) << "A1: completions in ticket order";
      EXPECT_EQ(failed, 0U) << "P3: no success after the first failure";
      durable += line;
    } else {
      ++failed;
      EXPECT_EQ(c.code, ErrorCode::stale_epoch);
      // E2: the fenced batch and those never sent are definite; batches still in flight
      // when the 403 came, or whose earlier attempt ended ambiguously, are indefinite.
      if (c.certainty == Certainty::definite) ++definite;
      if (definite == 0) may_have_landed += line;
    }
  }
  EXPECT_GT(failed, 0U);
  EXPECT_GT(definite, 0U);
  const auto [ours, takeovers] = without_takeover(client.read_all(url, false));
  EXPECT_EQ(takeovers, 1);
  ASSERT_GE(ours.size(), durable.size()) << "every record reported durable is in the stream";
  EXPECT_EQ(ours.substr(0, durable.size()), durable) << "the records reported durable, in order, first";
  const std::string rest = ours.substr(durable.size());
  EXPECT_EQ(rest, may_have_landed.substr(0, rest.size()))
      << "after them only a prefix of the records that failed indefinite (E2), none that failed definite";
}

/// `n` records "<tag><k>\n" (k from `first`) to each producer in turn, one by one: a
/// record to `a`, then one to `b`; appended to `want_a` and `want_b`.
void produce_in_turn(ProducerUnderTest& a, ProducerUnderTest& b, int first, int n, std::string& want_a,
                     std::string& want_b) {
  for (int k = first; k < first + n; ++k) {
    const std::string ra = "a" + std::to_string(k) + "\n";
    const std::string rb = "b" + std::to_string(k) + "\n";
    ASSERT_TRUE(a.submit(ra).has_value()) << k;
    ASSERT_TRUE(b.submit(rb).has_value()) << k;
    want_a += ra;
    want_b += rb;
  }
}

/// The lines of `stream` that start with `tag`, in stream order.
std::string lines_tagged(const std::string& stream, char tag) {
  std::string out;
  for (std::size_t at = 0; at < stream.size();) {
    const std::size_t end = stream.find('\n', at);
    const std::size_t stop = end == std::string::npos ? stream.size() : end + 1;
    if (stream[at] == tag) out += stream.substr(at, stop - at);
    at = stop;
  }
  return out;
}

// S5 with two live incarnations of one producer id, both with auto-claim: each claims
// the next epoch whenever the other fenced it, so they take turns (docs/contract.md S5),
// and neither loses, doubles or reorders a record. The phases make both claims certain:
// `a` appends alone, `b` (a later, higher fresh epoch) fences it, both run at once, then
// each alone again, so each one is fenced at least once by the other's higher epoch.
TEST_P(Scenario, S5TwoIncarnationsThatBothAutoClaimTakeTurnsAndLoseNothing) {
  const AutoClaimRun run("epoch-fight");
  auto a = run.make();
  fresh_epoch();  // `b` starts strictly later: its fresh epoch is higher than `a`'s
  auto b = run.make();
  std::string want_a;
  std::string want_b;
  auto alone = [&](ProducerUnderTest& p, char tag, int first, int n, std::string& want) {
    produce(p, first, n, want, tag);
    auto flushed = p.flush(kWait);
    ASSERT_TRUE(flushed.has_value()) << tag << ": " << flushed.error().describe();
  };
  alone(*a, 'a', 0, 500, want_a);
  alone(*b, 'b', 0, 500, want_b);  // fences `a`
  produce_in_turn(*a, *b, 500, 3'000, want_a, want_b);
  for (auto* p : {a.get(), b.get()}) {
    auto flushed = p->flush(kWait);
    ASSERT_TRUE(flushed.has_value()) << flushed.error().describe();
  }
  alone(*a, 'a', 3'500, 500, want_a);
  alone(*b, 'b', 3'500, 500, want_b);
  for (auto* p : {a.get(), b.get()}) {
    ASSERT_TRUE(p->close(kWait).has_value());
    const auto log = p->completions();
    expect_each_ticket_once_in_order(log, 4'000);
    for (const auto& c : log) ASSERT_TRUE(c.ok) << "ticket " << c.ticket << ": " << to_string(c.code);
  }
  EXPECT_GE(a->stats().epoch_claims, 1U) << "`b` fenced `a`";
  EXPECT_GE(b->stats().epoch_claims, 1U) << "`a`'s claims fenced `b`";
  const std::string stream = TestClient().read_all(run.url, false);
  EXPECT_EQ(lines_tagged(stream, 'a'), want_a) << "every record of `a` exactly once, in order";
  EXPECT_EQ(lines_tagged(stream, 'b'), want_b) << "every record of `b` exactly once, in order";
  EXPECT_EQ(stream.size(), want_a.size() + want_b.size()) << "nothing else in the stream";
}

}  // namespace
}  // namespace prodsm::test
