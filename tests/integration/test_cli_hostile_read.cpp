// SPDX-License-Identifier: Apache-2.0
// `prodsm read` and `produce --verify` against a hostile server
// (tests/hostile-server/server.mjs), issue 22: each case one misbehaviour of the
// server's catch-up reads (its appends are honest, so a case seeds its stream with an
// honest produce), asserting the exit status, the gist of the message and — for every
// run that reports success — that the output is exactly what the server stored, read
// from its own store (not through prodsm).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cli_support.hpp"
#include "hostile_server.hpp"

namespace prodsm::test {
namespace {

/// `n` lines of 100 bytes each.
std::string lines_of_100_bytes(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    std::string line = "line " + std::to_string(i) + " ";
    line.resize(99, 'a' + static_cast<char>(i % 26));
    s += line + "\n";
  }
  return s;
}

class CliHostileRead : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(server().url().empty()) << server().error(); }
  static HostileServer& server() { return HostileServer::shared(); }
  /// A stream misbehaving as `mode` on reads, holding `input` (produced honestly, in
  /// batches of at most 1 KiB, so the server answers reads in several pages).
  std::string seeded(const std::string& mode, const std::string& input) {
    const std::string u = server().stream(mode, "r");
    const CliRun r = prodsm("produce " + u + " --create --max-batch-bytes 1024 --linger-ms 0", input);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_bytes(input, server().stored(u)));
    return u;
  }
};

// The control: an honest server's pages are read back exactly.
TEST_F(CliHostileRead, HonestServerIsReadExactly) {
  const std::string u = seeded("honest", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
  EXPECT_GE(server().stats(u)["get"].get<int>(), 3);  // 10,000 bytes in pages of at most 4 KiB
}

// Garbage instead of a response: a malformed response is not retried (exit 3).
TEST_F(CliHostileRead, GarbageIsAMalformedResponse) {
  const CliRun r = prodsm("read " + seeded("read-garbage", lines_of_100_bytes(3)));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("malformed"), std::string::npos) << r.err;
}

