// SPDX-License-Identifier: Apache-2.0
// Request encoders: the exact HTTP/1.1 request heads of create, append, close, HEAD,
// DELETE and catch-up read. Header order: Host, Content-Type, Content-Length, the
// request's own headers (Stream-*, Producer-*), Connection, then the caller's extra
// headers. No Accept-Encoding is ever sent: responses are never compressed.
#include "prodsm/ds/http_codec.hpp"
#include "prodsm/http/detail/text.hpp"

namespace prodsm::ds {
namespace {

/// Appends a header value, dropping CR, LF and NUL: a value the codec writes can never
/// end the header line or the head early (no header injection whatever the input).
void append_value(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c != '\r' && c != '\n' && c != '\0') out += c;
  }
}

void append_header(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  append_value(out, value);
  out += "\r\n";
}

void append_number_header(std::string& out, std::string_view name, std::uint64_t value) {
  out += name;
  out += ": ";
  http::detail::append_decimal(out, value);
  out += "\r\n";
}

/// The path as request target. A path from StreamUrl::parse is written as it is; bytes
/// that cannot appear in a request target (space, controls, non-ASCII, '?', '#') are
/// percent-encoded, so a hand-built StreamUrl cannot break the request line.
void append_target_path(std::string& out, std::string_view path) {
  if (path.empty() || path.front() != '/') out += '/';
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7F || c == '?' || c == '#') {
      http::detail::append_percent_encoded_byte(out, byte);
    } else {
      out += c;
    }
  }
}

/// `<METHOD> <path><query> HTTP/1.1` and Host.
void append_start(std::string& out, std::string_view method, const StreamUrl& url, std::string_view query = {}) {
  out += method;
  out += ' ';
  append_target_path(out, url.path);
  out += query;
  out += " HTTP/1.1\r\n";
  append_header(out, "Host", url.authority());
}

/// Connection (when not keep-alive), the valid extra headers, and the blank line.
/// An extra header that check_extra_header refuses is never written.
void append_end(std::string& out, const RequestOptions& options) {
  if (!options.keep_alive) out += "Connection: close\r\n";
  for (const Header& h : options.extra_headers) {
    if (check_extra_header(h)) continue;
    append_header(out, h.name, h.value);
  }
  out += "\r\n";
}

void append_content_type(std::string& out, std::string_view content_type) {
  if (!content_type.empty()) append_header(out, "Content-Type", content_type);
}

void append_producer(std::string& out, const std::optional<ProducerHeaders>& producer) {
  if (!producer) return;
  append_header(out, "Producer-Id", producer->producer_id);
  append_number_header(out, "Producer-Epoch", producer->epoch);
  append_number_header(out, "Producer-Seq", producer->seq);
}

/// Runs an encoder; an allocation failure gives an empty string (D4: nothing throws).
template <typename Encode>
std::string guarded(Encode&& encode) noexcept {
  try {
    std::string out;
    out.reserve(256);
    encode(out);
    return out;
  } catch (...) {
    return {};
  }
}

}  // namespace

std::string encode_create(const StreamUrl& url, std::string_view content_type, const CreateOptions& create,
                          const RequestOptions& options) {
  return guarded([&](std::string& out) {
    append_start(out, "PUT", url);
    append_content_type(out, content_type);
    out += "Content-Length: 0\r\n";
    if (create.ttl_seconds) append_number_header(out, "Stream-TTL", *create.ttl_seconds);
    if (create.expires_at) append_header(out, "Stream-Expires-At", *create.expires_at);
    if (create.closed) out += "Stream-Closed: true\r\n";
    append_end(out, options);
  });
}

std::string encode_append(const StreamUrl& url, std::string_view content_type, std::size_t body_bytes,
                          const AppendOptions& append, const RequestOptions& options) {
  return guarded([&](std::string& out) {
    append_start(out, "POST", url);
    append_content_type(out, content_type);
    append_number_header(out, "Content-Length", body_bytes);
    append_producer(out, append.producer);
    if (append.stream_seq) append_header(out, "Stream-Seq", *append.stream_seq);
    if (append.close_stream) out += "Stream-Closed: true\r\n";
    append_end(out, options);
  });
}

std::string encode_batch(const StreamUrl& url, std::string_view content_type, std::size_t body_bytes,
                         const DurableStreamsPolicy::Stamp& stamp, std::string_view producer_id,
                         const RequestOptions& options) {
  AppendOptions append;
  if (stamp.sequenced) append.producer = ProducerHeaders{producer_id, stamp.epoch, stamp.seq};
  return encode_append(url, content_type, body_bytes, append, options);
}

std::string encode_close(const StreamUrl& url, std::string_view content_type,
                         const std::optional<ProducerHeaders>& producer, const RequestOptions& options) {
  return guarded([&](std::string& out) {
    append_start(out, "POST", url);
    append_content_type(out, content_type);
    out += "Content-Length: 0\r\n";
    append_producer(out, producer);
    out += "Stream-Closed: true\r\n";
    append_end(out, options);
  });
}

std::string encode_head(const StreamUrl& url, const RequestOptions& options) {
  return guarded([&](std::string& out) {
    append_start(out, "HEAD", url);
    append_end(out, options);
  });
}

std::string encode_delete(const StreamUrl& url, const RequestOptions& options) {
  return guarded([&](std::string& out) {
    append_start(out, "DELETE", url);
    append_end(out, options);
  });
}

std::string encode_read(const StreamUrl& url, std::string_view offset, const RequestOptions& options) {
  return guarded([&](std::string& out) {
    std::string query = "?offset=";
    http::detail::append_query_component(query, offset);
    append_start(out, "GET", url, query);
    append_end(out, options);
  });
}

}  // namespace prodsm::ds
