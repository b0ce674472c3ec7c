// SPDX-License-Identifier: Apache-2.0
// Request encoders: the exact bytes of every request head (whole strings compared),
// producer headers from a Stamp (S2), caller headers and their validation.
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

const StreamUrl kUrl{"127.0.0.1", 4437, "/s/bytes"};
const StreamUrl kDefaultPort{"streams.example.com", 80, "/a/b"};
const RequestOptions kDefault{};

RequestOptions closing() {
  RequestOptions o;
  o.keep_alive = false;
  return o;
}

// ---- create (PUT) ----------------------------------------------------------------------------

TEST(EncodeCreate, PlainCreate) {
  EXPECT_EQ(encode_create(kUrl, "application/octet-stream", {}, kDefault),
            "PUT /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 0\r\n"
            "\r\n");
}

TEST(EncodeCreate, WithTtlExpiryClosedAndConnectionClose) {
  CreateOptions create;
  create.ttl_seconds = 3600;
  create.expires_at = "2026-01-01T00:00:00Z";
  create.closed = true;
  EXPECT_EQ(encode_create(kDefaultPort, "application/json", create, closing()),
            "PUT /a/b HTTP/1.1\r\n"
            "Host: streams.example.com\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 0\r\n"
            "Stream-TTL: 3600\r\n"
            "Stream-Expires-At: 2026-01-01T00:00:00Z\r\n"
            "Stream-Closed: true\r\n"
            "Connection: close\r\n"
            "\r\n");
}

TEST(EncodeCreate, EmptyContentTypeIsOmitted) {
  EXPECT_EQ(encode_create(kUrl, "", {}, kDefault),
            "PUT /s/bytes HTTP/1.1\r\nHost: 127.0.0.1:4437\r\nContent-Length: 0\r\n\r\n");
}

// ---- append / batch (POST) ---------------------------------------------------------------------

TEST(EncodeAppend, PlainAppend) {
  EXPECT_EQ(encode_append(kUrl, "application/octet-stream", 5, {}, kDefault),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 5\r\n"
            "\r\n");
}

TEST(EncodeAppend, S2_ProducerStreamSeqAndCloseHeaders) {
  AppendOptions append;
  append.producer = ProducerHeaders{"writer-1", 2, 17};
  append.stream_seq = "0000042";
  append.close_stream = true;
  EXPECT_EQ(encode_append(kUrl, "application/json", 123, append, closing()),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 123\r\n"
            "Producer-Id: writer-1\r\n"
            "Producer-Epoch: 2\r\n"
            "Producer-Seq: 17\r\n"
            "Stream-Seq: 0000042\r\n"
            "Stream-Closed: true\r\n"
            "Connection: close\r\n"
            "\r\n");
}

TEST(EncodeAppend, LargestProtocolNumbersAndSizes) {
  AppendOptions append;
  append.producer = ProducerHeaders{"p", 9007199254740991U, 9007199254740991U};
  EXPECT_EQ(encode_append(kUrl, "text/plain", 67108864, append, kDefault),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: text/plain\r\n"
            "Content-Length: 67108864\r\n"
            "Producer-Id: p\r\n"
            "Producer-Epoch: 9007199254740991\r\n"
            "Producer-Seq: 9007199254740991\r\n"
            "\r\n");
}

TEST(EncodeBatch, S2_SequencedStampGivesProducerHeaders) {
  const DurableStreamsPolicy::Stamp stamp{true, 3, 41};
  EXPECT_EQ(encode_batch(kUrl, "application/octet-stream", 10, stamp, "w", kDefault),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 10\r\n"
            "Producer-Id: w\r\n"
            "Producer-Epoch: 3\r\n"
            "Producer-Seq: 41\r\n"
            "\r\n");
}

TEST(EncodeBatch, S2_UnsequencedStampGivesNoProducerHeaders) {
  const DurableStreamsPolicy::Stamp stamp{false, 3, 41};
  EXPECT_EQ(encode_batch(kUrl, "application/octet-stream", 10, stamp, "w", kDefault),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 10\r\n"
            "\r\n");
}

// ---- close -----------------------------------------------------------------------------------

