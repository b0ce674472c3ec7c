// SPDX-License-Identifier: Apache-2.0
// S2 requests: the exact HTTP/1.1 requests of append, create stream, check tail and
// read, and the checks each makes first (endpoints and names: endpoint.cpp).
#include <array>

#include "prodsm/http/detail/text.hpp"
#include "prodsm/s2/detail/protobuf.hpp"
#include "prodsm/s2/http_codec.hpp"
#include "prodsm/s2/records.hpp"

namespace prodsm::s2 {
namespace text = http::detail;
namespace {

constexpr std::string_view kProtobuf = "application/protobuf";

bool is_unreserved(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

/// Appends a header value the codec writes, dropping CR, LF and NUL (no header
/// injection whatever the input; the values were checked before).
void append_header(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  for (const char c : value) {
    if (c != '\r' && c != '\n' && c != '\0') out += c;
  }
  out += "\r\n";
}

/// The base path, written so it cannot break the request line.
void append_base_path(std::string& out, std::string_view path) {
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7F || c == '?' || c == '#') {
      text::append_percent_encoded_byte(out, byte);
    } else {
      out += c;
    }
  }
}

/// `{base}/streams/{stream, percent-encoded}` — every byte but the unreserved ones
/// encoded, as the Rust SDK's urlencoding::encode.
void append_stream_path(std::string& out, const Endpoint& endpoint, std::string_view stream) {
  append_base_path(out, endpoint.base_path);
  out += "/streams/";
  for (const char c : stream) {
    if (is_unreserved(c)) {
      out += c;
    } else {
      text::append_percent_encoded_byte(out, static_cast<unsigned char>(c));
    }
  }
}

/// The request line's end and the headers every request carries first.
void append_common(std::string& out, const Endpoint& endpoint) {
  out += " HTTP/1.1\r\n";
  append_header(out, "Host", endpoint.authority());
}

/// Authorization, s2-basin, Connection, the valid extra headers, and the blank line.
void append_end(std::string& out, const Endpoint& endpoint, const RequestOptions& options) {
  if (!options.access_token.empty()) {
    out += "Authorization: Bearer ";
    out += options.access_token;
    out += "\r\n";
  }
  if (endpoint.basin_header) append_header(out, "s2-basin", endpoint.basin);
  if (!options.keep_alive) out += "Connection: close\r\n";
  for (const http::Header& h : options.extra_headers) {
    if (check_extra_header(h)) continue;
    append_header(out, h.name, h.value);
  }
  out += "\r\n";
}

void append_content_length(std::string& out, std::size_t n) {
  out += "Content-Length: ";
  text::append_decimal(out, n);
  out += "\r\n";
}

/// The checks every encoder makes before writing anything.
std::optional<std::string> check_basics(std::string_view stream, const RequestOptions& options) {
  if (auto why = check_stream_name(stream)) return why;
  if (!options.access_token.empty()) {
    if (auto why = check_access_token(options.access_token)) return why;
  }
  return std::nullopt;
}

/// Runs an encoder with the checks; an allocation failure is an error, never a throw.
template <typename Encode>
tl::expected<http::Request, std::string> guarded(std::string_view stream, const RequestOptions& options,
                                                 Encode&& encode) noexcept {
  try {
    if (auto why = check_basics(stream, options)) return tl::unexpected(std::move(*why));
    auto request = encode();
    if (request) request->header_rule = &check_provided_header;  // a header provider's headers
    return request;
  } catch (...) {
    return tl::unexpected(std::string{"out of memory while encoding the request"});
  }
}

/// The head of a POST of `content_type` with a `body_bytes`-byte body.
void append_post_head(std::string& out, const Endpoint& endpoint, std::string_view stream, bool records,
                      std::string_view content_type, std::size_t body_bytes, const RequestOptions& options) {
  out += "POST ";
  if (records) {
    append_stream_path(out, endpoint, stream);
    out += "/records";
  } else {
    append_base_path(out, endpoint.base_path);
    out += "/streams";
  }
  append_common(out, endpoint);
  append_header(out, "Content-Type", content_type);
  append_header(out, "Accept", records ? kProtobuf : std::string_view{"application/json"});
  append_content_length(out, body_bytes);
  append_end(out, endpoint, options);
}

/// `"text"` as a JSON string (UTF-8 kept; quote, backslash and controls escaped).
void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b < 0x20) {
      constexpr std::string_view kHex = "0123456789abcdef";
      out += "\\u00";
      out += kHex[b >> 4U];
      out += kHex[b & 0xFU];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

// ---- checks ------------------------------------------------------------------------

std::optional<std::string> check_request_target(const Endpoint& endpoint, std::string_view stream,
                                                const RequestOptions& options) {
  if (endpoint.host.empty()) return std::string{"endpoint has no host"};
  for (const char c : endpoint.host) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7F || c == '/' || c == '?' || c == '#' || c == '@') {
      return std::string{"endpoint host contains a byte not allowed in a host name"};
    }
  }
  if (!endpoint.base_path.empty() && endpoint.base_path.front() != '/') {
    return std::string{"endpoint base path must be empty or begin with '/'"};
  }
  if (auto why = check_basin_name(endpoint.basin)) return why;
  if (auto why = check_basics(stream, options)) return why;
  for (const http::Header& h : options.extra_headers) {
    if (auto why = check_extra_header(h)) return why;
  }
  return std::nullopt;
}