// S7: an HTML page with 200 and no stream headers is not the stream's data; nothing of
// it is written.
TEST_F(CliHostileRead, AnHtmlPageWith200IsNotStreamData) {
  const CliRun r = prodsm("read " + seeded("read-html", lines_of_100_bytes(3)));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("protocol_error"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// R3: 1 MiB of response headers is refused by the header limit.
TEST_F(CliHostileRead, OversizedHeadersAreRefused) {
  const CliRun r = prodsm("read " + seeded("read-bigheaders", lines_of_100_bytes(3)));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("header"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// R3, issue 22 item 6: an endless body is written as it arrives and ends at --max-bytes.
TEST_F(CliHostileRead, AnEndlessBodyEndsAtMaxBytes) {
  const CliRun r = prodsm("read " + seeded("read-endless", lines_of_100_bytes(3)) + " --max-bytes 2000000");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("more than --max-bytes (2000000 bytes)"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.size(), 2000000U) << "exactly --max-bytes of a bytes stream, as head -c";
}

// R3: --max-bytes N writes exactly the stream's first N bytes when it holds more, whatever
// the pieces the body arrives in (a whole piece was refused, leaving fewer).
TEST_F(CliHostileRead, MaxBytesWritesExactlyThatPrefix) {
  const std::string u = seeded("honest", lines_of_100_bytes(100));
  for (const std::uint64_t n : {1ULL, 150ULL, 9999ULL}) {
    const CliRun r = prodsm("read " + u + " --max-bytes " + std::to_string(n));
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(r.out, server().stored(u)->substr(0, n));
  }
  EXPECT_EQ(prodsm("read " + u + " --max-bytes 10000").status, 0) << "exactly the stream's size is no failure";
}

// A failed bytes read names where its output's last complete page ends: keeping that many
// bytes and reading on from that offset gives the stream exactly, nothing doubled.
TEST_F(CliHostileRead, AFailedReadSaysWhereToContinueWithoutDoublingAnything) {
  const std::string u = seeded("honest", lines_of_100_bytes(100));  // pages of at most 4 KiB
  const CliRun r = prodsm("read " + u + " --max-bytes 9999");
  ASSERT_EQ(r.status, 3) << r.err;
  const std::string marker = "prodsm read: its first ";
  const auto at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::size_t kept = std::stoul(r.err.substr(at + marker.size()));
  const auto flag = r.err.find("continue with --offset ", at);
  ASSERT_NE(flag, std::string::npos) << r.err;
  const auto offset_at = flag + std::string("continue with --offset ").size();
  const std::string offset = r.err.substr(offset_at, r.err.find('\n', offset_at) - offset_at);
  EXPECT_GT(kept, 0U) << "the first pages were complete";
  EXPECT_LT(kept, 9999U) << "the page that failed is not counted";
  const CliRun rest = prodsm("read " + u + " --offset " + offset);
  ASSERT_EQ(rest.status, 0) << rest.err;
  EXPECT_TRUE(same_bytes(r.out.substr(0, kept) + rest.out, server().stored(u)));

  // Inside the first page: nothing of the output is a whole page; the read's own start.
  const CliRun first = prodsm("read " + u + " --max-bytes 100 --offset -1");
  EXPECT_EQ(first.status, 3) << first.err;
  EXPECT_NE(first.err.find("its first 0 bytes end at offset -1"), std::string::npos) << first.err;
}

// A body trickled one byte at a time is slow, not wrong: read exactly.
TEST_F(CliHostileRead, ATrickledBodyIsReadExactly) {
  const std::string u = seeded("read-trickle", lines_of_100_bytes(2));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
}

// Issue 22 "an overall limit": a body that trickles forever ends at --timeout-ms, and
// the flag is named.
TEST_F(CliHostileRead, ABodyTrickledForeverEndsAtTheReadTimeout) {
  const CliRun r = prodsm("read " + seeded("read-trickle-forever", lines_of_100_bytes(2)) + " --timeout-ms 500");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("did not finish within --timeout-ms (500 ms)"), std::string::npos) << r.err;
}

// R3: a read that reaches --timeout-ms in the middle of a body (a response that stalls
// with its connection open, and a request timeout longer than the read's) writes a
// prefix of the stream, as its message says: the last piece is not written again.
TEST_F(CliHostileRead, ATimeoutMidBodyWritesAPrefixOfTheStream) {
  const std::string u = seeded("read-stall-once", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u + " --timeout-ms 800");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("did not finish within --timeout-ms (800 ms)"), std::string::npos) << r.err;
  const std::string stored = server().stored(u).value_or("");
  ASSERT_FALSE(r.out.empty()) << "the first half arrived before the stall";
  ASSERT_LE(r.out.size(), stored.size());
  EXPECT_TRUE(same_bytes(r.out, stored.substr(0, r.out.size()))) << "not a prefix: " << r.out.size() << " bytes";
  const std::string j = server().stream("read-stall-once", "json");
  std::string input;
  for (int i = 0; i < 300; ++i) input += "{\"n\":" + std::to_string(i) + "}\n";
  ASSERT_EQ(prodsm("produce " + j + " --create --json --max-batch-bytes 1024 --linger-ms 0", input).status, 0);
  const CliRun rj = prodsm("read " + j + " --json --timeout-ms 800");
  EXPECT_EQ(rj.status, 3) << rj.err;
  const auto values = nlohmann::json::parse(rj.out + "]", nullptr, false);  // the array is left open
  ASSERT_TRUE(values.is_array()) << rj.out;
  ASSERT_FALSE(values.empty());
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i].at("n"), i) << "value " << i;
}

