// SPDX-License-Identifier: Apache-2.0
// Request encoding: endpoints (cloud and custom, basin addressing), names, tokens and
// extra headers, the exact append request, batches from the core's SendBatch shape
// (S1: match_seq_num and fencing token; a resend is byte-identical), create/tail/read.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace {

namespace s2 = prodsm::s2;
using prodsm::S2Policy;
using s2test::as_bytes;
using s2test::header_of;
using s2test::hex;
using s2test::split;

s2::Endpoint lite() {
  return s2::Endpoint::custom("http://127.0.0.1:8080", "test-basin").value();
}

/// A batch as the core hands it over: records concatenated, their end offsets.
struct Batch {
  std::string body;
  std::vector<std::uint32_t> ends;
  explicit Batch(std::initializer_list<std::string_view> records) {
    for (const std::string_view r : records) {
      body += r;
      ends.push_back(static_cast<std::uint32_t>(body.size()));
    }
  }
};

S2Policy::Stamp stamp(std::optional<std::uint64_t> match, std::string_view token = {}, bool fenced = false) {
  S2Policy::Stamp s;
  s.match_seq_num = match;
  if (fenced) {
    s.fenced = true;
    s.token_size = static_cast<std::uint8_t>(token.size());
    std::copy(token.begin(), token.end(), s.token.begin());
  }
  return s;
}

TEST(S2CodecEndpoint, CloudPutsTheBasinInTheHostName) {
  const auto e = s2::Endpoint::cloud("my-basin-1");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->host, "my-basin-1.b.s2.dev");
  EXPECT_EQ(e->port, 443);
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->base_path, "/v1");
  EXPECT_FALSE(e->basin_header);
  EXPECT_EQ(e->authority(), "my-basin-1.b.s2.dev");
  EXPECT_EQ(s2::Endpoint::cloud("Bad_Basin").error(), "basin name must begin and end with a lowercase letter or digit");
  EXPECT_EQ(s2::Endpoint::cloud("short").error(), "basin name must be 8..48 bytes (got 5)");
}

TEST(S2CodecEndpoint, CustomEndpointsUseTheS2BasinHeader) {
  const auto e = lite();
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 8080);
  EXPECT_FALSE(e.tls);
  EXPECT_EQ(e.base_path, "/v1");
  EXPECT_TRUE(e.basin_header);
  EXPECT_EQ(e.authority(), "127.0.0.1:8080");
  EXPECT_EQ(s2::Endpoint::custom("http://localhost", "test-basin")->authority(), "localhost");
  EXPECT_EQ(s2::Endpoint::custom("https://s2.example:443/prefix/v1/", "test-basin")->base_path, "/prefix/v1");
  // A trailing '/' alone is no path: the API's `/v1`, not the root (no S2 server answers there).
  EXPECT_EQ(s2::Endpoint::custom("http://127.0.0.1:8080/", "test-basin")->base_path, "/v1");
  EXPECT_EQ(s2::Endpoint::custom("http://127.0.0.1:8080//", "test-basin")->base_path, "/v1");
  EXPECT_EQ(s2::Endpoint::custom("http://[::1]:9000", "test-basin")->authority(), "[::1]:9000");
  EXPECT_EQ(s2::Endpoint::custom("ftp://x", "test-basin").error(), "endpoint must start with http:// or https://");
  EXPECT_EQ(s2::Endpoint::custom("http://h:0", "test-basin").error(), "endpoint port must be 1..65535");
  EXPECT_EQ(s2::Endpoint::custom("http://h:99999", "test-basin").error(), "endpoint port must be 1..65535");
  EXPECT_EQ(s2::Endpoint::custom("http://h/x?y", "test-basin").error(),
            "endpoint must not contain a query or fragment");
  EXPECT_EQ(s2::Endpoint::custom("http://u@h", "test-basin").error(), "endpoint must not contain user information");
  EXPECT_EQ(s2::Endpoint::custom("http://:80", "test-basin").error(), "endpoint has no host");
}