TEST(EncodeClose, PlainCloseHasEmptyBodyAndLowercaseTrue) {
  EXPECT_EQ(encode_close(kUrl, "application/octet-stream", std::nullopt, kDefault),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 0\r\n"
            "Stream-Closed: true\r\n"
            "\r\n");
}

TEST(EncodeClose, S2_SequencedCloseWithoutContentType) {
  EXPECT_EQ(encode_close(kUrl, "", ProducerHeaders{"w", 0, 1}, closing()),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Length: 0\r\n"
            "Producer-Id: w\r\n"
            "Producer-Epoch: 0\r\n"
            "Producer-Seq: 1\r\n"
            "Stream-Closed: true\r\n"
            "Connection: close\r\n"
            "\r\n");
}

// ---- HEAD, DELETE, read ------------------------------------------------------------------------

TEST(EncodeHead, HeadRequest) {
  EXPECT_EQ(encode_head(kUrl, kDefault), "HEAD /s/bytes HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
  EXPECT_EQ(encode_head(kDefaultPort, closing()),
            "HEAD /a/b HTTP/1.1\r\nHost: streams.example.com\r\nConnection: close\r\n\r\n");
}

TEST(EncodeDelete, DeleteRequest) {
  EXPECT_EQ(encode_delete(kUrl, kDefault), "DELETE /s/bytes HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
}

TEST(EncodeRead, OffsetFromStartAndOpaqueOffsets) {
  EXPECT_EQ(encode_read(kUrl, "-1", kDefault), "GET /s/bytes?offset=-1 HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
  EXPECT_EQ(encode_read(kUrl, "0000000000000000_0000000000000027", kDefault),
            "GET /s/bytes?offset=0000000000000000_0000000000000027 HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n\r\n");
  EXPECT_EQ(encode_read(kUrl, "now", kDefault), "GET /s/bytes?offset=now HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
}

TEST(EncodeRead, OffsetIsPercentEncoded) {
  EXPECT_EQ(encode_read(kUrl, "a b&c=d/e?f#g%h+~.", kDefault),
            "GET /s/bytes?offset=a%20b%26c%3Dd%2Fe%3Ff%23g%25h%2B~. HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n\r\n");
  EXPECT_EQ(encode_read(kUrl, std::string_view("\r\n\0\xff", 4), kDefault),
            "GET /s/bytes?offset=%0D%0A%00%FF HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
  EXPECT_EQ(encode_read(kUrl, "", kDefault), "GET /s/bytes?offset= HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
}

TEST(EncodeRequests, Ipv6HostInBrackets) {
  const StreamUrl v6{"::1", 8080, "/s"};
  EXPECT_EQ(encode_head(v6, kDefault), "HEAD /s HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
  EXPECT_EQ(encode_head(StreamUrl{"::1", 80, "/s", false}, kDefault), "HEAD /s HTTP/1.1\r\nHost: [::1]\r\n\r\n");
}

TEST(EncodeRequests, NeverAsksForCompression) {
  for (const std::string& request :
       {encode_read(kUrl, "-1", kDefault), encode_head(kUrl, kDefault), encode_append(kUrl, "a/b", 1, {}, kDefault),
        encode_create(kUrl, "a/b", {}, kDefault)}) {
    EXPECT_EQ(request.find("Accept-Encoding"), std::string::npos);
    EXPECT_NE(request.find(" HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n"), std::string::npos);
  }
}

// ---- extra headers ------------------------------------------------------------------------------

TEST(EncodeRequests, ExtraHeadersFollowTheCodecsOwn) {
  RequestOptions options;
  options.keep_alive = false;
  options.extra_headers = {{"Authorization", "Bearer t0k3n"}, {"X-Trace", ""}};
  EXPECT_EQ(encode_append(kUrl, "application/octet-stream", 3, {}, options),
            "POST /s/bytes HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 3\r\n"
            "Connection: close\r\n"
            "Authorization: Bearer t0k3n\r\n"
            "X-Trace: \r\n"
            "\r\n");
  options.keep_alive = true;
  EXPECT_EQ(encode_read(kUrl, "-1", options),
            "GET /s/bytes?offset=-1 HTTP/1.1\r\n"
            "Host: 127.0.0.1:4437\r\n"
            "Authorization: Bearer t0k3n\r\n"
            "X-Trace: \r\n"
            "\r\n");
}

TEST(EncodeRequests, InvalidExtraHeadersAreNeverWritten) {
  RequestOptions options;
  options.extra_headers = {{"X-Evil", "a\r\nProducer-Seq: 0"},
                           {"Content-Length", "99"},
                           {"producer-seq", "7"},
                           {"Bad Name", "v"},
                           {"X-Ok", "fine"}};
  EXPECT_EQ(encode_delete(kUrl, options), "DELETE /s/bytes HTTP/1.1\r\nHost: 127.0.0.1:4437\r\nX-Ok: fine\r\n\r\n");
}

TEST(EncodeRequests, CodecValuesCannotInjectHeaders) {
  // Values the codec writes lose CR, LF and NUL; a hand-built path is percent-encoded.
  AppendOptions append;
  append.producer = ProducerHeaders{"w\r\nX-Injected: 1", 0, 0};
  append.stream_seq = std::string("7\r\n\0", 4);
  const StreamUrl url{"h", 80, "/a b?c#d\r\n"};
  EXPECT_EQ(encode_append(url, "text/plain\r\nX-Evil: 1", 1, append, kDefault),
            "POST /a%20b%3Fc%23d%0D%0A HTTP/1.1\r\n"
            "Host: h\r\n"
            "Content-Type: text/plainX-Evil: 1\r\n"
            "Content-Length: 1\r\n"
            "Producer-Id: wX-Injected: 1\r\n"
            "Producer-Epoch: 0\r\n"
            "Producer-Seq: 0\r\n"
            "Stream-Seq: 7\r\n"
            "\r\n");
  EXPECT_EQ(encode_head(StreamUrl{"h", 80, "", false}, kDefault), "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
}

TEST(CheckExtraHeader, AcceptsOrdinaryHeaders) {
  for (const Header& h :
       {Header{"Authorization", "Bearer x"}, Header{"X-Request-Id", "abc"}, Header{"x-empty", ""},
        Header{"X-Tab", "a\tb"}, Header{"Stream-Forked-From", "/src"}, Header{"User-Agent", "prodsm/0.1"},
        Header{"X-Utf8", "caf\xc3\xa9"}, Header{"!#$%&'*+-.^_`|~09az", "v"}}) {
    EXPECT_EQ(check_extra_header(h), std::nullopt) << h.name;
  }
}

TEST(CheckExtraHeader, RejectsCrLfInjectionAndControlCharacters) {
  for (const std::string& value : {std::string("a\r\nX-Injected: 1"), std::string("a\nb"), std::string("a\rb"),
                                   std::string("a\0b", 3), std::string("a\x7f"), std::string("\x01")}) {
    const auto why = check_extra_header(Header{"X-Test", value});
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("control character"), std::string::npos) << *why;
  }
}

TEST(CheckExtraHeader, RejectsEmptyAndNonTokenNames) {
  EXPECT_EQ(check_extra_header(Header{"", "v"}), std::optional<std::string>{"empty header name"});
  for (const char* name : {"Bad Name", "X:Y", "X\r\nY", "X(Y)", "X/Y", "caf\xc3\xa9", "X\"Y"}) {
    const auto why = check_extra_header(Header{name, "v"});
    ASSERT_TRUE(why.has_value()) << name;
    EXPECT_NE(why->find("not an HTTP token"), std::string::npos) << *why;
  }
}

TEST(CheckExtraHeader, RejectsNamesTheCodecManagesInAnyCase) {
  for (const char* name : {"Host",
                           "host",
                           "Content-Length",
                           "CONTENT-LENGTH",
                           "Transfer-Encoding",
                           "Connection",
                           "Keep-Alive",
                           "Upgrade",
                           "TE",
                           "Trailer",
                           "Expect",
                           "Accept-Encoding",
                           "Content-Type",
                           "Producer-Id",
                           "producer-epoch",
                           "Producer-Seq",
                           "Producer-Anything",
                           "Stream-Closed",
                           "stream-seq",
                           "Stream-TTL",
                           "Stream-Expires-At"}) {
    const auto why = check_extra_header(Header{name, "v"});
    ASSERT_TRUE(why.has_value()) << name;
    EXPECT_NE(why->find("managed by the codec"), std::string::npos) << *why;
  }
}

}  // namespace
}  // namespace prodsm::ds::test
