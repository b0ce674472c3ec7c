// SPDX-License-Identifier: Apache-2.0
#pragma once
// The test driver of ds::StreamReader on hand-built responses and virtual time, shared by
// test_reader.cpp (pages, data, bounds) and test_reader_retries.cpp (retries, E4).
#include <algorithm>
#include <string>
#include <vector>

#include "codec_support.hpp"
#include "prodsm/ds/reader.hpp"

namespace prodsm::ds::test {

using namespace std::chrono_literals;

/// Drives a StreamReader as an adapter would: responses come through the body sink
/// (on_head, on_body in pieces) and then as the outcome.
struct Drive {
  explicit Drive(ReadOptions o = {}, std::string path = "/s")
      : reader{StreamReader::create(StreamUrl{"h", 80, std::move(path), false}, std::move(o), kT0).value()} {}

  StreamReader reader;
  Instant now = kT0;
  std::string out;  // bytes handed on (JSON: elements joined by '|')
  std::vector<std::string> requested_offsets;

  void take_output() {
    for (auto d : reader.output()) {
      if (options_json && !out.empty()) out += '|';
      out += d;
    }
  }
  bool options_json = false;

  /// The next request must come now; returns its target's offset.
  std::string request() {
    auto r = reader.poll_request(now);
    EXPECT_TRUE(r.has_value()) << "no request at t=" << (now - kT0).count();
    if (!r) return {};
    EXPECT_FALSE(r->retry_safe) << "a read is bounded by the request timeout, not by stall detection";
    const auto at = r->bytes.find("offset=");
    const auto end = r->bytes.find(' ', at);
    std::string offset = r->bytes.substr(at + 7, end - at - 7);
    requested_offsets.push_back(offset);
    return offset;
  }

  static Response head(int status, Headers h) {
    Response r;
    r.status = status;
    r.headers = std::move(h);
    return r;
  }

  /// A complete response, its body streamed in `pieces`.
  void respond(int status, Headers h, std::vector<std::string> pieces) {
    Response r = head(status, std::move(h));
    if (reader.on_head(r)) {
      r.body_streamed = true;
      for (const auto& p : pieces) {
        const bool ok = reader.on_body(std::span<const char>(p.data(), p.size()));
        take_output();
        if (!ok) break;
      }
    } else {
      for (const auto& p : pieces) r.body += p;
    }
    reader.on_outcome(now, std::move(r));
    take_output();
  }
  /// 200 with the body in one piece.
  void ok(std::string next, std::string body, bool up_to_date = true) {
    Headers h{{"Stream-Next-Offset", std::move(next)}};
    if (up_to_date) h.push_back({"Stream-Up-To-Date", "true"});
    respond(200, std::move(h), {std::move(body)});
  }
  /// A response that breaks off after `pieces` were streamed.
  void broken(std::string next, std::vector<std::string> pieces, Error e) {
    Response r = head(200, {{"Stream-Next-Offset", std::move(next)}});
    ASSERT_TRUE(reader.on_head(r));
    for (const auto& p : pieces) {
      reader.on_body(std::span<const char>(p.data(), p.size()));
      take_output();
    }
    reader.on_outcome(now, tl::unexpected(std::move(e)));
  }
  void transport(Error e) { reader.on_outcome(now, tl::unexpected(std::move(e))); }
  /// The read finished ok.
  bool ok() const { return reader.result() && reader.result()->has_value(); }
  /// The read's error; a stand-in naming why there is none while it has not failed.
  const ReadError& error() const {
    static const ReadError kNone{make_error(ErrorCode::internal, Certainty::definite, false, "the read did not fail")};
    return reader.result() && !reader.result()->has_value() ? reader.result()->error() : kNone;
  }
};

inline Error lost() {
  return make_error(ErrorCode::connection_lost, Certainty::indefinite, true, "reset");
}

}  // namespace prodsm::ds::test
