// SPDX-License-Identifier: Apache-2.0
// Writes prodsm-encoded AppendInput bodies, one JSON line per case, for
// sdk_decode_check.mjs to decode with the official SDK's generated codec:
//   {"name", "body_hex", "records": [{"body_hex", "headers": [[name_hex, value_hex]],
//    "timestamp"?}], "match_seq_num"?: "<decimal>", "fencing_token_hex"?}
// Cases: seeded random batches through the producer's batch path (both record formats,
// match_seq_num over the whole u64 range, UTF-8 tokens up to 36 bytes, headers), the
// generic encoder with timestamps, and edge cases (1000 records, empty bodies, commands).
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace {

namespace s2 = prodsm::s2;
using prodsm::S2Policy;

std::string hex(std::string_view bytes) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4U];
    out += kDigits[b & 0xFU];
  }
  return out;
}

struct Record {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<std::uint64_t> timestamp;
};

struct Case {
  std::string name;
  std::vector<Record> records;
  std::optional<std::uint64_t> match_seq_num;
  std::optional<std::string> fencing_token;
  S2Policy::RecordFormat format = S2Policy::RecordFormat::body;
  bool generic = false;  // through encode(AppendInputView) (timestamps) instead of the batch path
};

int emit(const Case& c) {
  std::string body;
  if (c.generic) {
    std::vector<std::vector<s2::HeaderView>> hv(c.records.size());
    std::vector<s2::AppendRecordView> views;
    for (std::size_t i = 0; i < c.records.size(); ++i) {
      for (const auto& [n, v] : c.records[i].headers) hv[i].push_back({n, v});
      views.push_back({c.records[i].timestamp, hv[i], c.records[i].body});
    }
    s2::AppendInputView input{views, c.match_seq_num, std::nullopt};
    if (c.fencing_token) input.fencing_token = *c.fencing_token;
    s2::encode(input, body);
  } else {
    std::string batch;
    std::vector<std::uint32_t> ends;
    for (const Record& r : c.records) {
      if (c.format == S2Policy::RecordFormat::body) {
        batch += r.body;
      } else {
        std::vector<s2::HeaderView> hv;
        for (const auto& [n, v] : r.headers) hv.push_back({n, v});
        const auto framed = s2::frame_record(hv, r.body);
        if (!framed) {
          std::fprintf(stderr, "%s: %s\n", c.name.c_str(), framed.error().c_str());
          return 1;
        }
        batch += *framed;
      }
      ends.push_back(static_cast<std::uint32_t>(batch.size()));
    }
    S2Policy::Stamp stamp;
    stamp.match_seq_num = c.match_seq_num;
    if (c.fencing_token) {
      stamp.fenced = true;
      stamp.token_size = static_cast<std::uint8_t>(c.fencing_token->size());
      std::copy(c.fencing_token->begin(), c.fencing_token->end(), stamp.token.begin());
    }
    const auto ok = s2::encode_batch_body(std::as_bytes(std::span<const char>(batch.data(), batch.size())), ends, stamp,
                                          c.format, body);
    if (!ok) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), ok.error().c_str());
      return 1;
    }
  }
  std::string line = "{\"name\":\"" + c.name + "\",\"body_hex\":\"" + hex(body) + "\",\"records\":[";
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    const Record& r = c.records[i];
    if (i > 0) line += ',';
    line += "{\"body_hex\":\"" + hex(r.body) + "\",\"headers\":[";
    for (std::size_t h = 0; h < r.headers.size(); ++h) {
      if (h > 0) line += ',';
      line += "[\"" + hex(r.headers[h].first) + "\",\"" + hex(r.headers[h].second) + "\"]";
    }
    line += "]";
    if (r.timestamp) line += ",\"timestamp\":\"" + std::to_string(*r.timestamp) + "\"";
    line += "}";
  }
  line += "]";
  if (c.match_seq_num) line += ",\"match_seq_num\":\"" + std::to_string(*c.match_seq_num) + "\"";
  if (c.fencing_token) line += ",\"fencing_token_hex\":\"" + hex(*c.fencing_token) + "\"";
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string random_token(std::mt19937_64& rng) {
  static const char* const kPieces[] = {"a", "Z", "9", "-", "\xc3\xbc", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
  std::string t;
  const std::size_t target = rng() % 37;
  while (true) {
    const std::string piece = kPieces[rng() % 7];
    if (t.size() + piece.size() > target) break;
    t += piece;
  }
  return t;
}

}  // namespace

int main() {
  std::mt19937_64 rng(20240601);
  int status = 0;
  for (int i = 0; i < 300; ++i) {
    Case c;
    c.name = "random_" + std::to_string(i);
    c.format = i % 2 == 0 ? S2Policy::RecordFormat::body : S2Policy::RecordFormat::framed;
    const std::size_t n = 1 + rng() % 20;
    for (std::size_t k = 0; k < n; ++k) {
      Record r;
      const std::size_t size = rng() % 10 == 0 ? rng() % 20000 : rng() % 200;
      r.body = random_bytes(rng, rng() % 7 == 0 ? 0 : size);
      if (c.format == S2Policy::RecordFormat::framed) {
        for (std::size_t h = rng() % 4; h > 0; --h) {
          r.headers.emplace_back(random_bytes(rng, 1 + rng() % 30), random_bytes(rng, rng() % 80));
        }
      }
      c.records.push_back(std::move(r));
    }
    if (rng() % 3 != 0) c.match_seq_num = rng() >> (rng() % 64);
    if (rng() % 3 == 0) c.fencing_token = random_token(rng);
    status |= emit(c);
  }
  {
    Case c{"generic_timestamps", {}, 7, "tok", S2Policy::RecordFormat::body, true};
    c.records.push_back({"a", {{"h", "v"}}, 1700000000123});
    c.records.push_back({"", {}, 0});
    c.records.push_back({"c", {}, UINT64_MAX});
    status |= emit(c);
  }
  {
    Case c{"thousand_records", {}, UINT64_MAX - 1000, std::nullopt, S2Policy::RecordFormat::body, false};
    for (int k = 0; k < 1000; ++k) c.records.push_back({std::string(static_cast<std::size_t>(k % 3), 'x'), {}, {}});
    status |= emit(c);
  }
  {
    Case c{"commands", {}, 0, std::string{}, S2Policy::RecordFormat::framed, false};
    c.records.push_back({"new-token", {{"", "fence"}}, {}});
    c.records.push_back({"", {{"", "fence"}}, {}});
    c.records.push_back({std::string("\0\0\0\0\0\0\0\x05", 8), {{"", "trim"}}, {}});
    status |= emit(c);
  }
  return status;
}
