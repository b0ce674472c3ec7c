// SPDX-License-Identifier: Apache-2.0
// ds::StreamReader: the catch-up read loop (GETs until up to date), streamed, retried,
// bounded. See reader.hpp for the rules.
#include "prodsm/ds/reader.hpp"

#include "prodsm/detail/config_validation.hpp"

#include "prodsm/http/detail/text.hpp"
#include "prodsm/http/request_fields.hpp"

#include <algorithm>
#include <utility>

namespace prodsm::ds {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

/// FNV-1a over `bytes`, continuing from `h`: the same value however the bytes are split.
std::uint64_t fnv(std::uint64_t h, std::string_view bytes) noexcept {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

std::string ms_text(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

std::optional<std::string> out_of_range(std::string_view field, std::uint64_t lo, std::uint64_t hi, std::uint64_t got) {
  if (got >= lo && got <= hi) return std::nullopt;
  return std::string(field) + ": must be in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " +
         std::to_string(got) + ")";
}

}  // namespace

std::optional<std::string> ReadOptions::validate() const {
  if (offset.empty()) return "offset: must not be empty (\"-1\" reads from the start)";
  if (auto why = out_of_range("max_bytes", 0, 1ULL << 62, max_bytes)) return why;
  if (auto why = out_of_range("max_element_bytes", 1, 1ULL << 30, max_element_bytes)) return why;
  if (auto why = out_of_range("max_requests", 1, 1ULL << 32, max_requests)) return why;
  if (auto why = out_of_range("max_empty_responses", 0, 1'000'000, max_empty_responses)) return why;
  if (retry_timeout_ns.count() < 0 || retry_timeout_ns > std::chrono::hours{24}) {
    return "retry_timeout_ns: must be in 0..24 h (got " + std::to_string(retry_timeout_ns.count()) + " ns)";
  }
  if (timeout_ns < std::chrono::milliseconds{1} || timeout_ns > std::chrono::hours{24}) {
    return "timeout_ns: must be in 1 ms..24 h (got " + std::to_string(timeout_ns.count()) + " ns)";
  }
  // The producer's bounds (E4: at least 1 us between retries, a multiplier of 1.0..16.0).
  if (auto why = prodsm::detail::validate_retry_policy(retry)) return why->message();
  for (const auto& h : request.extra_headers) {
    if (auto why = check_extra_header(h)) return "request.extra_headers: " + *why;
  }
  if (auto why = http::check_extra_header_bounds(request.extra_headers)) return "request.extra_headers: " + *why;
  return std::nullopt;
}

tl::expected<StreamReader, std::string> StreamReader::create(StreamUrl url, ReadOptions options, Instant now) {
  if (auto why = options.validate()) return tl::unexpected(std::move(*why));
  return StreamReader(std::move(url), std::move(options), now);
}

StreamReader::StreamReader(StreamUrl url, ReadOptions options, Instant now)
    : url_{std::move(url)},
      options_{std::move(options)},
      offset_{options_.offset},
      deadline_{saturating_add(now, options_.timeout_ns)},
      rng_{options_.retry.jitter_seed ^ 0x72656164ULL},
      splitter_{options_.max_element_bytes},
      hash_delivered_{kFnvOffset},
      hash_resent_{kFnvOffset},
      hash_resent_commit_{kFnvOffset} {
  summary_.next_offset = offset_;
  summary_.json = options_.json;
}

StreamReader::StreamReader(StreamReader&&) noexcept = default;
StreamReader& StreamReader::operator=(StreamReader&&) noexcept = default;
StreamReader::~StreamReader() = default;

// ---- ReadCollector -------------------------------------------------------------------------

bool ReadCollector::add(const ReadChunk& chunk) {
  if (chunk.next_offset) return true;
  json_ = json_ || chunk.json;
  if (json_) body_ += first_ ? '[' : ',';
  first_ = false;
  body_ += chunk.data;
  return true;
}

StreamContents ReadCollector::finish(const ReadSummary& summary) {
  StreamContents c;
  if (json_ || summary.json) body_ += first_ ? "[]" : "]";
  c.body = std::move(body_);
  c.next_offset = summary.next_offset;
  c.closed = summary.closed;
  c.reads = summary.requests;
  return c;
}

// ---- errors --------------------------------------------------------------------------------

/// Names the stream in every message: "read /path: HTTP 404 Not Found: ...".
Error StreamReader::in_context(Error error) const {
  constexpr std::string_view kClassified = "read: ";
  std::string prefix = "read " + url_.path + ": ";
  if (error.message.compare(0, kClassified.size(), kClassified) == 0) {
    error.message = prefix + error.message.substr(kClassified.size());
  } else {
    error.message = prefix + error.message;
  }
  return error;
}

Error StreamReader::protocol_error(std::string what) const {
  Error e = make_error(ErrorCode::protocol_error, Certainty::definite, false, std::move(what));
  return in_context(std::move(e));
}

void StreamReader::fail(Error error, ReadFailure why) {
  if (result_) return;
  result_ = tl::unexpected(ReadError{std::move(error), why});
}

void StreamReader::finish_ok() {
  if (result_) return;
  result_ = summary_;
}

void StreamReader::stop(Error error) {
  fail(std::move(error));
}

// ---- requests ------------------------------------------------------------------------------

std::optional<http::Request> StreamReader::poll_request(Instant now) {
  if (result_ || outstanding_) return std::nullopt;
  if (now >= deadline_) {
    handle_timeout(now);
    return std::nullopt;
  }
  if (retry_at_) {
    if (now < *retry_at_) return std::nullopt;
    retry_at_.reset();
  }
  if (summary_.requests >= options_.max_requests) {
    fail(protocol_error("not finished after max_requests (" + std::to_string(options_.max_requests) + ") requests"));
    return std::nullopt;
  }
  outstanding_ = true;
  ++summary_.requests;
  if (attempts_ > 0) ++summary_.retries;
  seen_ = 0;
  streaming_ = false;
  data_refused_.reset();
  splitter_.reset();
  http::Request r;
  r.bytes = encode_read(url_, offset_, options_.request);
  // A read changes nothing, but it is not retry_safe: that is what opts a request into
  // stall detection, whose timeout is learned from the session's other responses (fast
  // appends: down to 5 ms), while a read's first byte comes once the server has built a
  // body of up to megabytes. Each stall cost one of the read's attempts and re-asked for
  // the same body: a slow but healthy read failed. The request timeout bounds it instead.
  r.retry_safe = false;
  return r;
}

std::optional<Instant> StreamReader::next_deadline() const {
  if (result_) return std::nullopt;
  if (retry_at_) return std::min(*retry_at_, deadline_);
  return deadline_;
}

void StreamReader::handle_timeout(Instant now) {
  begin_input();  // an input: what the last one gave was handed on, and its bytes may be gone
  if (result_ || now < deadline_) return;
  timed_out_ = true;
  fail(in_context(make_error(ErrorCode::cancelled, Certainty::definite, false,
                             "not finished within timeout_ns (" + ms_text(options_.timeout_ns) + ")")),
       ReadFailure::timeout);
}

// ---- the streamed body ---------------------------------------------------------------------

void StreamReader::begin_input() {
  output_.clear();
  splitter_.clear_elements();
}

bool StreamReader::refuse_page(const http::Response& head, const std::string& next_offset) {
  // PROTOCOL.md, Offsets: offsets are lexicographically sortable, and those of appended
  // data strictly increasing (byte-wise). A page that ends before the offset it was read
  // from would hand on again what came before it; a server cycling through offsets would
  // repeat data until a bound ended the read. "-1" and "now" are not positions.
  if (offset_ != "-1" && offset_ != "now" && next_offset < offset_) {
    if (delivered_ > 0) {
      fail(protocol_error("the server's Stream-Next-Offset (" + next_offset + ") is before the offset read from (" +
                          offset_ + "): offsets only increase, and its data would be read twice"));
      return true;
    }
    // Nothing handed on yet: a server that clamps an offset past its tail (the caller's)
    // answers an empty page ending at the tail, and the read goes on from there. A page of
    // data ending before the offset asked is refused when its data arrives (take_unit).
    data_refused_ = "the server's Stream-Next-Offset (" + next_offset + ") is before the offset read from (" + offset_ +
                    "), and the page holds data: offsets only increase";
  } else if (next_offset == offset_) {  // an empty page at the tail is fine; data in it is not
    data_refused_ =
        "the server returned data without advancing Stream-Next-Offset (" + offset_ + "); it would be read twice";
  }
  // A stream asked for as JSON whose Content-Type says the server does not keep it as JSON
  // messages (anything but application/json; a `+json` type is stored as sent, PROTOCOL.md
  // section 9.1): the caller's mode does not fit the stream. Told before a byte of it is
  // taken: a body of JSON-looking lines would otherwise be cut into values until it broke,
  // or, one line, be taken as the values of an array the producer wrote as one record.
  const auto content_type = head.header("Content-Type");
  if (options_.json && content_type && !stores_json_messages(*content_type) && delivered_ == 0) {
    fail(protocol_error("the stream is not JSON (Content-Type " + std::string(*content_type) +
                        "), and the read asked for JSON values"),
         ReadFailure::not_json);
    return true;
  }
  return false;
}

bool StreamReader::on_head(const http::Response& head) {
  if (result_) return true;  // streamed into on_body, which abandons it
  if (head.status != 200) return false;
  auto read = classify_read(head);
  if (!read) return false;                                // collected; on_outcome reports why
  if (refuse_page(head, read->next_offset)) return true;  // streamed into on_body, which abandons it
  choose_mode(head);
  streaming_ = true;
  return true;
}

bool StreamReader::on_body(std::span<const char> bytes) {
  begin_input();
  if (result_ || !streaming_) return false;
  if (!summary_.json) return on_data_bytes(bytes);
  auto failure = splitter_.feed(bytes);
  for (const std::string_view element : splitter_.elements()) {
    if (!take_unit(element, false)) return false;
  }
  if (failure) {
    // The caller's ReadOptions::json on a bytes stream. A JSON Content-Type over a body
    // that is not an array, or such a page after data, is the server's fault.
    const bool not_json = options_.json && splitter_.not_an_array() && delivered_ == 0;
    fail(protocol_error(std::move(*failure)), not_json ? ReadFailure::not_json : ReadFailure::other);
    return false;
  }
  return true;
}

/// One JSON element (bytes_mode false) or a run of bytes (bytes_mode true) at the
/// current position: handed on, or — when it was handed on before a retry — checked.
bool StreamReader::take_unit(std::string_view unit, bool bytes_mode) {
  if (data_refused_) {
    fail(protocol_error(*data_refused_));
    return false;
  }
  std::uint64_t units = bytes_mode ? unit.size() : 1;
  const std::uint64_t at = committed_units_ + seen_;
  if (at < delivered_) {  // read again after a retry: already handed on
    hash_resent_ = fnv(hash_resent_, unit);
    if (!bytes_mode) hash_resent_ = fnv(hash_resent_, "\xff");
    seen_ += units;
    if (at + units == delivered_ && hash_resent_ != hash_delivered_) {
      fail(protocol_error("the server returned different data at offset " + offset_ +
                          " when it was read again (a stream never changes what it holds)"));
      return false;
    }
    return true;
  }
  // R3: no more than max_bytes handed on. A bytes stream hands on exactly max_bytes (a
  // prefix, as `head -c` would) before the read fails; a JSON element is whole or not at all.
  const std::uint64_t room = options_.max_bytes - std::min(summary_.bytes, options_.max_bytes);
  const bool over = unit.size() > room;
  if (over && bytes_mode && room > 0) {
    unit = unit.substr(0, static_cast<std::size_t>(room));
    units = room;
  } else if (over) {
    fail_max_bytes();
    return false;
  }
  output_.push_back(unit);
  hash_delivered_ = fnv(hash_delivered_, unit);
  if (!bytes_mode) {
    hash_delivered_ = fnv(hash_delivered_, "\xff");
    ++summary_.elements;
  }
  delivered_ += units;
  seen_ += units;
  summary_.bytes += unit.size();
  if (over) {
    fail_max_bytes();
    return false;
  }
  return true;
}

void StreamReader::fail_max_bytes() {
  fail(protocol_error("the server sent more than the read limit of " + std::to_string(options_.max_bytes) +
                      " bytes (max_bytes): the stream holds more, or a body does not end"),
       ReadFailure::max_bytes);
}

void StreamReader::choose_mode(const http::Response& head) {
  // Only before anything was handed on or counted: the units (bytes or elements) must not
  // change meaning mid-read. A stream's Content-Type never changes, so every response
  // until then gives the same answer.
  if (summary_.json || !options_.json_from_content_type || delivered_ > 0 || committed_units_ > 0) return;
  // Exactly application/json: only then does the server itself keep the stream as JSON
  // messages and answer each page as one array (the reference server's JSON mode). A
  // `+json` type is stored as sent there — bytes, whatever a producer framed — so it is
  // read as bytes unless `json` asks otherwise.
  const auto content_type = head.header("Content-Type");
  summary_.json = content_type && stores_json_messages(*content_type);
}

bool StreamReader::on_data_bytes(std::span<const char> bytes) {
  std::string_view rest(bytes.data(), bytes.size());
  if (rest.empty()) return true;
  const std::uint64_t at = committed_units_ + seen_;
  if (at < delivered_) {  // the part already handed on before a retry
    const auto again = static_cast<std::size_t>(std::min<std::uint64_t>(rest.size(), delivered_ - at));
    if (!take_unit(rest.substr(0, again), true)) return false;
    rest.remove_prefix(again);
  }
  return rest.empty() || take_unit(rest, true);
}

// ---- outcomes ------------------------------------------------------------------------------

void StreamReader::on_outcome(Instant now, tl::expected<http::Response, Error> outcome) {
  begin_input();
  if (result_ || !outstanding_) return;  // a late outcome after the read ended
  outstanding_ = false;
  if (!outcome) {
    on_failed_attempt(now, std::move(outcome.error()));
    return;
  }
  on_response(now, *outcome);
}

void StreamReader::on_response(Instant now, const http::Response& response) {
  if (response.unsolicited_bytes_after > 0) {
    // The page's framing is in doubt: its body may have been cut short (a Content-Length
    // shorter than the data), and the offset after it would skip what was cut. Not retried:
    // the same server frames the same page the same way.
    fail(protocol_error(std::to_string(response.unsolicited_bytes_after) +
                        " byte(s) arrived right behind a response, beyond its framing (a Content-Length shorter "
                        "than the body sent?): its data cannot be trusted to be complete"));
    return;
  }
  auto read = classify_read(response);
  if (!read) {
    on_failed_attempt(now, std::move(read.error()));
    return;
  }
  if (!response.body_streamed) {  // no sink took it (a caller without one): the same path
    if (refuse_page(response, read->next_offset)) return;
    choose_mode(response);
    streaming_ = true;
    collected_body_ = response.body;
    const auto body = std::span<const char>(collected_body_.data(), collected_body_.size());
    const bool ok = on_body(body);
    if (!ok) return;
  }
  if (summary_.json) {
    if (auto why = splitter_.finish()) {
      fail(protocol_error(std::move(*why)));
      return;
    }
  }
  (void)now;
  const bool had_data = seen_ > 0;
  const bool progressed = read->next_offset != offset_;
  ++summary_.responses;
  committed_units_ += seen_;
  seen_ = 0;
  attempts_ = 0;
  offset_ = read->next_offset;
  summary_.next_offset = offset_;
  summary_.up_to_date = read->up_to_date;
  summary_.closed = read->closed;
  const bool rereading = committed_units_ < delivered_;
  if (rereading) {
    hash_resent_commit_ = hash_resent_;
  } else {  // everything handed on is behind offset_: a later retry starts after it
    hash_delivered_ = hash_resent_ = hash_resent_commit_ = kFnvOffset;
  }
  const bool ends = read->up_to_date || read->closed || (!had_data && !progressed);
  if (ends) {
    if (rereading) {
      fail(protocol_error("the stream holds less data than an earlier, interrupted response returned"));
      return;
    }
    finish_ok();
    return;
  }
  if (had_data) {
    empty_run_ = 0;
  } else if (++empty_run_ > options_.max_empty_responses) {
    fail(protocol_error(std::to_string(empty_run_) +
                        " responses in a row carried no data and advanced the offset without saying "
                        "Stream-Up-To-Date (max_empty_responses)"));
  }
}

void StreamReader::on_failed_attempt(Instant now, Error error) {
  error = in_context(std::move(error));
  if (++attempts_ == 1) first_failure_at_ = now;
  // A read changes nothing, so whatever a write would call "may have been applied" (a
  // lost connection, a 408) is simply asked again.
  const bool retryable =
      error.retryable && (error.code == ErrorCode::unavailable || error.code == ErrorCode::connection_lost ||
                          error.code == ErrorCode::request_timeout || error.code == ErrorCode::header_provider_failed);
  if (!retryable || attempts_ >= options_.retry.max_attempts) {
    if (retryable) error.message += " (after " + std::to_string(attempts_) + " attempts)";
    fail(std::move(error));
    return;
  }
  seen_ = 0;
  hash_resent_ = hash_resent_commit_;
  const Duration wait_ns = prodsm::detail::backoff_delay(options_.retry, attempts_, error, rng_);
  if (saturating_add(now, wait_ns) >= deadline_) {  // the retry could only find the read timed out
    error.message += " (not retried: the retry would wait " + ms_text(wait_ns) +
                     (error.retry_after_ns ? " as Retry-After asks" : "") + ", past the read's timeout_ns (" +
                     ms_text(options_.timeout_ns) + "))";
    fail(std::move(error));
    return;
  }
  if (options_.retry_timeout_ns.count() > 0 &&
      saturating_add(now, wait_ns) > saturating_add(first_failure_at_, options_.retry_timeout_ns)) {
    error.message += " (after " + std::to_string(attempts_) + " attempts: not retried past retry_timeout_ns (" +
                     ms_text(options_.retry_timeout_ns) + ") since the first failure at this offset)";
    fail(std::move(error));
    return;
  }
  retry_at_ = saturating_add(now, wait_ns);
  ++retries_decided_;
  last_retry_ = ReadRetry{std::move(error), offset_, attempts_, wait_ns};
}

}  // namespace prodsm::ds
