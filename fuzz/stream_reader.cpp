// SPDX-License-Identifier: Apache-2.0
// Fuzz target: ds::StreamReader (catch-up reads) against a model server the input drives.
// The input chooses a stream (bytes or JSON messages), the read's options, and for every
// GET the reader makes what the "server" does: an honest page of 1..4 messages, its body
// streamed in pieces of any size; a page that breaks off after any byte (a dropped
// connection, retried and re-read from the same offset, perhaps in smaller pages); a
// 5xx/429/408; a lost connection before the head; or, in hostile runs, any status,
// headers and body. Time advances to each deadline the reader asks for.
//
// Invariants (a violation traps):
//  - every read ends (R3: max_requests, attempts, the read's timeout);
//  - honest runs: what was handed on is a prefix of the stream, in order, never doubled —
//    also across broken responses and re-reads — and a read that ends ok handed on the
//    whole stream exactly, ending at its last offset, up to date;
//  - every run: a JSON-mode element is one valid JSON text (nlohmann::json, an
//    independent parser; a lone surrogate escape is accepted as the reader documents),
//    and no more than max_bytes is handed on.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "prodsm/ds/reader.hpp"

namespace {

using prodsm::Duration;
using prodsm::Instant;
using prodsm::ds::ReadOptions;
using prodsm::ds::StreamReader;
using prodsm::http::Headers;
using prodsm::http::Response;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "stream_reader invariant violated: %s\n", what);
  __builtin_trap();
}

/// The model server's offset of message `k` (opaque to the reader; "-1" is the start).
std::string offset_of(std::size_t k) {
  char text[16];
  std::snprintf(text, sizeof text, "p%08zu", k);
  return text;
}

/// The message index an offset names; npos for one the model never gave.
std::size_t index_of(const std::string& offset, std::size_t messages) {
  if (offset == "-1") return 0;
  if (offset.size() != 9 || offset[0] != 'p') return std::string::npos;
  std::size_t k = 0;
  for (std::size_t i = 1; i < offset.size(); ++i) {
    if (offset[i] < '0' || offset[i] > '9') return std::string::npos;
    k = k * 10 + static_cast<std::size_t>(offset[i] - '0');
  }
  return k <= messages ? k : std::string::npos;
}

/// The offset a GET asks for (its target's `offset=` parameter).
std::string requested_offset(const std::string& request) {
  const auto at = request.find("offset=");
  if (at == std::string::npos) return {};
  const auto end = request.find_first_of(" &", at);
  return request.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
}

/// A JSON text the reader may hand on: valid JSON, or (documented) a string holding a
/// lone surrogate escape, which RFC 8259's grammar allows.
bool acceptable_json(std::string_view text) {
  if (nlohmann::json::accept(text)) return true;
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("\\ud8") != std::string::npos || lower.find("\\ud9") != std::string::npos ||
         lower.find("\\uda") != std::string::npos || lower.find("\\udb") != std::string::npos ||
         lower.find("\\udc") != std::string::npos || lower.find("\\udd") != std::string::npos ||
         lower.find("\\ude") != std::string::npos || lower.find("\\udf") != std::string::npos;
}

/// One JSON message, distinct per index.
std::string json_message(FuzzedDataProvider& in, std::size_t i) {
  const std::string n = std::to_string(i);
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return n;
    case 1: return "\"s" + n + "\"";
    case 2: return "{\"k\":" + n + ",\"v\":[true,null]}";
    case 3: return "[" + n + ",\"x,]\"]";
    case 4: return "\"esc\\\"" + n + "\\u00e9\"";
    default: return "-" + n + ".5e1";
  }
}

struct Run {
  explicit Run(FuzzedDataProvider& input) : in{input} {}

  FuzzedDataProvider& in;
  bool json = false;
  bool hostile = false;
  std::vector<std::string> messages;
  ReadOptions options;
  std::string got_bytes;              // bytes mode: what was handed on
  std::vector<std::string> got_json;  // JSON mode: the elements handed on
  std::uint64_t handed_bytes = 0;

