// SPDX-License-Identifier: Apache-2.0
// ds::CatchUpReader: GET from offset -1 until up to date, joining JSON arrays.
#include "prodsm/ds/reader.hpp"

#include <utility>

namespace prodsm::ds {
namespace {

constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/// Appends the elements of the JSON array text `chunk` to the array being built in
/// `out` (which holds "[" plus elements so far). The server answers a JSON read with one
/// array; its brackets are stripped, the elements kept verbatim.
bool append_json_elements(std::string& out, std::string_view chunk) {
  while (!chunk.empty() && is_space(chunk.front())) chunk.remove_prefix(1);
  while (!chunk.empty() && is_space(chunk.back())) chunk.remove_suffix(1);
  if (chunk.size() < 2 || chunk.front() != '[' || chunk.back() != ']') return false;
  const std::string_view inner = chunk.substr(1, chunk.size() - 2);
  bool blank = true;
  for (const char c : inner) blank = blank && is_space(c);
  if (blank) return true;
  if (out.size() > 1) out += ',';
  out.append(inner);
  return true;
}

Error read_error(std::string message) {
  return make_error(ErrorCode::protocol_error, Certainty::definite, false, std::move(message));
}

}  // namespace

CatchUpReader::CatchUpReader(StreamUrl url, bool json, std::size_t max_bytes, RequestOptions options)
    : url_{std::move(url)}, json_{json}, max_bytes_{max_bytes}, options_{std::move(options)} {
  if (json_) contents_.body = "[";
}

http::Request CatchUpReader::next_request() {
  ++contents_.reads;
  http::Request r;
  r.bytes = encode_read(url_, offset_, options_);
  r.retry_safe = true;
  return r;
}

std::optional<ReadStreamResult> CatchUpReader::handle(tl::expected<http::Response, Error> outcome) {
  if (!outcome) return tl::unexpected(std::move(outcome.error()));
  auto read = classify_read(*outcome);
  if (!read) return tl::unexpected(std::move(read.error()));
  const std::size_t size_before = contents_.body.size();
  if (json_) {
    if (!append_json_elements(contents_.body, read->body)) return tl::unexpected(read_error("JSON read did not return a JSON array"));
  } else {
    contents_.body += read->body;
  }
  if (contents_.body.size() > max_bytes_) {
    return tl::unexpected(read_error("stream larger than the read limit of " + std::to_string(max_bytes_) + " bytes"));
  }
  const bool progressed = read->next_offset != offset_;
  if (!progressed && contents_.body.size() != size_before) {
    // Data that does not move the offset would be read twice: the contents would come
    // out duplicated.
    return tl::unexpected(
        read_error("the server returned data without advancing Stream-Next-Offset (" + offset_ + ")"));
  }
  offset_ = read->next_offset;
  contents_.next_offset = read->next_offset;
  contents_.closed = read->closed;
  if (read->up_to_date || read->closed || !progressed || offset_.empty()) {
    if (json_) contents_.body += ']';
    return std::move(contents_);
  }
  return std::nullopt;
}

}  // namespace prodsm::ds
