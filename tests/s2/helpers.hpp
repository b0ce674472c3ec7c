// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small helpers of the S2 codec tests: hex, byte views, responses, files.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "prodsm/http/message.hpp"
#include "prodsm/http/response_parser.hpp"

namespace s2test {

/// Bytes from hex ("0a06" -> "\x0a\x06"); spaces ignored.
inline std::string unhex(std::string_view hex) {
  std::string out;
  int high = -1;
  for (const char c : hex) {
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) continue;
    if (high < 0) {
      high = v;
    } else {
      out += static_cast<char>(high * 16 + v);
      high = -1;
    }
  }
  return out;
}

/// Lower-case hex of `bytes`.
inline std::string hex(std::string_view bytes) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4U];
    out += kDigits[b & 0xFU];
  }
  return out;
}

/// `text` as the byte span the core takes.
inline std::span<const std::byte> as_bytes(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

/// A response built by hand.
inline prodsm::http::Response response(int status, std::string body = {}, prodsm::http::Headers headers = {}) {
  prodsm::http::Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

/// A response parsed from raw HTTP/1.1 bytes by prodsm's parser (the path a real
/// response takes).
inline prodsm::http::Response parse(std::string_view raw) {
  prodsm::http::ResponseParser parser{prodsm::http::ResponseLimits{}};
  parser.reset(false);
  const std::size_t used = parser.feed(std::span<const char>(raw.data(), raw.size()));
  EXPECT_EQ(used, raw.size());
  if (parser.state() != prodsm::http::ResponseParser::State::complete) parser.finish_eof();
  EXPECT_EQ(parser.state(), prodsm::http::ResponseParser::State::complete);
  return parser.take_response();
}

/// A whole file's bytes.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The request's head (up to and including the blank line) and body.
inline std::pair<std::string, std::string> split(const std::string& request) {
  const std::size_t end = request.find("\r\n\r\n");
  if (end == std::string::npos) return {request, {}};
  return {request.substr(0, end + 4), request.substr(end + 4)};
}

/// The value of header `name` (exact case) in a request head, or "<absent>".
inline std::string header_of(const std::string& head, std::string_view name) {
  const std::string key = "\r\n" + std::string{name} + ": ";
  const std::size_t at = head.find(key);
  if (at == std::string::npos) return "<absent>";
  const std::size_t from = at + key.size();
  return head.substr(from, head.find("\r\n", from) - from);
}

}  // namespace s2test
