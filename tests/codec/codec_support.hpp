// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers of the codec tests: loading the recorded server responses (tests/codec/data)
// and driving ResponseParser over them. Deterministic, no network.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prodsm/ds/http_codec.hpp"

#ifndef PRODSM_CODEC_DATA_DIR
#error "PRODSM_CODEC_DATA_DIR must name tests/codec/data"
#endif

namespace prodsm::ds::test {

/// The virtual time the hand-driven client and reader tests start at (1 s, not the
/// epoch: a forgotten `now` shows up as a time of 0).
inline const Instant kT0 = Instant{} + std::chrono::seconds{1};

/// A response built by hand: `status`, `headers`, `body`.
inline Response resp(int status, Headers headers = {}, std::string body = {}) {
  Response r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

inline std::filesystem::path data_dir() {
  return std::filesystem::path{PRODSM_CODEC_DATA_DIR};
}

/// The bytes of data/<name>.http; fails the test when the file is missing.
inline std::string load_capture(std::string_view name) {
  const auto path = data_dir() / (std::string{name} + ".http");
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing capture " << path;
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every capture name (without .http), sorted.
inline std::vector<std::string> capture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir())) {
    if (entry.path().extension() == ".http") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// True for the captures that answer a HEAD request (no body follows the headers).
inline bool is_head_capture(std::string_view name) {
  return name.starts_with("head_") || name == "fault_consumed_by_head_418";
}

inline std::span<const char> span_of(std::string_view bytes) {
  return {bytes.data(), bytes.size()};
}

/// What one parse ended with, comparable across feeding strategies.
struct Outcome {
  ResponseParser::State state = ResponseParser::State::incomplete;
  Response response;
  std::string error;  // describe() when failed
  std::size_t consumed = 0;
  bool operator==(const Outcome& o) const {
    return state == o.state && response.status == o.response.status && response.headers == o.response.headers &&
           response.body == o.response.body && response.keep_alive == o.response.keep_alive && error == o.error &&
           consumed == o.consumed;
  }
};

inline std::ostream& operator<<(std::ostream& out, const Outcome& o) {
  return out << "{state " << static_cast<int>(o.state) << ", status " << o.response.status << ", "
             << o.response.headers.size() << " headers, body " << o.response.body.size() << " bytes, keep_alive "
             << o.response.keep_alive << ", consumed " << o.consumed << ", error '" << o.error << "'}";
}

/// Parses every response in `bytes` one after the other (resetting in between), feeding
/// at most `chunk` bytes per call; at the end of the bytes the peer closes (finish_eof)
/// if a response is still incomplete. An empty input gives one failed outcome.
inline std::vector<Outcome> parse_all(std::string_view bytes, bool head, std::size_t chunk,
                                      ResponseLimits limits = {}) {
  std::vector<Outcome> out;
  ResponseParser parser(limits);
  parser.reset(head);
  std::size_t pos = 0;
  std::size_t consumed = 0;
  for (;;) {
    while (pos < bytes.size() && parser.state() == ResponseParser::State::incomplete) {
      const std::size_t n = std::min(chunk, bytes.size() - pos);
      const std::size_t used = parser.feed(span_of(bytes.substr(pos, n)));
      consumed += used;
      pos += used;
      if (used < n) break;
    }
    if (parser.state() == ResponseParser::State::incomplete) parser.finish_eof();
    Outcome o;
    o.state = parser.state();
    o.consumed = consumed;
    if (o.state == ResponseParser::State::complete) o.response = parser.take_response();
    if (o.state == ResponseParser::State::failed) o.error = parser.error().describe();
    out.push_back(std::move(o));
    if (out.back().state != ResponseParser::State::complete || pos >= bytes.size()) break;
    parser.reset(head);
    consumed = 0;
  }
  return out;
}

/// The one complete response of a capture (fed whole).
inline Response parse_capture(std::string_view name) {
  const std::string bytes = load_capture(name);
  ResponseParser parser;
  parser.reset(is_head_capture(name));
  const std::size_t used = parser.feed(span_of(bytes));
  EXPECT_EQ(parser.state(), ResponseParser::State::complete) << name << ": " << parser.error().describe();
  EXPECT_EQ(used, bytes.size()) << name << ": bytes left after the response";
  return parser.take_response();
}

/// Parses a literal response fed whole; finish_eof when still incomplete.
inline ResponseParser parse_text(std::string_view bytes, bool head = false, ResponseLimits limits = {}) {
  ResponseParser parser(limits);
  parser.reset(head);
  parser.feed(span_of(bytes));
  return parser;
}

/// The epoch and seq a sequenced request sent, taken as the response echoes them (0
/// where it echoes none or garbage): for the tests of the status rules, which are not
/// about the echo check (that has its own tests: test_classify_echo.cpp).
inline ProducerStamp as_echoed(const Response& r) {
  ProducerStamp s;
  if (auto v = r.header("Producer-Epoch")) s.epoch = parse_protocol_number(*v).value_or(0);
  if (auto v = r.header("Producer-Seq")) s.seq = parse_protocol_number(*v).value_or(0);
  return s;
}

/// ds::classify_append with `sequenced` meaning "sent what the response echoes".
inline tl::expected<DurableStreamsPolicy::Ack, Error> classify_append(const Response& r, bool sequenced) {
  return ds::classify_append(r, sequenced ? std::optional<ProducerStamp>(as_echoed(r)) : std::nullopt);
}

/// ds::classify_close with `sequenced` meaning "sent what the response echoes".
inline tl::expected<CloseResult, Error> classify_close(const Response& r, bool sequenced) {
  return ds::classify_close(r, sequenced ? std::optional<ProducerStamp>(as_echoed(r)) : std::nullopt);
}

}  // namespace prodsm::ds::test