TEST(S2CodecEndpoint, NamesTokensAndExtraHeadersAreChecked) {
  EXPECT_EQ(s2::check_stream_name(""), "stream name must not be empty");
  EXPECT_EQ(s2::check_stream_name(".."), "stream name must not be \".\" or \"..\"");
  EXPECT_EQ(s2::check_stream_name(std::string(513, 's')), "stream name must be at most 512 bytes (got 513)");
  EXPECT_EQ(s2::check_stream_name("\xff"), "stream name must be valid UTF-8");
  EXPECT_EQ(s2::check_stream_name("a/b c\xc3\xbc"), std::nullopt);
  EXPECT_EQ(s2::check_access_token("tok en"), "access token must be visible ASCII (no space or control byte)");
  EXPECT_EQ(s2::check_access_token("tok\r\nX: y"), "access token must be visible ASCII (no space or control byte)");
  EXPECT_EQ(s2::check_access_token("aGVsbG8=.-_~+/"), std::nullopt);
  EXPECT_EQ(s2::check_extra_header({"s2-encryption-key", "abc"}), std::nullopt);
  EXPECT_EQ(s2::check_extra_header({"User-Agent", "prodsm"}), std::nullopt);
  for (const char* managed : {"host", "Content-Type", "accept", "Authorization", "S2-Basin", "s2-format",
                              "Content-Encoding", "Transfer-Encoding", "Content-Length"}) {
    EXPECT_EQ(s2::check_extra_header({managed, "x"}), "header '" + std::string{managed} + "' is managed by the codec");
  }
  EXPECT_EQ(s2::check_extra_header({"X-A", "a\r\nInjected: 1"}),
            "header 'X-A' value contains a control character (CR, LF, NUL, ...)");
  EXPECT_EQ(s2::check_extra_header({"bad name", "x"}), "header name 'bad name' is not an HTTP token");
  s2::RequestOptions options;
  options.extra_headers = {{"Accept", "text/html"}};
  EXPECT_EQ(s2::check_request_target(lite(), "s", options), "header 'Accept' is managed by the codec");
}

TEST(S2CodecRequests, AppendRequestIsExactlyThis) {
  const s2::AppendRecordView record{std::nullopt, {}, std::string_view("\x00\x01\x02\xff", 4)};
  s2::AppendInputView input{{&record, 1}, 2, std::nullopt};
  s2::RequestOptions options;
  options.access_token = "secret";
  options.extra_headers = {{"User-Agent", "prodsm-test"}, {"Host", "evil"}, {"X-Bad", "a\r\nb: c"}};
  const auto request = s2::encode_append(lite(), "orders/2024 ü", input, options);
  ASSERT_TRUE(request) << request.error();
  const std::string expected_head =
      "POST /v1/streams/orders%2F2024%20%C3%BC/records HTTP/1.1\r\n"
      "Host: 127.0.0.1:8080\r\n"
      "Content-Type: application/protobuf\r\n"
      "Accept: application/protobuf\r\n"
      "Content-Length: 10\r\n"
      "Authorization: Bearer secret\r\n"
      "s2-basin: test-basin\r\n"
      "User-Agent: prodsm-test\r\n"
      "\r\n";
  const auto [head, body] = split(request->bytes);
  EXPECT_EQ(head, expected_head);
  EXPECT_EQ(hex(body), "0a061a04000102ff1002");  // S2-WIRE.md's example, as the SDK sends it
  EXPECT_TRUE(request->retry_safe);
  EXPECT_FALSE(request->head);
}

TEST(S2CodecRequests, CloudRequestsHaveNoBasinHeaderAndTokenIsOptional) {
  const auto record = s2::AppendRecordView{std::nullopt, {}, "x"};
  s2::RequestOptions options;
  options.keep_alive = false;
  const auto request = s2::encode_append(s2::Endpoint::cloud("my-basin-1").value(), "s",
                                         {{&record, 1}, std::nullopt, std::nullopt}, options);
  ASSERT_TRUE(request);
  const auto [head, body] = split(request->bytes);
  EXPECT_EQ(header_of(head, "Host"), "my-basin-1.b.s2.dev");
  EXPECT_EQ(header_of(head, "s2-basin"), "<absent>");
  EXPECT_EQ(header_of(head, "Authorization"), "<absent>");
  EXPECT_EQ(header_of(head, "Connection"), "close");
  EXPECT_FALSE(request->retry_safe);  // no match_seq_num: a resend could append twice
  options.access_token = "bad token";
  EXPECT_EQ(s2::encode_append(lite(), "s", {{&record, 1}, std::nullopt, std::nullopt}, options).error(),
            "access token must be visible ASCII (no space or control byte)");
  EXPECT_EQ(s2::encode_append(lite(), "", {{&record, 1}, std::nullopt, std::nullopt}, {}).error(),
            "stream name must not be empty");
}