// ---- requests ------------------------------------------------------------------------

tl::expected<http::Request, std::string> encode_append(const Endpoint& endpoint, std::string_view stream,
                                                       const AppendInputView& input, const RequestOptions& options) {
  return guarded(stream, options, [&]() -> tl::expected<http::Request, std::string> {
    http::Request request;
    const std::size_t body_bytes = encoded_size(input);
    request.bytes.reserve(320 + endpoint.host.size() + stream.size() * 3 + body_bytes);
    append_post_head(request.bytes, endpoint, stream, true, kProtobuf, body_bytes, options);
    encode(input, request.bytes);
    request.retry_safe = input.match_seq_num.has_value();
    return request;
  });
}

namespace {

/// The record `i` of a batch as an s2.proto AppendRecord, sized and written without
/// any allocation: body-only records directly, framed records parsed on the fly.
struct BatchRecords {
  std::string_view body;
  std::span<const std::uint32_t> ends;
  S2Policy::RecordFormat format;

  std::string_view bytes(std::size_t i) const noexcept {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return body.substr(begin, ends[i] - begin);
  }
  /// Size of record i's AppendRecord message; nullopt for a malformed framed record.
  std::optional<std::size_t> size(std::size_t i) const noexcept {
    const std::string_view b = bytes(i);
    if (format == S2Policy::RecordFormat::body) return b.empty() ? 0 : detail::length_field_size(3, b.size());
    const auto framed = FramedRecord::parse(b);
    if (!framed) return std::nullopt;
    std::size_t n = framed->body().empty() ? 0 : detail::length_field_size(3, framed->body().size());
    framed->for_each_header([&](HeaderView h) {
      std::size_t hn = 0;
      if (!h.name.empty()) hn += detail::length_field_size(1, h.name.size());
      if (!h.value.empty()) hn += detail::length_field_size(2, h.value.size());
      n += detail::length_field_size(2, hn);
    });
    return n;
  }
  void write(std::size_t i, std::string& out) const {
    const std::string_view b = bytes(i);
    if (format == S2Policy::RecordFormat::body) {
      if (!b.empty()) detail::append_length_field(out, 3, b);
      return;
    }
    const auto framed = FramedRecord::parse(b);  // checked by size()
    framed->for_each_header([&](HeaderView h) {
      std::size_t hn = 0;
      if (!h.name.empty()) hn += detail::length_field_size(1, h.name.size());
      if (!h.value.empty()) hn += detail::length_field_size(2, h.value.size());
      detail::append_length_prefix(out, 2, hn);
      if (!h.name.empty()) detail::append_length_field(out, 1, h.name);
      if (!h.value.empty()) detail::append_length_field(out, 2, h.value);
    });
    if (!framed->body().empty()) detail::append_length_field(out, 3, framed->body());
  }
};

/// Checks the batch's shape and returns the AppendInput's size.
tl::expected<std::size_t, std::string> batch_size(const BatchRecords& records, const S2Policy::Stamp& stamp) {
  if (records.ends.empty()) return tl::unexpected(std::string{"a batch needs at least one record"});
  std::size_t previous = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < records.ends.size(); ++i) {
    if (records.ends[i] < previous || records.ends[i] > records.body.size()) {
      return tl::unexpected("record_ends[" + std::to_string(i) + "] is not within the body or goes backwards");
    }
    previous = records.ends[i];
    const auto size = records.size(i);
    if (!size) return tl::unexpected("record " + std::to_string(i) + " is not a valid framed record");
    n += detail::length_field_size(1, *size);
  }
  if (previous != records.body.size())
    return tl::unexpected(std::string{"the last record does not end at the body's end"});
  if (stamp.match_seq_num) n += detail::varint_field_size(2, *stamp.match_seq_num);
  if (stamp.fenced) n += detail::length_field_size(3, stamp.fencing_token().size());
  return n;
}