  void take(const StreamReader& reader) {
    for (const std::string_view d : reader.output()) {
      handed_bytes += d.size();
      if (reader.json()) {
        if (!acceptable_json(d)) violated("a JSON element that is not one JSON text");
        got_json.emplace_back(d);
      } else {
        got_bytes.append(d);
      }
    }
    if (handed_bytes > options.max_bytes) violated("more than max_bytes handed on");
  }

  /// The body of the page messages [from, to).
  [[nodiscard]] std::string page_body(std::size_t from, std::size_t to) const {
    std::string body = json ? "[" : "";
    for (std::size_t i = from; i < to; ++i) {
      if (json && i > from) body += ',';
      body += messages[i];
    }
    if (json) body += ']';
    return body;
  }

  /// A head and a body streamed in pieces through the reader's sink, then the outcome;
  /// `break_after` (< body size) drops the connection after that many body bytes.
  void respond(StreamReader& reader, Instant now, int status, Headers headers, const std::string& body,
               std::optional<std::size_t> break_after) {
    Response r;
    r.status = status;
    r.headers = std::move(headers);
    if (!reader.on_head(r)) {
      if (break_after) {
        reader.on_outcome(now, tl::unexpected(lost()));
        return;
      }
      r.body = body;
      reader.on_outcome(now, std::move(r));
      return;
    }
    r.body_streamed = true;
    const std::size_t end = break_after ? *break_after : body.size();
    std::size_t at = 0;
    bool abandoned = false;
    while (at < end && !abandoned) {
      const std::size_t piece = std::min(end - at, in.ConsumeIntegralInRange<std::size_t>(1, 64));
      abandoned = !reader.on_body(std::span<const char>(body.data() + at, piece));
      take(reader);
      at += piece;
    }
    if (break_after) {
      reader.on_outcome(now, tl::unexpected(lost()));
    } else {
      reader.on_outcome(now, std::move(r));
    }
  }

  static prodsm::Error lost() {
    return prodsm::make_error(prodsm::ErrorCode::connection_lost, prodsm::Certainty::indefinite, true,
                              "the connection broke off (fuzz)");
  }

  /// What the server does with the GET for `offset`.
  void serve(StreamReader& reader, Instant now, const std::string& offset) {
    const std::size_t from = index_of(offset, messages.size());
    const int action = in.ConsumeIntegralInRange<int>(0, hostile ? 7 : 5);
    if (from == std::string::npos && action < 6) {  // an offset the model never gave
      respond(reader, now, 400, {{"Content-Type", "text/plain"}}, "unknown offset", std::nullopt);
      return;
    }
    const std::size_t to = std::min(messages.size(), from + in.ConsumeIntegralInRange<std::size_t>(1, 4));
    Headers honest{{"Stream-Next-Offset", offset_of(to)},
                   {"Content-Type", json ? "application/json" : "application/octet-stream"}};
    if (to == messages.size()) honest.push_back({"Stream-Up-To-Date", "true"});
    const std::string body = page_body(from, to);
    switch (action) {
      case 0:
      case 1: respond(reader, now, 200, honest, body, std::nullopt); return;
      case 2:  // the connection drops after any byte of the body (or before it)
        respond(reader, now, 200, honest, body,
                body.empty() ? 0 : in.ConsumeIntegralInRange<std::size_t>(0, body.size() - 1));
        return;
      case 3: {
        Headers h{{"Content-Type", "text/plain"}};
        if (in.ConsumeBool()) h.push_back({"Retry-After", in.ConsumeBool() ? "0" : "1"});
        respond(reader, now, in.PickValueInArray({503, 500, 429, 408}), h, "busy", std::nullopt);
        return;
      }
      case 4:
        reader.on_outcome(now, tl::unexpected(lost()));  // before the head
        return;
      case 5: {  // an honest page in one piece, after a pause
        respond(reader, now, 200, honest, body, std::nullopt);
        return;
      }
      default: {  // hostile: any status, headers and body
        Headers h;
        const int fields = in.ConsumeIntegralInRange<int>(0, 4);
        for (int i = 0; i < fields; ++i) {
          h.push_back({in.PickValueInArray<std::string>({"Stream-Next-Offset", "Stream-Up-To-Date", "Stream-Closed",
                                                         "Content-Type", "Content-Encoding", "Retry-After"}),
                       in.ConsumeRandomLengthString(16)});
        }
        const int status = in.PickValueInArray({200, 200, 200, 204, 206, 301, 404, 409, 410, 503});
        const std::string junk = in.ConsumeRandomLengthString(96);
        std::optional<std::size_t> cut;
        if (in.ConsumeBool() && !junk.empty()) cut = in.ConsumeIntegralInRange<std::size_t>(0, junk.size() - 1);
        respond(reader, now, status, std::move(h), junk, cut);
        return;
      }
    }
  }

