// SPDX-License-Identifier: Apache-2.0
// `prodsm produce s2://BASIN/STREAM` end to end against the S2 test server
// (tests/s2-server/server.mjs): records in order as protobuf appends (P3, P4), the token
// from S2_ACCESS_TOKEN or --bearer-token-file, --match-seq-num and --fencing-token
// mismatches (E3, exit 3), a retried fault (E2), and bad targets and flags (exit 2).
#include <gtest/gtest.h>

#include <asio/use_future.hpp>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_interrupt.hpp"
#include "cli_support.hpp"
#include "io_thread.hpp"
#include "prodsm/asio/s2_producer.hpp"
#include "prodsm/s2/records.hpp"
#include "s2_test_server.hpp"
#include "tls_endpoint.hpp"

namespace {

namespace asio = prodsm::asio;
namespace s2 = prodsm::s2;
namespace test = prodsm::test;
using test::CliRun;
using test::prodsm;

class CliS2 : public ::testing::Test {
 protected:
  static test::S2TestServer& server() {
    static test::S2TestServer s;
    return s;
  }
  static test::S2TestServer& token_server() {
    static test::S2TestServer s({"--access-token", "sesame-token"});
    return s;
  }
  void SetUp() override {
    ASSERT_FALSE(server().url().empty()) << server().error();
    asio::SessionOptions o;
    o.stall.enabled = false;
    auto session = asio::Session::create(io_.io.get_executor(), "127.0.0.1", server().endpoint().port, o);
    ASSERT_TRUE(session) << session.error();
    control_ = *session;
  }
  void TearDown() override {
    if (control_) control_->close();
  }
  /// `s2://test-basin/<fresh stream> --endpoint <server>`, the stream's name in `stream`.
  std::string target(const std::string& prefix, std::string& stream) {
    stream = server().stream_name(prefix);
    return "s2://" + std::string(test::S2TestServer::kBasin) + "/" + stream + " --endpoint " + server().url();
  }
  std::vector<std::string> bodies(const std::string& stream) {
    auto records = test::read_s2_stream(control_, server().endpoint(), stream);
    EXPECT_TRUE(records) << records.error();
    std::vector<std::string> out;
    for (const auto& r : records.value_or(std::vector<s2::SequencedRecord>{})) out.push_back(r.body);
    return out;
  }

  test::IoThread io_;
  std::shared_ptr<asio::Session> control_;
};

TEST_F(CliS2, ProducesEachLineAsARecordInOrder) {  // P3, P4
  std::string stream;
  const CliRun r = prodsm("produce " + target("lines", stream) + " --create", "one\ntwo\nthree\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("records      3"), std::string::npos) << r.out;
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"one", "two", "three"}));
  // A second run appends after them (--create of an existing stream is fine).
  const CliRun again =
      prodsm("produce s2://test-basin/" + stream + " --endpoint " + server().url() + " --create -q", "four\n");
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"one", "two", "three", "four"}));
}

// Ctrl-C while the input waits, from stdin and from a FIFO named with -i (a FIFO becomes
// stdin, so the read ends at the signal), with a line half read: the two records are
// flushed, the fragment is dropped and reported, never sent, and the exit is 130.
TEST_F(CliS2, InterruptWhileReadingAFifoStopsAtOnceAndDropsTheFragment) {
  for (const bool dash_i : {false, true}) {
    SCOPED_TRACE(dash_i ? "-i FIFO" : "stdin FIFO");
    const std::string stream = server().stream_name(dash_i ? "sigint-i" : "sigint");
    auto read_back = [&] {  // polled before --create ran too: a missing stream reads as empty
      std::string joined;
      auto records = test::read_s2_stream(control_, server().endpoint(), stream);
      for (const auto& r : records.value_or(std::vector<s2::SequencedRecord>{})) joined += r.body + "\n";
      return joined;
    };
    test::interrupt_produce_reading_a_fifo({"produce", "s2://" + std::string(test::S2TestServer::kBasin) + "/" + stream,
                                            "--endpoint", server().url(), "--create", "-q", "--linger-ms", "0"},
                                           read_back, dash_i, true);
  }
}