void write_batch(const BatchRecords& records, const S2Policy::Stamp& stamp, std::string& out) {
  for (std::size_t i = 0; i < records.ends.size(); ++i) {
    detail::append_length_prefix(out, 1, *records.size(i));
    records.write(i, out);
  }
  if (stamp.match_seq_num) detail::append_varint_field(out, 2, *stamp.match_seq_num);
  if (stamp.fenced) detail::append_length_field(out, 3, stamp.fencing_token());
}

}  // namespace

tl::expected<void, std::string> encode_batch_body(std::span<const std::byte> body,
                                                  std::span<const std::uint32_t> record_ends,
                                                  const S2Policy::Stamp& stamp, S2Policy::RecordFormat format,
                                                  std::string& out) {
  try {
    const BatchRecords records{{reinterpret_cast<const char*>(body.data()), body.size()}, record_ends, format};
    const auto size = batch_size(records, stamp);
    if (!size) return tl::unexpected(size.error());
    out.reserve(out.size() + *size);
    write_batch(records, stamp, out);
    return {};
  } catch (...) {
    return tl::unexpected(std::string{"out of memory while encoding the batch"});
  }
}

tl::expected<http::Request, std::string> encode_batch(const Endpoint& endpoint, std::string_view stream,
                                                      std::span<const std::byte> body,
                                                      std::span<const std::uint32_t> record_ends,
                                                      const S2Policy::Stamp& stamp, S2Policy::RecordFormat format,
                                                      const RequestOptions& options) {
  return guarded(stream, options, [&]() -> tl::expected<http::Request, std::string> {
    const BatchRecords records{{reinterpret_cast<const char*>(body.data()), body.size()}, record_ends, format};
    const auto size = batch_size(records, stamp);
    if (!size) return tl::unexpected(size.error());
    http::Request request;
    request.bytes.reserve(320 + endpoint.host.size() + stream.size() * 3 + *size);
    append_post_head(request.bytes, endpoint, stream, true, kProtobuf, *size, options);
    write_batch(records, stamp, request.bytes);
    request.retry_safe = stamp.match_seq_num.has_value();
    return request;
  });
}

tl::expected<http::Request, std::string> encode_batch(const Endpoint& endpoint, std::string_view stream,
                                                      const SendBatch<S2Policy>& batch, S2Policy::RecordFormat format,
                                                      const RequestOptions& options) {
  return encode_batch(endpoint, stream, batch.body, batch.record_ends, batch.stamp, format, options);
}

tl::expected<http::Request, std::string> encode_create_stream(const Endpoint& endpoint, std::string_view stream,
                                                              const RequestOptions& options) {
  return guarded(stream, options, [&]() -> tl::expected<http::Request, std::string> {
    std::string body = "{\"stream\":";
    append_json_string(body, stream);
    body += '}';
    http::Request request;
    append_post_head(request.bytes, endpoint, stream, false, "application/json", body.size(), options);
    request.bytes += body;
    return request;
  });
}

tl::expected<http::Request, std::string> encode_check_tail(const Endpoint& endpoint, std::string_view stream,
                                                           const RequestOptions& options) {
  return guarded(stream, options, [&]() -> tl::expected<http::Request, std::string> {
    http::Request request;
    request.bytes = "GET ";
    append_stream_path(request.bytes, endpoint, stream);
    request.bytes += "/records/tail";
    append_common(request.bytes, endpoint);
    append_header(request.bytes, "Accept", "application/json");
    append_end(request.bytes, endpoint, options);
    request.retry_safe = true;
    return request;
  });
}

tl::expected<http::Request, std::string> encode_read(const Endpoint& endpoint, std::string_view stream,
                                                     const ReadRange& range, const RequestOptions& options) {
  return guarded(stream, options, [&]() -> tl::expected<http::Request, std::string> {
    http::Request request;
    request.bytes = "GET ";
    append_stream_path(request.bytes, endpoint, stream);
    request.bytes += "/records?seq_num=";
    text::append_decimal(request.bytes, range.seq_num);
    if (range.count) {
      request.bytes += "&count=";
      text::append_decimal(request.bytes, *range.count);
    }
    if (range.bytes) {
      request.bytes += "&bytes=";
      text::append_decimal(request.bytes, *range.bytes);
    }
    if (range.clamp) request.bytes += "&clamp=true";
    append_common(request.bytes, endpoint);
    append_header(request.bytes, "Accept", kProtobuf);
    append_end(request.bytes, endpoint, options);
    request.retry_safe = false;  // a read: bounded by the request timeout, not by stall detection (http::Request)
    return request;
  });
}

}  // namespace prodsm::s2