TEST(S1, BatchBodyCarriesMatchSeqNumAndFencingTokenAfterTheRecords) {
  const Batch batch{"a", "", "bc"};
  std::string body;
  ASSERT_TRUE(s2::encode_batch_body(as_bytes(batch.body), batch.ends, stamp(7, "tok", true),
                                    S2Policy::RecordFormat::body, body));
  // records: {body "a"}, {}, {body "bc"}; match_seq_num 7; fencing_token "tok"
  EXPECT_EQ(hex(body),
            "0a031a0161"
            "0a00"
            "0a041a026263"
            "1007"
            "1a03746f6b");
  std::string unsequenced;
  ASSERT_TRUE(s2::encode_batch_body(as_bytes(batch.body), batch.ends, stamp(std::nullopt), S2Policy::RecordFormat::body,
                                    unsequenced));
  EXPECT_EQ(hex(unsequenced),
            "0a031a0161"
            "0a00"
            "0a041a026263");
  std::string empty_token;  // present but empty: still sent (optional string)
  ASSERT_TRUE(s2::encode_batch_body(as_bytes(batch.body), batch.ends, stamp(0, "", true), S2Policy::RecordFormat::body,
                                    empty_token));
  EXPECT_EQ(hex(empty_token).substr(hex(empty_token).size() - 8), "10001a00");
}

TEST(S1, ResendOfABatchIsByteIdentical) {
  const std::string framed_a = *s2::frame_record(std::vector<s2::HeaderView>{{"h", "v"}}, "A");
  const Batch batch{framed_a, s2::frame_body("B")};
  const auto first = s2::encode_batch(lite(), "s", as_bytes(batch.body), batch.ends, stamp(42, "t", true),
                                      S2Policy::RecordFormat::framed, {});
  const auto again = s2::encode_batch(lite(), "s", as_bytes(batch.body), batch.ends, stamp(42, "t", true),
                                      S2Policy::RecordFormat::framed, {});
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->bytes, again->bytes);
  EXPECT_TRUE(first->retry_safe);
  // records: {headers [{h, v}], body "A"}, {body "B"}
  EXPECT_EQ(hex(split(first->bytes).second),
            "0a0b"
            "1206"
            "0a0168"
            "120176"
            "1a0141"
            "0a03"
            "1a0142"
            "102a"
            "1a0174");
}

TEST(S2CodecRequests, MalformedBatchesAreRefusedNotEncoded) {
  const Batch batch{"ab", "c"};
  std::string out;
  EXPECT_EQ(s2::encode_batch_body(as_bytes(batch.body), {}, stamp(0), S2Policy::RecordFormat::body, out).error(),
            "a batch needs at least one record");
  const std::vector<std::uint32_t> backwards{2, 1};
  EXPECT_EQ(s2::encode_batch_body(as_bytes(batch.body), backwards, stamp(0), S2Policy::RecordFormat::body, out).error(),
            "record_ends[1] is not within the body or goes backwards");
  const std::vector<std::uint32_t> past{2, 4};
  EXPECT_EQ(s2::encode_batch_body(as_bytes(batch.body), past, stamp(0), S2Policy::RecordFormat::body, out).error(),
            "record_ends[1] is not within the body or goes backwards");
  const std::vector<std::uint32_t> short_of_end{2};
  EXPECT_EQ(
      s2::encode_batch_body(as_bytes(batch.body), short_of_end, stamp(0), S2Policy::RecordFormat::body, out).error(),
      "the last record does not end at the body's end");
  EXPECT_EQ(
      s2::encode_batch_body(as_bytes(batch.body), batch.ends, stamp(0), S2Policy::RecordFormat::framed, out).error(),
      "record 0 is not a valid framed record");
  EXPECT_TRUE(out.empty());
}

TEST(S2CodecRequests, CreateStreamCheckTailAndRead) {
  const auto create = s2::encode_create_stream(lite(), "new \"one\"", {});
  ASSERT_TRUE(create);
  const auto [chead, cbody] = split(create->bytes);
  EXPECT_EQ(chead.substr(0, chead.find("\r\n")), "POST /v1/streams HTTP/1.1");
  EXPECT_EQ(header_of(chead, "Content-Type"), "application/json");
  EXPECT_EQ(header_of(chead, "Content-Length"), std::to_string(cbody.size()));
  EXPECT_EQ(cbody, R"({"stream":"new \"one\""})");

  const auto tail = s2::encode_check_tail(lite(), "s/1", {});
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->bytes.substr(0, tail->bytes.find("\r\n")), "GET /v1/streams/s%2F1/records/tail HTTP/1.1");

  s2::ReadRange range;
  range.seq_num = 5;
  range.count = 10;
  range.clamp = true;
  const auto read = s2::encode_read(lite(), "s", range, {});
  ASSERT_TRUE(read);
  const auto [rhead, rbody] = split(read->bytes);
  EXPECT_EQ(rhead.substr(0, rhead.find("\r\n")), "GET /v1/streams/s/records?seq_num=5&count=10&clamp=true HTTP/1.1");
  EXPECT_EQ(header_of(rhead, "Accept"), "application/protobuf");
  EXPECT_EQ(header_of(rhead, "s2-basin"), "test-basin");
  EXPECT_TRUE(rbody.empty());
  EXPECT_FALSE(read->retry_safe);  // a read: the request timeout bounds it, not stall detection
}

}  // namespace