// An interrupt after the whole input was read stops nothing (as for Durable Streams):
// the run waits for the acknowledgements, exits 0 and says nothing is left out. The
// server holds the only append for 3 s, so the signal comes while the run waits for it.
TEST_F(CliS2, InterruptAfterTheWholeInputWasReadLeavesNothingOutAndExits0) {
  const std::string stream = server().stream_name("sigint-after-eof");
  ASSERT_TRUE(test::create_s2_stream(control_, server().endpoint(), stream));
  const int delays_before = test::s2_faults_injected(control_, server().endpoint(), "delay").value_or(-1);
  ASSERT_GE(delays_before, 0);
  ASSERT_TRUE(test::inject_s2_faults(control_, server().endpoint(),
                                     R"([{"kind":"delay","stream":")" + stream + R"(","delay_ms":3000}])"));
  const std::string input = test::temp_path("s2-sigint-after-eof-in");
  {
    std::ofstream f(input, std::ios::binary);
    f << "a\nb\n";
  }
  test::interrupt_produce_after_the_whole_input(
      {"produce", "s2://" + std::string(test::S2TestServer::kBasin) + "/" + stream, "--endpoint", server().url(), "-q",
       "--linger-ms", "60000", "-i", input},
      [&] { return test::s2_faults_injected(control_, server().endpoint(), "delay").value_or(0) > delays_before; });
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"a", "b"}));
  std::remove(input.c_str());
}

// A second interrupt while the run waits aborts the producer (C5), as for Durable
// Streams: exit 130, and the summary says the unacknowledged records may be in the stream
// (E2). The server holds the only append for 20 s: without the abort the run would exit 0.
TEST_F(CliS2, ASecondInterruptAbortsAndSaysWhatWasAcknowledged) {
  const std::string stream = server().stream_name("sigint-abort");
  ASSERT_TRUE(test::create_s2_stream(control_, server().endpoint(), stream));
  const int delays_before = test::s2_faults_injected(control_, server().endpoint(), "delay").value_or(-1);
  ASSERT_GE(delays_before, 0);
  ASSERT_TRUE(test::inject_s2_faults(control_, server().endpoint(),
                                     R"([{"kind":"delay","stream":")" + stream + R"(","delay_ms":20000}])"));
  const std::string input = test::temp_path("s2-sigint-abort-in");
  {
    std::ofstream f(input, std::ios::binary);
    f << "a\nb\n";
  }
  const test::AbortedRun run = test::abort_produce(
      {"produce", "s2://" + std::string(test::S2TestServer::kBasin) + "/" + stream, "--endpoint", server().url(),
       "--linger-ms", "60000", "-i", input},
      [&](pid_t) {
        return test::s2_faults_injected(control_, server().endpoint(), "delay").value_or(0) > delays_before;
      },
      "interrupted after the whole input was read");
  EXPECT_NE(run.out.find("records      2 accepted: 0 acknowledged, 2 failed (indefinite: some of them may be in the "
                         "stream)"),
            std::string::npos)
      << run.out;
  std::remove(input.c_str());
}

TEST_F(CliS2, AppendsWithoutCreateFailWhenTheStreamIsMissing) {  // E2: not_found, definite
  std::string stream;
  const CliRun r = prodsm("produce " + target("missing", stream) + " -q", "a\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("stream_not_found"), std::string::npos) << r.err;
}

TEST_F(CliS2, AStaleMatchSeqNumExits3WithTheStreamsTail) {  // E3
  std::string stream;
  ASSERT_EQ(prodsm("produce " + target("match", stream) + " --create -q", "a\nb\n").status, 0);
  const std::string t = "s2://test-basin/" + stream + " --endpoint " + server().url();
  const CliRun stale = prodsm("produce " + t + " --match-seq-num 0 -q", "c\n");
  EXPECT_EQ(stale.status, 3);
  EXPECT_NE(stale.err.find("condition_failed (definite)"), std::string::npos) << stale.err;
  EXPECT_NE(stale.err.find("next seq_num is 2"), std::string::npos) << stale.err;
  const CliRun right = prodsm("produce " + t + " --match-seq-num 2 --max-in-flight 4 -q", "c\nd\n");
  EXPECT_EQ(right.status, 0) << right.err;
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"a", "b", "c", "d"}));
}

