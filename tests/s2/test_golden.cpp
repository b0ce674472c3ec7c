// SPDX-License-Identifier: Apache-2.0
// Golden fixtures captured from the official TypeScript SDK (tests/s2/capture_fixtures.mjs,
// output in tests/s2/data/): prodsm's append bodies equal the SDK's, byte for byte —
// through the generic encoder and through the batch path the producer uses, in both
// record formats (S1) — its request line and headers carry what the SDK's do, and it
// decodes the acks the SDK's generated codec encodes (P4).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace {

namespace s2 = prodsm::s2;
using nlohmann::json;
using prodsm::S2Policy;
using s2test::as_bytes;
using s2test::header_of;
using s2test::hex;
using s2test::split;
using s2test::unhex;

const std::string kDir = PRODSM_S2_DATA_DIR;

const json& fixtures() {
  static const json j = json::parse(s2test::read_file(kDir + "/fixtures.json"));
  return j;
}

/// One append case's input, owned, with views for the encoders.
struct Case {
  std::string name;
  std::string expected;  // the SDK's bytes
  std::vector<std::string> bodies;
  std::vector<std::vector<std::pair<std::string, std::string>>> headers;
  std::vector<std::optional<std::uint64_t>> timestamps;
  std::optional<std::uint64_t> match_seq_num;
  std::optional<std::string> fencing_token;
  json request;

  explicit Case(const json& j)
      : name(j["name"]), expected(s2test::read_file(kDir + "/" + j["file"].get<std::string>())) {
    for (const json& r : j["records"]) {
      bodies.push_back(unhex(r["body_hex"].get<std::string>()));
      headers.emplace_back();
      for (const json& h : r["headers"]) {
        headers.back().emplace_back(unhex(h[0].get<std::string>()), unhex(h[1].get<std::string>()));
      }
      timestamps.push_back(r.contains("timestamp") ? std::optional{std::stoull(r["timestamp"].get<std::string>())}
                                                   : std::nullopt);
    }
    if (j.contains("match_seq_num")) match_seq_num = std::stoull(j["match_seq_num"].get<std::string>());
    if (j.contains("fencing_token")) fencing_token = j["fencing_token"].get<std::string>();
    request = j["request"];
  }
  bool has_timestamps() const {
    return std::any_of(timestamps.begin(), timestamps.end(), [](const auto& t) { return t.has_value(); });
  }
  bool has_headers() const {
    return std::any_of(headers.begin(), headers.end(), [](const auto& h) { return !h.empty(); });
  }
  std::vector<s2::HeaderView> header_views(std::size_t i) const {
    std::vector<s2::HeaderView> v;
    for (const auto& [n, val] : headers[i]) v.push_back({n, val});
    return v;
  }
  S2Policy::Stamp stamp() const {
    S2Policy::Stamp s;
    s.match_seq_num = match_seq_num;
    if (fencing_token) {
      s.fenced = true;
      s.token_size = static_cast<std::uint8_t>(fencing_token->size());
      std::copy(fencing_token->begin(), fencing_token->end(), s.token.begin());
    }
    return s;
  }
  /// The batch as the core would hold it: records concatenated in `format`, their ends.
  std::pair<std::string, std::vector<std::uint32_t>> batch(S2Policy::RecordFormat format) const {
    std::string body;
    std::vector<std::uint32_t> ends;
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      if (format == S2Policy::RecordFormat::body) {
        body += bodies[i];
      } else {
        const auto hv = header_views(i);
        const auto framed = s2::frame_record(hv, bodies[i]);
        EXPECT_TRUE(framed) << name << ": " << framed.error();
        body += *framed;
      }
      ends.push_back(static_cast<std::uint32_t>(body.size()));
    }
    return {body, ends};
  }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const json& j : fixtures()["appends"]) out.emplace_back(j);
  return out;
}

TEST(S2CodecGolden, FixturesWereCapturedFromTheOfficialSdk) {
  EXPECT_EQ(fixtures()["sdk"], "@s2-dev/streamstore");
  EXPECT_EQ(fixtures()["sdk_version"], "0.27.0");
  EXPECT_GE(fixtures()["appends"].size(), 15U);
  // S2-WIRE.md's example: one record 00 01 02 ff with match_seq_num 2.
  EXPECT_EQ(hex(s2test::read_file(kDir + "/append_one_record_match2.bin")), "0a061a04000102ff1002");
}