// E4 for reads: a response reset halfway is read again from the same offset and the
// half already written is not written twice.
TEST_F(CliHostileRead, AResetMidResponseIsRetriedWithoutDoublingOutput) {
  const std::string u = seeded("read-reset-once", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
  EXPECT_EQ(r.err.find("(0 retries)"), std::string::npos) << r.err;  // the reset was met
}

// The same with JSON: elements handed on before the reset are skipped on the re-read.
TEST_F(CliHostileRead, AResetMidJsonResponseIsRetriedElementExactly) {
  const std::string u = server().stream("read-reset-once", "json");
  std::string input;
  for (int i = 0; i < 300; ++i) input += "{\"n\":" + std::to_string(i) + "}\n";
  ASSERT_EQ(prodsm("produce " + u + " --create --json --max-batch-bytes 1024 --linger-ms 0", input).status, 0);
  const CliRun r = prodsm("read " + u + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(*server().stored(u)));
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 300U);
}

// PROTOCOL.md, JSON mode: each page of a JSON stream is a JSON array. `read` without
// --json used to write the pages' bytes one after another ("[...][...]", not JSON); the
// stream's Content-Type now selects JSON mode, so the output is the one array --json gives.
TEST_F(CliHostileRead, AJsonStreamReadWithoutJsonIsOneArrayAcrossPages) {
  const std::string u = server().stream("honest", "json-pages");
  std::string input;
  for (int i = 0; i < 1000; ++i) input += "{\"n\":" + std::to_string(i) + "}\n";
  ASSERT_EQ(prodsm("produce " + u + " --create --json --max-batch-bytes 1024 --linger-ms 0", input).status, 0);
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(server().stats(u)["get"].get<int>(), 2) << "the read must span several pages (at most 4 KiB each)";
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 200);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(*server().stored(u)));
  EXPECT_EQ(r.out, prodsm("read " + u + " --json").out);
  EXPECT_NE(r.err.find("(1000 JSON values)"), std::string::npos) << r.err;
}

// E4, bounded (R3): a server that resets every response fails the read after a bounded
// number of attempts; what was written is a prefix of the stream.
TEST_F(CliHostileRead, AResetOnEveryResponseFailsAfterBoundedAttempts) {
  const std::string u = seeded("read-reset", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("(after 10 attempts)"), std::string::npos) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)->substr(0, r.out.size())));
  const int gets = server().stats(u)["get"].get<int>();
  const CliRun three = prodsm("read " + u + " --max-attempts 3");
  EXPECT_EQ(three.status, 3) << three.err;
  EXPECT_NE(three.err.find("(after 3 attempts)"), std::string::npos) << three.err;
  EXPECT_EQ(server().stats(u)["get"].get<int>() - gets, 3) << "--max-attempts bounds the GETs at one offset";
}

// A response that stops halfway with its connection open: --request-timeout-ms notices
// the body that stopped arriving, and the retry completes the read exactly.
TEST_F(CliHostileRead, AStalledBodyIsRetriedAfterTheRequestTimeout) {
  const std::string u = seeded("read-stall-once", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u + " --request-timeout-ms 300");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
}

// A Content-Length that claims more than is sent before the close is a broken response,
// retried; the output is exact.
TEST_F(CliHostileRead, AContentLengthLongerThanTheBodyIsRetried) {
  const std::string u = seeded("read-long-length-once", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
}

// A Content-Length one byte short of each page, with an offset past the whole page,
// loses bytes no reader can notice from the headers: `--verify` catches it. The read-back
// fails on the byte beyond the framing, so nothing was compared: exit 3, "not verified"
// (a server failure), not exit 1 (which says the stream differs from the input).
TEST_F(CliHostileRead, VerifyCatchesAContentLengthShorterThanTheData) {
  const std::string u = server().stream("read-short-length", "v");
  const CliRun r =
      prodsm("produce " + u + " --create --verify --max-batch-bytes 1024 --linger-ms 0", lines_of_100_bytes(30));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("not verified: reading the stream back failed: protocol_error"), std::string::npos) << r.err;
  EXPECT_TRUE(same_bytes(lines_of_100_bytes(30), server().stored(u)));
}