// S4 on S2: with --match-seq-num and appends pipelined, each refused append (429, 503,
// a dropped connection, nothing applied) makes the appends behind it meet
// seq_num_mismatch with a tail below their start; they wait and are resent after it, so
// the run ends with every line once and in order instead of exit 3 at the first 429.
TEST_F(CliS2, PipelinedAppendsBehindARefusedOneAreResentInOrder) {
  std::string stream;
  const std::string t = target("gaps", stream);
  ASSERT_TRUE(test::create_s2_stream(control_, server().endpoint(), stream));
  const std::string spacer = R"({"kind":"delay","delay_ms":0,"count":7,"stream":")" + stream + R"("})";
  const std::string on = R"(,"stream":")" + stream + R"("})";
  std::string faults = "[" + spacer;
  for (const std::string fault :
       {R"({"kind":"error_before_commit","status":429,"code":"rate_limited")",
        R"({"kind":"error_before_commit","status":503,"code":"unavailable")", R"({"kind":"drop_before_commit")",
        R"({"kind":"error_before_commit","status":429,"code":"rate_limited","count":2)"}) {
    faults += "," + fault + on + "," + spacer;
  }
  faults += "]";
  ASSERT_TRUE(test::inject_s2_faults(control_, server().endpoint(), faults));
  std::string input;
  std::vector<std::string> lines;
  for (int i = 1; i <= 3000; ++i) {
    lines.push_back(std::to_string(i));
    input += lines.back() + "\n";
  }
  const CliRun r = prodsm("produce " + t + " --match-seq-num 0 --max-in-flight 4 --max-batch-bytes 256", input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(bodies(stream), lines);
}

TEST_F(CliS2, AStreamFencedWithAnotherTokenExits3) {  // E3
  std::string stream;
  const std::string t = target("fence", stream);
  ASSERT_TRUE(test::create_s2_stream(control_, server().endpoint(), stream));
  asio::S2ProducerOptions o;
  o.endpoint = server().endpoint();
  o.stream = stream;
  o.producer.protocol.record_format = prodsm::S2Policy::RecordFormat::framed;
  auto fencer = asio::S2Producer::create(io_.io.get_executor(), o);
  ASSERT_TRUE(fencer) << fencer.error();
  ASSERT_TRUE(fencer->submit(s2::fence_record("owner-b").value()));
  ASSERT_TRUE(fencer->async_close(::asio::use_future).get());

  const CliRun fenced = prodsm("produce " + t + " --fencing-token owner-a -q", "late\n");
  EXPECT_EQ(fenced.status, 3);
  EXPECT_NE(fenced.err.find("fencing_token_mismatch"), std::string::npos) << fenced.err;
  EXPECT_NE(fenced.err.find("owner-b"), std::string::npos) << fenced.err;
  const CliRun owner = prodsm("produce " + t + " --fencing-token owner-b -q", "mine\n");
  EXPECT_EQ(owner.status, 0) << owner.err;
  EXPECT_EQ(bodies(stream).back(), "mine");
}

TEST_F(CliS2, TheTokenComesFromS2AccessTokenOrABearerTokenFile) {
  ASSERT_FALSE(token_server().url().empty()) << token_server().error();
  const std::string t =
      "s2://test-basin/" + token_server().stream_name("token") + " --endpoint " + token_server().url();
  ::unsetenv("S2_ACCESS_TOKEN");
  const CliRun none = prodsm("produce " + t + " --create -q", "a\n");
  EXPECT_EQ(none.status, 3);
  EXPECT_NE(none.err.find("authn"), std::string::npos) << none.err;

  ::setenv("S2_ACCESS_TOKEN", "sesame-token", 1);
  const CliRun env = prodsm("produce " + t + " --create -q", "a\n");
  ::unsetenv("S2_ACCESS_TOKEN");
  EXPECT_EQ(env.status, 0) << env.err;

  const std::string file = test::temp_path("s2-token");
  test::write_file(file, "sesame-token\n");
  const CliRun from_file = prodsm("produce " + t + " --bearer-token-file " + file + " -q", "b\n");
  EXPECT_EQ(from_file.status, 0) << from_file.err;
  std::remove(file.c_str());

  // A --header-command printing Authorization while S2_ACCESS_TOKEN sets it too would fail
  // every attempt: refused before anything is sent, naming the variable (not -H).
  ::setenv("S2_ACCESS_TOKEN", "sesame-token", 1);
  const CliRun clash =
      prodsm("produce " + t + " -q --header-command 'echo \"Authorization: Bearer sesame-token\"'", "c\n");
  ::unsetenv("S2_ACCESS_TOKEN");
  EXPECT_EQ(clash.status, 2) << clash.err;
  EXPECT_NE(clash.err.find("header 'Authorization' is also set on every request (by S2_ACCESS_TOKEN)"),
            std::string::npos)
      << clash.err;
}

TEST_F(CliS2, ANoSideEffectFaultIsRetried) {  // E2
  std::string stream;
  const std::string t = target("fault", stream);
  ASSERT_TRUE(test::create_s2_stream(control_, server().endpoint(), stream));
  ASSERT_TRUE(test::inject_s2_faults(
      control_, server().endpoint(),
      R"([{"kind":"error_before_commit","stream":")" + stream + R"(","status":503,"code":"server_draining"}])"));
  const CliRun r = prodsm("produce " + t, "a\nb\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resends      1 retries"), std::string::npos) << r.out;
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"a", "b"}));
}