TEST(S2CodecGolden, GenericEncoderMatchesTheSdkByteForByte) {
  for (const Case& c : cases()) {
    std::vector<std::vector<s2::HeaderView>> hv;
    for (std::size_t i = 0; i < c.bodies.size(); ++i) hv.push_back(c.header_views(i));
    std::vector<s2::AppendRecordView> records;
    for (std::size_t i = 0; i < c.bodies.size(); ++i) records.push_back({c.timestamps[i], hv[i], c.bodies[i]});
    s2::AppendInputView input{records, c.match_seq_num, std::nullopt};
    if (c.fencing_token) input.fencing_token = *c.fencing_token;
    std::string out;
    s2::encode(input, out);
    EXPECT_EQ(hex(out), hex(c.expected)) << c.name;
    EXPECT_EQ(s2::encoded_size(input), c.expected.size()) << c.name;
  }
}

TEST(S1, BatchPathMatchesTheSdkByteForByteInBothRecordFormats) {
  int checked = 0;
  for (const Case& c : cases()) {
    if (c.has_timestamps()) continue;  // the producer path sends no per-record timestamps
    for (const auto format : {S2Policy::RecordFormat::body, S2Policy::RecordFormat::framed}) {
      if (format == S2Policy::RecordFormat::body && c.has_headers()) continue;
      const auto [body, ends] = c.batch(format);
      std::string out;
      const auto encoded = s2::encode_batch_body(as_bytes(body), ends, c.stamp(), format, out);
      ASSERT_TRUE(encoded) << c.name << ": " << encoded.error();
      EXPECT_EQ(hex(out), hex(c.expected)) << c.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 25);
}

TEST(S2CodecGolden, RequestLineAndHeadersCarryWhatTheSdkSends) {
  const auto endpoint = s2::Endpoint::custom("http://127.0.0.1:9", fixtures()["basin"].get<std::string>());
  ASSERT_TRUE(endpoint);
  s2::RequestOptions options;
  options.access_token = "test-token";
  const std::string stream = fixtures()["stream"];
  for (const Case& c : cases()) {
    if (c.has_timestamps()) continue;
    const auto [body, ends] = c.batch(S2Policy::RecordFormat::framed);
    const auto request =
        s2::encode_batch(*endpoint, stream, as_bytes(body), ends, c.stamp(), S2Policy::RecordFormat::framed, options);
    ASSERT_TRUE(request) << request.error();
    const auto [head, sent] = split(request->bytes);
    const std::string line = head.substr(0, head.find("\r\n"));
    EXPECT_EQ(line,
              c.request["method"].get<std::string>() + " " + c.request["target"].get<std::string>() + " HTTP/1.1");
    EXPECT_EQ(header_of(head, "Content-Type"), c.request["content_type"]);
    EXPECT_EQ(header_of(head, "Accept"), c.request["accept"]);
    EXPECT_EQ(header_of(head, "Authorization"), c.request["authorization"]);
    EXPECT_EQ(header_of(head, "s2-basin"), c.request["s2_basin"]);
    EXPECT_EQ(header_of(head, "Content-Length"), c.request["content_length"]);
    EXPECT_EQ(hex(sent), hex(c.expected)) << c.name;
  }
}

TEST(P4, AcksEncodedByTheSdkDecodeToTheSamePositions) {
  for (const json& a : fixtures()["acks"]) {
    const std::string bytes = s2test::read_file(kDir + "/" + a["file"].get<std::string>());
    const auto ack = s2::decode_append_ack(bytes);
    ASSERT_TRUE(ack) << a["name"] << ": " << ack.error().describe();
    auto pos = [](const json& p) {
      return s2::StreamPosition{std::stoull(p["seq_num"].get<std::string>()),
                                std::stoull(p["timestamp"].get<std::string>())};
    };
    EXPECT_EQ(ack->start, pos(a["start"])) << a["name"];
    EXPECT_EQ(ack->end, pos(a["end"])) << a["name"];
    EXPECT_EQ(ack->tail, a.contains("tail") ? pos(a["tail"]) : pos(a["end"])) << a["name"];
    if (a.contains("tail")) {  // and prodsm's encoder writes what the SDK's writes
      std::string out;
      s2::encode(*ack, out);
      EXPECT_EQ(hex(out), hex(bytes)) << a["name"];
    }
    // Through the HTTP classification too (a 200 as S2 sends it).
    const auto classified =
        s2::classify_append(s2test::response(200, bytes, {{"content-type", "application/protobuf"}}));
    ASSERT_TRUE(classified);
    EXPECT_EQ(*classified, *ack);
  }
}

}  // namespace
