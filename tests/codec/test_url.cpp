// SPDX-License-Identifier: Apache-2.0
// StreamUrl::parse, authority() and to_string(): plain http only, host required, port
// 1..65535, path defaulting to "/", no query, fragment, user info, spaces or controls.
#include "codec_support.hpp"

namespace prodsm::ds::test {
namespace {

StreamUrl parse_ok(std::string_view text) {
  auto url = StreamUrl::parse(text);
  EXPECT_TRUE(url.has_value()) << text << ": " << (url ? "" : url.error());
  return url.value_or(StreamUrl{});
}

std::string parse_error(std::string_view text) {
  auto url = StreamUrl::parse(text);
  EXPECT_FALSE(url.has_value()) << text;
  return url ? std::string{} : url.error();
}

TEST(StreamUrlParse, HostPortAndPath) {
  const StreamUrl url = parse_ok("http://127.0.0.1:4437/s/bytes");
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, 4437);
  EXPECT_EQ(url.path, "/s/bytes");
  EXPECT_EQ(url.authority(), "127.0.0.1:4437");
  EXPECT_EQ(url.to_string(), "http://127.0.0.1:4437/s/bytes");
}

TEST(StreamUrlParse, DefaultsToPort80AndPathSlash) {
  const StreamUrl url = parse_ok("http://streams.example.com");
  EXPECT_EQ(url, (StreamUrl{"streams.example.com", 80, "/", false}));
  EXPECT_EQ(url.authority(), "streams.example.com");
  EXPECT_EQ(url.to_string(), "http://streams.example.com/");
  EXPECT_EQ(parse_ok("http://h:80/x").authority(), "h") << "port 80 is implied";
  EXPECT_EQ(parse_ok("http://h/").path, "/");
}

TEST(StreamUrlParse, PathIsKeptAsGiven) {
  EXPECT_EQ(parse_ok("http://h/a/b%20c/~d_e-f.g//").path, "/a/b%20c/~d_e-f.g//");
  EXPECT_EQ(parse_ok("HTTP://h/x").path, "/x") << "the scheme is case-insensitive";
}

TEST(StreamUrlParse, PortRange) {
  EXPECT_EQ(parse_ok("http://h:1/").port, 1);
  EXPECT_EQ(parse_ok("http://h:65535/").port, 65535);
  EXPECT_EQ(parse_ok("http://h:08080/").port, 8080);
  for (const char* bad : {"http://h:0/", "http://h:65536/", "http://h:99999/", "http://h:123456/", "http://h:-1/",
                          "http://h:12a/", "http://h:/", "http://h:+80/", "http://h:1:2/"}) {
    EXPECT_NE(parse_error(bad).find("bad port"), std::string::npos) << bad;
  }
}

TEST(StreamUrlParse, Ipv6LiteralInBrackets) {
  const StreamUrl url = parse_ok("http://[::1]:8080/s");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 8080);
  EXPECT_EQ(url.authority(), "[::1]:8080");
  EXPECT_EQ(url.to_string(), "http://[::1]:8080/s");
  const StreamUrl plain = parse_ok("http://[2001:db8::7]");
  EXPECT_EQ(plain.host, "2001:db8::7");
  EXPECT_EQ(plain.authority(), "[2001:db8::7]");
  EXPECT_EQ(parse_ok("http://[::ffff:1.2.3.4]/").host, "::ffff:1.2.3.4");
  EXPECT_NE(parse_error("http://[::1/").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_error("http://[]/").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_error("http://[zz::1]/").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_error("http://[1234]/").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_error("http://[::1]x/").find("bad host"), std::string::npos);
  EXPECT_NE(parse_error("http://[::1]:0/").find("bad port"), std::string::npos);
}

TEST(StreamUrlParse, OnlyHttpAndHttps) {
  EXPECT_EQ(parse_error("ftp://h/s"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(parse_error("h/s"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(parse_error("http:/h/s"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(parse_error(""), "empty URL");
}

// https:// selects TLS and port 443 by default; the default port is left out of the
// authority and the printed URL (the Host header), another one is kept.
TEST(StreamUrlParse, HttpsSelectsTlsAndPort443) {
  const StreamUrl u = parse_ok("https://streams.example.com/v1/s");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.authority(), "streams.example.com");
  EXPECT_EQ(u.to_string(), "https://streams.example.com/v1/s");
  const StreamUrl other = parse_ok("HTTPS://h:8443/s");
  EXPECT_TRUE(other.tls);
  EXPECT_EQ(other.authority(), "h:8443");
  EXPECT_EQ(parse_ok("https://h:80/s").authority(), "h:80");
  EXPECT_FALSE(parse_ok("http://h/s").tls);
  EXPECT_EQ(parse_ok("http://h:443/s").authority(), "h:443");
}

TEST(StreamUrlParse, HostRequired) {
  EXPECT_EQ(parse_error("http://"), "missing host");
  EXPECT_EQ(parse_error("http:///s"), "missing host");
  EXPECT_EQ(parse_error("http://:8080/s"), "missing host");
  EXPECT_NE(parse_error("http://h!st/").find("bad host"), std::string::npos);
  EXPECT_NE(parse_error("http://user:pw@h/").find("user info"), std::string::npos);
}

TEST(StreamUrlParse, RejectsQueryAndFragment) {
  for (const char* bad : {"http://h/s?offset=1", "http://h/s#frag", "http://h?x", "http://h/#"}) {
    EXPECT_EQ(parse_error(bad), "URL contains a query or fragment") << bad;
  }
}

TEST(StreamUrlParse, RejectsSpacesControlsAndNonAscii) {
  for (const std::string_view bad :
       {std::string_view{"http://h/a b"}, std::string_view{"http://h/a\r\nHost: evil"},
        std::string_view{"http://h/a\tb"}, std::string_view{"http://h/\x7f"}, std::string_view{"http://h/caf\xc3\xa9"},
        std::string_view{" http://h/"}, std::string_view{"http://h/a\0b", 12}}) {
    EXPECT_NE(parse_error(bad).find("space, control or non-ASCII character"), std::string::npos);
  }
  EXPECT_EQ(parse_error("http://h/a b"), "URL contains a space, control or non-ASCII character at byte 10");
}

}  // namespace
}  // namespace prodsm::ds::test