TEST_F(CliS2, BenchProducesToAnS2StreamAndReportsFigures) {  // P2
  std::string stream;
  const CliRun r = prodsm("bench " + target("bench", stream) + " --create -n 300 -s 20 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto figures = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(figures.is_discarded()) << r.out;
  EXPECT_EQ(figures["records_acknowledged"], 300);
  EXPECT_EQ(figures["records_failed"], 0);
  const auto held = bodies(stream);
  ASSERT_EQ(held.size(), 300U);
  EXPECT_EQ(held[0].size(), 20U);
  const CliRun bad = prodsm("bench " + target("bench", stream) + " --content-type text/plain -n 1");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--content-type is not supported for s2:// targets"), std::string::npos) << bad.err;
}

TEST_F(CliS2, ProducesOverHttpsWithCacert) {  // S2's cloud is https only
  const std::string& certs = test::tls_certs();
  ASSERT_FALSE(certs.empty());
  test::NodeServer proxy("tls-proxy.mjs", {"--cert", certs + "/server.pem", "--key", certs + "/server.key", "--target",
                                           "127.0.0.1:" + std::to_string(server().endpoint().port)});
  ASSERT_FALSE(proxy.url().empty()) << proxy.error();
  const std::string stream = server().stream_name("https");
  const std::string t = "s2://test-basin/" + stream + " --endpoint " + proxy.url();
  const CliRun ok = prodsm("produce " + t + " --create -q --cacert " + certs + "/ca.pem", "secure\n");
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(bodies(stream), (std::vector<std::string>{"secure"}));
  const CliRun untrusted = prodsm("produce " + t + " -q", "never\n");
  EXPECT_EQ(untrusted.status, 3);
  EXPECT_NE(untrusted.err.find("tls_failed"), std::string::npos) << untrusted.err;
}

// A header a --header-command prints is checked by S2's rules on an S2 request, not by
// Durable Streams': a name the S2 codec manages (Content-Encoding would make the server
// decompress a protobuf body) is refused as -H refuses it, before anything is sent.
TEST_F(CliS2, HeaderCommandHeadersFollowS2sRules) {
  for (const char* header : {"Content-Encoding: gzip", "s2-format: base64", "s2-basin: other-basin"}) {
    std::string stream;
    const std::string t = target("header-command", stream);
    const CliRun r = prodsm("produce " + t + " --create -q --header-command 'echo \"" + header + "\"'", "a\n");
    EXPECT_EQ(r.status, 2) << header << "\n" << r.err;
    EXPECT_NE(r.err.find("--header-command: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is managed by the codec"), std::string::npos) << r.err;
    const CliRun h = prodsm("produce " + t + " -q -H '" + header + "'", "a\n");
    EXPECT_EQ(h.status, 2) << header << "\n" << h.err;
    const auto read = test::read_s2_stream(control_, server().endpoint(), stream);
    ASSERT_FALSE(read) << header << ": refused before anything was sent, the stream too was not created";
    EXPECT_NE(read.error().find("stream_not_found"), std::string::npos) << read.error();
  }
  std::string stream;
  const CliRun ok = prodsm(
      "produce " + target("header-command-ok", stream) + " --create -q --header-command 'echo \"X-Trace: 1\"'", "a\n");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(bodies(stream), std::vector<std::string>{"a"});
}

// B3, R3: a line is one record without its '\n', metered as 8 bytes + its body: under
// --max-batch-bytes 100 a 92-byte line is taken, a 93-byte one (with or without a '\n')
// is refused naming the largest record, and the lines before it are produced.
TEST_F(CliS2, ALineTooLongForABatchNamesTheLargestRecord) {
  for (const std::string end : {"\n", ""}) {
    std::string stream;
    const CliRun r = prodsm("produce " + target("long-line", stream) + " --create -q --max-batch-bytes 100",
                            std::string(92, 'x') + "\n" + std::string(93, 'y') + end);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the largest record it takes is 92 bytes)"), std::string::npos) << r.err;
    EXPECT_EQ(bodies(stream), std::vector<std::string>{std::string(92, 'x')});
  }
}

TEST_F(CliS2, BadTargetsAndFlagsAreBadInput) {  // B3
  const std::string ep = " --endpoint " + server().url();
  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases{
      {"s2://test-basin" + ep, "names no stream"},
      {"s2://Bad/stream" + ep, "basin 'Bad'"},
      {"s2://test-basin/s --max-in-flight 3" + ep,
       "--max-in-flight: more than one S2 append in flight needs "
       "--match-seq-num"},
      {"s2://test-basin/s --json" + ep, "--json is not supported for s2:// targets"},
      {"s2://test-basin/s --producer-id p" + ep, "Durable Streams flags"},
      {"s2://test-basin/s --max-batch-bytes 2000000" + ep, "--max-batch-bytes: s2:// targets take"},
      {"s2://test-basin/s --fencing-token " + std::string(37, 'x') + ep,
       "--fencing-token: must be at most 36 bytes (got 37)"},
      {"s2://test-basin/s --endpoint ftp://x", "--endpoint: "},
      {server().url() + "/ds-stream --match-seq-num 3", "--match-seq-num: only for s2:// targets"},
  };
  for (const auto& c : cases) {
    const CliRun r = prodsm("produce " + c.args, "a\n");
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