// The same server read with `read`: the byte that follows each page beyond its
// Content-Length shows the framing is wrong, so the read fails (exit 3) naming it, never
// exit 0 with the bytes cut short.
TEST_F(CliHostileRead, ReadRefusesAPageWithBytesBeyondItsContentLength) {
  const std::string u = seeded("read-short-length", lines_of_100_bytes(30));
  const CliRun r = prodsm("read " + u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("beyond its framing"), std::string::npos) << r.err;
}

// Issue 22 item 5: Connection: close after every response; each page comes over a new
// connection, for `read` and for `produce --verify`.
TEST_F(CliHostileRead, ConnectionCloseAfterEveryResponse) {
  const std::string u = seeded("read-close", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
  EXPECT_GE(server().stats(u)["get"].get<int>(), 3);
  const std::string v = server().stream("read-close", "verify");
  const CliRun p =
      prodsm("produce " + v + " --create --verify --max-batch-bytes 1024 --linger-ms 0", lines_of_100_bytes(100));
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("verified"), std::string::npos) << p.out;
  EXPECT_TRUE(same_bytes(lines_of_100_bytes(100), server().stored(v)));
}

// Issue 22 item 5: HTTP/1.0 responses, each body ended by the connection's close.
TEST_F(CliHostileRead, Http10ResponsesEndedByClose) {
  const std::string u = seeded("read-http10", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
}

// Issue 22 item 8, R3: empty bodies with an advancing offset forever end the read after
// a bounded number of them (exit 3), not 1.6 million GETs.
TEST_F(CliHostileRead, EmptyResponsesAdvancingForeverAreBounded) {
  const std::string u = seeded("read-empty-forever", lines_of_100_bytes(3));
  const CliRun r = prodsm("read " + u);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("carried no data"), std::string::npos) << r.err;
  EXPECT_LE(server().stats(u)["get"].get<int>(), 20);
}

// Data under an offset that does not advance would be read twice: refused (exit 3).
TEST_F(CliHostileRead, DataWithoutAnAdvancingOffsetIsRefused) {
  const CliRun r = prodsm("read " + seeded("read-stuck", lines_of_100_bytes(3)));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("without advancing Stream-Next-Offset"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// Issue 22 "a read ends after an empty response that does not advance": without
// Stream-Up-To-Date (a proxy that drops it) the read ends at the first empty response
// that does not advance, with exactly the stream.
TEST_F(CliHostileRead, WithoutUpToDateTheReadEndsAtAnEmptyResponseThatDoesNotAdvance) {
  const std::string u = seeded("read-no-up-to-date", lines_of_100_bytes(100));
  const CliRun r = prodsm("read " + u);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_bytes(r.out, server().stored(u)));
}

// Issue 22 item 4: a read answered in one response larger than 64 MiB (as the reference
// server does) succeeds for `produce --verify` and `read`, exactly.
TEST_F(CliHostileRead, OneResponseOver64MiBIsReadExactly) {
  const std::string u = server().stream("read-one-response", "huge");
  const std::string input = lines_of_100_bytes(700'000);  // 70 MB
  const std::string in_file = temp_path("huge-in");
  const std::string out_file = temp_path("huge-out");
  write_file(in_file, input);
  const CliRun p = prodsm("produce " + u + " --create --verify -i " + in_file);
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("verified"), std::string::npos) << p.out;
  const CliRun r = prodsm("read " + u + " -o " + out_file);
  ASSERT_EQ(r.status, 0) << r.err;
  // Every GET in this mode is answered with the whole rest of the stream (a retry after a
  // stall, on a busy machine, too): each read's data came in one 70 MB response.
  EXPECT_TRUE(same_bytes(input, server().stored(u)));
  EXPECT_TRUE(same_bytes(slurp(out_file), server().stored(u)));
  std::remove(in_file.c_str());
  std::remove(out_file.c_str());
}

}  // namespace
}  // namespace prodsm::test
