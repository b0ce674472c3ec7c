// SPDX-License-Identifier: Apache-2.0
// E5/R3: thousands of random mutations of the recorded responses (fixed seed, so every
// run is the same) never crash the parser or the classifiers, never leave the parser in
// an unknown state and never grow the parsed response past the limits.
#include <random>

#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

using State = ResponseParser::State;

/// Byte strings that tend to reach interesting parser states when spliced in.
const std::vector<std::string>& tokens() {
  static const std::vector<std::string> kTokens = {
      "\r\n",
      "\r\n\r\n",
      ": ",
      "Transfer-Encoding: chunked\r\n",
      "Content-Length: 5\r\n",
      "Content-Length: 18446744073709551616\r\n",
      "ffffffffffffffffffff\r\n",
      "0\r\n\r\n",
      "Producer-Expected-Seq: 9007199254740992\r\n",
      "Producer-Epoch: -1\r\n",
      "Stream-Closed: TRUE\r\n",
      "Stream-Next-Offset: \r\n",
      "Retry-After: 86401\r\n",
      "HTTP/1.1 100 Continue\r\n\r\n",
      "HTTP/1.1 204 No Content\r\n\r\n",
      "Connection: close\r\n",
      "Connection: upgrade\r\nUpgrade: x\r\n",
      std::string(1, '\0'),
      "\xff\xfe",
      " \t ",
  };
  return kTokens;
}

std::string mutate(std::string bytes, std::mt19937& rng) {
  auto pick = [&](std::size_t n) {
    return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int round = 0; round < rounds; ++round) {
    const std::size_t at = pick(bytes.size() + 1);
    switch (pick(8)) {
      case 0:  // flip one bit
        if (!bytes.empty()) {
          const std::size_t i = pick(bytes.size());
          bytes[i] = static_cast<char>(bytes[i] ^ static_cast<char>(1U << pick(8)));
        }
        break;
      case 1:  // random byte
        bytes.insert(at, 1, static_cast<char>(pick(256)));
        break;
      case 2:  // delete a range
        bytes.erase(at, pick(16) + 1);
        break;
      case 3:  // duplicate a range
        if (at < bytes.size()) bytes.insert(at, bytes.substr(at, pick(64) + 1));
        break;
      case 4:  // truncate
        bytes.resize(at);
        break;
      case 5:  // splice a token
        bytes.insert(at, tokens()[pick(tokens().size())]);
        break;
      case 6:  // overwrite with a digit run (numbers that overflow)
        bytes.insert(at, std::string(pick(30) + 1, static_cast<char>('0' + pick(10))));
        break;
      default:  // replace a byte with a delimiter
        if (at < bytes.size()) bytes[at] = "\r\n: ;\t0"[pick(7)];
        break;
    }
  }
  return bytes;
}

/// Classifiers must return a value for any response, never crash.
void classify_everything(const Response& r) {
  for (const bool sequenced : {false, true}) {
    (void)classify_append(r, sequenced);
    (void)classify_close(r, sequenced);
  }
  (void)classify_create(r);
  (void)classify_head(r);
  (void)classify_read(r);
  (void)classify_delete(r);
}

TEST(ParserMutations, E5_RandomMutationsOfCapturesNeverCrashAndEndInAKnownState) {
  const auto names = capture_names();
  std::vector<std::string> captures;
  captures.reserve(names.size());
  for (const auto& name : names) captures.push_back(load_capture(name));
  std::mt19937 rng(20240531U);
  ResponseLimits small;
  small.max_header_bytes = 512;
  small.max_headers = 8;
  small.max_body_bytes = 16;
  std::size_t counts[3] = {0, 0, 0};
  constexpr int kIterations = 20000;
  for (int i = 0; i < kIterations; ++i) {
    const std::size_t which = std::uniform_int_distribution<std::size_t>(0, captures.size() - 1)(rng);
    const std::string bytes = mutate(captures[which], rng);
    const bool head = (rng() & 7U) == 0;
    const ResponseLimits limits = (rng() & 3U) == 0 ? small : ResponseLimits{};
    ResponseParser parser(limits);
    parser.reset(head);
    std::size_t pos = 0;
    int responses = 0;
    while (responses < 8) {
      while (pos < bytes.size() && parser.state() == State::incomplete) {
        const std::size_t n = std::min<std::size_t>(bytes.size() - pos, 1 + (rng() % 97));
        const std::size_t used = parser.feed(span_of(std::string_view(bytes).substr(pos, n)));
        ASSERT_LE(used, n);
        pos += used;
        if (used < n) break;
      }
      if (parser.state() == State::incomplete && (pos >= bytes.size() || (rng() & 1U) == 0)) {
        parser.finish_eof();
      }
      const State s = parser.state();
      ASSERT_TRUE(s == State::incomplete || s == State::complete || s == State::failed);
      ++counts[static_cast<int>(s)];
      if (s == State::failed) {
        ASSERT_TRUE(parser.error().code == ErrorCode::protocol_error || parser.error().code == ErrorCode::internal);
        ASSERT_FALSE(parser.error().message.empty());
        break;
      }
      if (s == State::incomplete) break;
      const Response& r = parser.response();
      ASSERT_LE(r.headers.size(), limits.max_headers);
      ASSERT_LE(r.body.size(), limits.max_body_bytes);
      classify_everything(r);
      ++responses;
      if (pos >= bytes.size()) break;
      parser.reset(head);
    }
  }
  // The mutations reach all three outcomes.
  EXPECT_GT(counts[static_cast<int>(State::complete)], 100U);
  EXPECT_GT(counts[static_cast<int>(State::failed)], 100U);
}

TEST(ParserMutations, E5_RandomBytesNeverCrash) {
  std::mt19937 rng(7U);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(1 + rng() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFFU);
    if ((rng() & 1U) == 0) bytes.insert(0, "HTTP/1.1 200 OK\r\n");
    ResponseParser parser;
    parser.feed(span_of(bytes));
    parser.finish_eof();
    const State s = parser.state();
    ASSERT_TRUE(s == State::complete || s == State::failed);
    if (s == State::complete) classify_everything(parser.response());
  }
}

}  // namespace
}  // namespace prodsm::ds::test