  void check_honest_outcome(const StreamReader& reader) const {
    // Whatever happened, what was handed on is the stream's beginning, in order, once.
    if (json) {
      if (got_json.size() > messages.size() || !std::equal(got_json.begin(), got_json.end(), messages.begin())) {
        violated("JSON elements handed on are not a prefix of the stream");
      }
    } else {
      std::string all;
      for (const auto& m : messages) all += m;
      if (all.compare(0, got_bytes.size(), got_bytes) != 0 || got_bytes.size() > all.size()) {
        violated("bytes handed on are not a prefix of the stream");
      }
      if (reader.result()->has_value() && got_bytes != all) violated("a read that ended ok missed data");
    }
    if (!reader.result()->has_value()) return;
    const auto& summary = **reader.result();
    if (json && got_json.size() != messages.size()) violated("a read that ended ok missed elements");
    if (summary.next_offset != offset_of(messages.size())) violated("a read that ended ok ended at another offset");
    if (!summary.up_to_date) violated("a read that ended ok was not up to date");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Run run(in);
  run.json = in.ConsumeBool();
  run.hostile = in.ConsumeBool();
  const auto count = in.ConsumeIntegralInRange<std::size_t>(0, 12);
  for (std::size_t i = 0; i < count; ++i) {
    run.messages.push_back(run.json ? json_message(in, i) : in.ConsumeRandomLengthString(24));
  }
  ReadOptions& o = run.options;
  // JSON mode by option, or by the stream's Content-Type (json_from_content_type).
  o.json = run.json && in.ConsumeBool();
  o.json_from_content_type = true;
  o.retry.max_attempts = in.ConsumeIntegralInRange<std::uint32_t>(1, 6);
  o.retry.backoff_initial_ns =
      std::chrono::microseconds{in.ConsumeIntegralInRange<int>(1, 20'000)};  // E4: at least 1 us
  o.retry.backoff_max_ns = std::chrono::milliseconds{50};
  o.max_requests = in.ConsumeIntegralInRange<std::uint64_t>(1, 64);
  o.max_bytes = in.ConsumeIntegralInRange<std::uint64_t>(1, 1 << 12);
  o.max_empty_responses = in.ConsumeIntegralInRange<std::uint32_t>(0, 4);
  o.timeout_ns = std::chrono::seconds{in.ConsumeIntegralInRange<int>(1, 30)};
  if (auto why = o.validate()) {
    std::fprintf(stderr, "options the target thought valid: %s\n", why->c_str());
    __builtin_trap();
  }

  Instant now{};
  auto made = StreamReader::create(prodsm::ds::StreamUrl{"h", 80, "/s", false}, o, now);
  if (!made) violated("valid options refused");
  StreamReader reader = std::move(*made);
  // Every step makes a request or reaches a deadline; max_requests and the timeout bound both.
  const std::uint64_t max_steps = 4 * o.max_requests + 64;
  for (std::uint64_t step = 0; step < max_steps && !reader.finished(); ++step) {
    now += std::chrono::milliseconds{in.ConsumeIntegralInRange<int>(0, 3)};
    auto request = reader.poll_request(now);
    run.take(reader);
    if (!request) {
      if (reader.finished()) break;  // e.g. max_requests reached
      const auto due = reader.next_deadline();
      if (!due) violated("an unfinished read with no request and no deadline");
      now = std::max(now, *due);
      reader.handle_timeout(now);
      run.take(reader);
      continue;
    }
    run.serve(reader, now, requested_offset(request->bytes));
    run.take(reader);
  }
  if (!reader.finished()) violated("the read did not end within its bounds");
  if (!run.hostile) run.check_honest_outcome(reader);
  return 0;
}
