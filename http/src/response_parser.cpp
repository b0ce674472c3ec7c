// SPDX-License-Identifier: Apache-2.0
// ResponseParser: incremental HTTP/1.1 response parsing over libhttp-parser, with the
// ResponseLimits enforced inside the callbacks (R3) and no exception leaving the API (D4).
#include <http_parser.h>

#include <new>
#include <utility>

#include "prodsm/http/detail/text.hpp"
#include "prodsm/http/response_parser.hpp"

namespace prodsm::http {
namespace {

/// Interim (1xx) responses skipped before the final one; more is a protocol error.
constexpr std::size_t kMaxInterimResponses = 16;

Error out_of_memory_error() noexcept {
  Error e;  // no allocation: the message stays empty
  e.code = ErrorCode::internal;
  e.certainty = Certainty::indefinite;
  return e;
}

const Response& empty_response() noexcept {
  static const Response kEmpty{};
  return kEmpty;
}

const Error& moved_from_error() noexcept {
  static const Error kMovedFrom = [] {
    Error e;
    e.code = ErrorCode::internal;
    e.certainty = Certainty::indefinite;
    return e;
  }();
  return kMovedFrom;
}

/// Decimal value of a Content-Length that http_parser already validated (digits, maybe
/// surrounded by spaces); saturates instead of overflowing.
std::uint64_t content_length_value(std::string_view text) noexcept {
  std::uint64_t value = 0;
  for (const char c : detail::trim_ows(text)) {
    if (c < '0' || c > '9') break;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return UINT64_MAX;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

struct ResponseParser::Impl {
  explicit Impl(ResponseLimits l) : limits(l) {
    http_parser_settings_init(&settings);
    settings.on_status = &Impl::on_status;
    settings.on_header_field = &Impl::on_header_field;
    settings.on_header_value = &Impl::on_header_value;
    settings.on_headers_complete = &Impl::on_headers_complete;
    settings.on_body = &Impl::on_body;
    settings.on_message_complete = &Impl::on_message_complete;
    settings.on_chunk_header = &Impl::on_chunk_header;
    start(false, nullptr);
  }

  ResponseLimits limits;
  http_parser_settings settings{};
  http_parser parser{};
  State state = State::incomplete;
  Response response;
  Error error;
  bool head_request = false;
  BodySink* sink = nullptr;   ///< streamed-body mode: asked at the end of the header block
  bool streaming = false;     ///< the sink took this response's body
  bool headers_done = false;  ///< the current message's header block is complete
  bool in_field = false;      ///< the last header callback was for a name
  bool interim = false;       ///< the current message is a 1xx interim response
  bool interim_done = false;  ///< an interim response just completed (parser paused)
  std::size_t interim_count = 0;
  std::size_t header_count = 0;     ///< header (and trailer) fields of the current message
  std::uint64_t header_bytes = 0;   ///< status line + header block bytes seen so far
  std::uint64_t consumed = 0;       ///< bytes consumed so far (all messages of this response)
  std::uint64_t message_start = 0;  ///< offset of the current message in those bytes
  const char* exec_base = nullptr;  ///< start of the buffer being executed
  /// How many bytes of "HTTP/" the current message has matched: the system's
  /// non-strict libhttp-parser build does not check the protocol name.
  std::size_t prefix_len = 0;

  void start(bool head, BodySink* body_sink) {
    http_parser_init(&parser, HTTP_RESPONSE);
    parser.data = this;
    state = State::incomplete;
    response = Response{};
    error = Error{};
    head_request = head;
    sink = body_sink;
    streaming = false;
    interim_count = 0;
    consumed = 0;
    begin_message();
  }

  void begin_message() {
    response.status = 0;
    response.headers.clear();
    response.body.clear();
    response.keep_alive = true;
    response.body_streamed = false;
    streaming = false;
    headers_done = false;
    in_field = false;
    interim = false;
    interim_done = false;
    header_count = 0;
    header_bytes = 0;
    message_start = consumed;
    prefix_len = 0;
  }

  /// Notes the bytes the parser consumed for the current message; false when the
  /// message does not start with "HTTP/" (leading CR/LF are skipped, as the parser does).
  bool track_prefix(const char* p, std::size_t n) noexcept {
    constexpr std::string_view kProtocol = "HTTP/";
    for (std::size_t i = 0; i < n && prefix_len < kProtocol.size(); ++i) {
      if (prefix_len == 0 && (p[i] == '\r' || p[i] == '\n')) continue;
      if (p[i] != kProtocol[prefix_len]) return false;
      ++prefix_len;
    }
    return true;
  }

  /// Fails the parse with a protocol_error; returns the callback error value.
  int fail(std::string message) noexcept {
    if (state == State::failed) return -1;
    state = State::failed;
    error = Error{};
    error.code = ErrorCode::protocol_error;
    error.certainty = Certainty::indefinite;
    error.retryable = false;
    try {
      error.message = "malformed HTTP response: " + std::move(message);
    } catch (...) {
      // keep the code; the text could not be allocated
    }
    return -1;
  }

  /// The sink refused the body (or threw): the response is abandoned.
  int fail_abandoned() noexcept {
    state = State::failed;
    error = Error{};
    error.code = ErrorCode::cancelled;
    error.certainty = Certainty::indefinite;
    error.retryable = false;
    try {
      error.message = "the response body was abandoned by its consumer";
    } catch (...) {
      // keep the code
    }
    return -1;
  }

  int fail_out_of_memory() noexcept {
    state = State::failed;
    error = out_of_memory_error();
    return -1;
  }

  static Impl& of(http_parser* p) noexcept { return *static_cast<Impl*>(p->data); }

  /// Header phase: the status line and header block may not pass max_header_bytes.
  int note_header_data(const char* at, std::size_t length) {
    if (headers_done) {  // trailer fields: counted, never stored
      header_bytes += length;
    } else {
      const auto in_buffer = static_cast<std::uint64_t>(at - exec_base) + length;
      header_bytes = consumed + in_buffer - message_start;
    }
    if (header_bytes > limits.max_header_bytes) return fail_header_limit();
    return 0;
  }

  int fail_header_limit() {
    std::string m = "response header block exceeds ";
    detail::append_decimal(m, limits.max_header_bytes);
    m += " bytes";
    return fail(std::move(m));
  }

  /// Runs a callback body, turning any exception into a failed state (never crosses C).
  template <typename Body>
  static int guarded(http_parser* p, Body&& body) noexcept {
    Impl& self = of(p);
    if (self.state == State::failed) return -1;
    try {
      return body(self);
    } catch (const std::bad_alloc&) {
      return self.fail_out_of_memory();
    } catch (...) {
      return self.fail("unexpected internal error");
    }
  }

  static int on_status(http_parser* p, const char* at, std::size_t length) {
    return guarded(p, [&](Impl& self) { return self.note_header_data(at, length); });
  }

  static int on_header_field(http_parser* p, const char* at, std::size_t length) {
    return guarded(p, [&](Impl& self) {
      if (self.note_header_data(at, length) != 0) return -1;
      if (!self.in_field) {
        self.in_field = true;
        if (++self.header_count > self.limits.max_headers) {
          std::string m = "more than ";
          detail::append_decimal(m, self.limits.max_headers);
          m += " header fields";
          return self.fail(std::move(m));
        }
        if (!self.headers_done) self.response.headers.emplace_back();
      }
      for (std::size_t i = 0; i < length; ++i) {
        if (!detail::is_tchar(at[i])) {
          return self.fail("invalid character in a header name: " + detail::quoted(std::string_view(at, length)));
        }
      }
      if (!self.headers_done) self.response.headers.back().name.append(at, length);
      return 0;
    });
  }

  static int on_header_value(http_parser* p, const char* at, std::size_t length) {
    return guarded(p, [&](Impl& self) {
      if (self.note_header_data(at, length) != 0) return -1;
      self.in_field = false;
      if (!self.headers_done && !self.response.headers.empty()) {
        self.response.headers.back().value.append(at, length);
      }
      return 0;
    });
  }

  static int on_headers_complete(http_parser* p) {
    return guarded(p, [&](Impl& self) {
      self.headers_done = true;
      self.in_field = false;
      const auto status = static_cast<int>(p->status_code);
      self.response.status = status;
      for (Header& h : self.response.headers) {
        const std::string_view trimmed = detail::trim_ows(h.value);
        if (trimmed.size() != h.value.size()) h.value = std::string{trimmed};
      }
      if (p->http_major != 1) {
        std::string m = "unsupported HTTP version ";
        detail::append_decimal(m, p->http_major);
        m += '.';
        detail::append_decimal(m, p->http_minor);
        return self.fail(std::move(m));
      }
      for (const Header& h : self.response.headers) {
        if (h.name.empty()) return self.fail("empty header name");
      }
      if (status < 100) {
        std::string m = "invalid status code ";
        detail::append_decimal(m, static_cast<std::uint64_t>(status));
        return self.fail(std::move(m));
      }
      if (status == 101) return self.fail("unexpected 101 Switching Protocols");
      if (status >= 100 && status < 200) {
        self.interim = true;
        return 1;  // 1xx: no body
      }
      // RFC 9112 6.3: responses to HEAD and 204/304 responses end with the header block.
      if (self.head_request || status == 204 || status == 304) return 1;
      if (const auto why = self.unsupported_transfer_coding()) return self.fail(*why);
      if (self.sink != nullptr) {
        bool take = false;
        try {
          take = self.sink->on_head(self.response);
        } catch (...) {
          return self.fail_abandoned();
        }
        if (take) {
          self.streaming = true;
          self.response.body_streamed = true;
          return 0;  // the sink bounds what it keeps: no max_body_bytes
        }
      }
      if (const auto length = self.response.header("Content-Length")) {
        const std::uint64_t bytes = content_length_value(*length);
        if (bytes > self.limits.max_body_bytes) return self.fail_body_limit(bytes);
      }
      return 0;
    });
  }

  /// Only the chunked transfer-coding can be decoded; any other (gzip, ...) would leave
  /// an undecodable or EOF-delimited body.
  std::optional<std::string> unsupported_transfer_coding() const {
    for (const Header& h : response.headers) {
      if (!detail::iequals(h.name, "Transfer-Encoding")) continue;
      std::string_view rest = h.value;
      while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view coding = detail::trim_ows(rest.substr(0, comma));
        if (!detail::iequals(coding, "chunked")) {
          return "unsupported Transfer-Encoding " + detail::quoted(h.value);
        }
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
    return std::nullopt;
  }

  int fail_body_limit(std::uint64_t at_least) {
    std::string m = "response body of ";
    if (at_least != 0) {
      detail::append_decimal(m, at_least);
      m += " bytes";
    } else {
      m += "more bytes";
    }
    m += " exceeds the limit of ";
    detail::append_decimal(m, limits.max_body_bytes);
    m += " bytes";
    return fail(std::move(m));
  }

  static int on_chunk_header(http_parser* p) {
    return guarded(p, [&](Impl& self) {
      if (self.streaming) return 0;
      // http_parser documents content_length as the chunk size inside this callback.
      const std::uint64_t chunk = p->content_length;
      const std::uint64_t have = self.response.body.size();
      if (chunk > self.limits.max_body_bytes - have) {
        return self.fail_body_limit(chunk > UINT64_MAX - have ? UINT64_MAX : have + chunk);
      }
      return 0;
    });
  }

  static int on_body(http_parser* p, const char* at, std::size_t length) {
    return guarded(p, [&](Impl& self) {
      if (self.streaming) {
        bool go_on = false;
        try {
          go_on = self.sink->on_body(std::span<const char>(at, length));
        } catch (...) {
          go_on = false;
        }
        return go_on ? 0 : self.fail_abandoned();
      }
      const std::uint64_t have = self.response.body.size();
      if (length > self.limits.max_body_bytes - have) return self.fail_body_limit(0);
      self.response.body.append(at, length);
      return 0;
    });
  }

  static int on_message_complete(http_parser* p) {
    return guarded(p, [&](Impl& self) {
      if (self.interim) {
        self.interim_done = true;
      } else {
        self.response.keep_alive = http_should_keep_alive(p) != 0;
        self.state = State::complete;
      }
      http_parser_pause(p, 1);  // stop right after this message (pipelining)
      return 0;
    });
  }

  std::string parser_error_text() const {
    const auto err = HTTP_PARSER_ERRNO(&parser);
    std::string m = http_errno_description(err);
    m += " (";
    m += http_errno_name(err);
    m += ") at byte ";
    detail::append_decimal(m, consumed);
    return m;
  }

  std::size_t feed(const char* data, std::size_t size) {
    if (state != State::incomplete || size == 0) return 0;
    std::size_t used = 0;
    while (used < size) {
      // In the header phase, hand the parser no more than the header allowance + 1 byte,
      // so a huge header block fails at max_header_bytes, not at the end of the buffer.
      std::size_t slice = size - used;
      if (!headers_done) {
        const std::uint64_t in_header = consumed - message_start;
        const std::uint64_t allowance = in_header < limits.max_header_bytes ? limits.max_header_bytes - in_header : 0;
        if (slice > allowance) slice = static_cast<std::size_t>(allowance) + 1;
      }
      exec_base = data + used;
      const std::size_t n = http_parser_execute(&parser, &settings, exec_base, slice);
      used += n;
      consumed += n;
      if (state != State::failed && !track_prefix(exec_base, n)) {
        fail("the status line does not start with 'HTTP/'");
        return used;
      }
      if (state != State::incomplete) return used;
      const auto err = HTTP_PARSER_ERRNO(&parser);
      if (err == HPE_PAUSED && interim_done) {
        if (++interim_count > kMaxInterimResponses) {
          std::string m = "more than ";
          detail::append_decimal(m, kMaxInterimResponses);
          m += " interim (1xx) responses";
          fail(std::move(m));
          return used;
        }
        http_parser_init(&parser, HTTP_RESPONSE);
        parser.data = this;
        begin_message();
        continue;
      }
      if (err != HPE_OK) {
        fail(parser_error_text());
        return used;
      }
      if (parser.upgrade != 0U) {
        fail("unexpected protocol upgrade");
        return used;
      }
      if (!headers_done && consumed - message_start > limits.max_header_bytes) {
        fail_header_limit();
        return used;
      }
      if (n == 0) break;  // defensive: no progress without an error
    }
    return used;
  }

  void finish_eof() {
    if (state != State::incomplete) return;
    if (consumed == 0) {
      fail("connection closed before the response completed (no response bytes)");
      return;
    }
    static const char kNothing = 0;
    exec_base = &kNothing;
    http_parser_execute(&parser, &settings, &kNothing, 0);
    if (state != State::incomplete) return;  // an EOF-delimited body completed, or failed
    std::string m = "connection closed before the response completed (";
    m += headers_done ? "in the body" : "in the status line or headers";
    m += ", after ";
    detail::append_decimal(m, consumed);
    m += " bytes)";
    fail(std::move(m));
  }
};

ResponseParser::ResponseParser(ResponseLimits limits) {
  try {
    impl_ = std::make_unique<Impl>(limits);
  } catch (...) {
    impl_.reset();  // behaves as failed (see state())
  }
}

ResponseParser::~ResponseParser() = default;
ResponseParser::ResponseParser(ResponseParser&&) noexcept = default;
ResponseParser& ResponseParser::operator=(ResponseParser&&) noexcept = default;

void ResponseParser::reset(bool head_request, BodySink* sink) {
  if (!impl_) return;
  try {
    impl_->start(head_request, sink);
  } catch (...) {
    impl_->fail_out_of_memory();
  }
}

std::size_t ResponseParser::feed(std::span<const char> bytes) {
  if (!impl_) return 0;
  try {
    return impl_->feed(bytes.data(), bytes.size());
  } catch (const std::bad_alloc&) {
    impl_->fail_out_of_memory();
  } catch (...) {
    impl_->fail("unexpected internal error");
  }
  return 0;
}

void ResponseParser::finish_eof() {
  if (!impl_) return;
  try {
    impl_->finish_eof();
  } catch (const std::bad_alloc&) {
    impl_->fail_out_of_memory();
  } catch (...) {
    impl_->fail("unexpected internal error");
  }
}

bool ResponseParser::streaming_body() const noexcept {
  return impl_ && impl_->streaming && impl_->state == State::incomplete;
}

ResponseParser::State ResponseParser::state() const noexcept {
  return impl_ ? impl_->state : State::failed;
}

const Response& ResponseParser::response() const noexcept {
  return impl_ ? impl_->response : empty_response();
}

Response ResponseParser::take_response() {
  if (!impl_) return Response{};
  return std::move(impl_->response);
}

std::string_view reason_phrase(int status) noexcept {
  if (status < 0 || status > 999) return "<unknown>";
  return http_status_str(static_cast<http_status>(status));
}

std::uint64_t ResponseParser::consumed() const noexcept {
  return impl_ ? impl_->consumed : 0;
}

const Error& ResponseParser::error() const noexcept {
  return impl_ ? impl_->error : moved_from_error();
}

}  // namespace prodsm::http
