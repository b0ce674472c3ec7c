// SPDX-License-Identifier: Apache-2.0
// http::Connection: one HTTP/1.1 client connection, sans-IO. Every transition of a
// request (queued -> handed to a write -> written -> answered or failed) is here, and so
// is the definite/indefinite rule (E2, E4): see connection.hpp.
#include "prodsm/http/connection.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "prodsm/http/detail/text.hpp"

namespace prodsm::http {
namespace {

std::string milliseconds_text(Duration d) {
  std::string out;
  const auto ms = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  detail::append_decimal(out, static_cast<std::uint64_t>(ms / 1000));
  if (ms % 1000 != 0) {
    out += '.';
    const auto frac = static_cast<std::uint64_t>(ms % 1000);
    if (frac < 100) out += '0';
    if (frac < 10) out += '0';
    detail::append_decimal(out, frac);
    while (out.back() == '0') out.pop_back();
  }
  out += " ms";
  return out;
}

}  // namespace

Connection::Connection(ConnectionOptions options, Instant now)
    : options_{std::move(options)},
      connect_deadline_{saturating_add(now, options_.connect_timeout_ns)},
      parser_{options_.response_limits},
      latest_now_{now} {
  if (options_.max_requests == 0) options_.max_requests = 1;
}

// ---- queries -----------------------------------------------------------------------------

bool Connection::wants_write() const noexcept {
  return state_ == State::open && !write_in_progress() && written_pos_ < queued_end_;
}

bool Connection::can_accept() const noexcept {
  return state_ != State::closed && outstanding() < options_.max_requests;
}

Connection::Entry* Connection::head_entry() noexcept {
  return resp_ < entries_.size() ? &entries_[resp_] : nullptr;
}
const Connection::Entry* Connection::head_entry() const noexcept {
  return resp_ < entries_.size() ? &entries_[resp_] : nullptr;
}

/// The oldest unanswered request is due once it is written and every earlier response
/// completed: from then on its answer can only be waited for.
std::optional<Instant> Connection::head_due() const noexcept {
  const Entry* h = head_entry();
  if (h == nullptr || !h->written) return std::nullopt;
  return std::max(h->written_at, previous_response_at_);
}

/// When the head request, retry_safe and due with no response byte yet, counts as
/// stalled under `stall_timeout_ns`; nullopt when stall detection does not apply to it.
std::optional<Instant> Connection::stall_deadline(Duration stall_timeout_ns) const noexcept {
  const Entry* h = head_entry();
  if (stall_timeout_ns.count() <= 0 || h == nullptr || !h->request.retry_safe || response_started_) return std::nullopt;
  const auto due = head_due();
  if (!due) return std::nullopt;
  return saturating_add(*due, stall_timeout_ns);
}

/// The request timeout of the head request: from its first byte handed out, or, while
/// its body streams to a sink, from the last byte received.
Instant Connection::request_deadline(const Entry& head) const noexcept {
  const Instant from = parser_.streaming_body() ? std::max(head.handed_at, last_byte_at_) : head.handed_at;
  return saturating_add(from, options_.request_timeout_ns);
}

bool Connection::awaiting_response() const noexcept {
  return resp_ < entries_.size() && entries_[resp_].handed;
}

// ---- inputs ------------------------------------------------------------------------------

void Connection::on_connected(Instant now) {
  now = latest_now_.observe(now);
  if (state_ != State::connecting) return;
  state_ = State::open;
  idle_since_ = now;
  last_byte_at_ = now;
  previous_response_at_ = now;
}

void Connection::on_connect_failed(Instant now, std::string_view why) {
  (void)latest_now_.observe(now);  // time is kept for the inputs after it
  if (state_ == State::closed) return;
  if (state_ == State::open) {  // a late report: the socket is unusable either way
    fail_all(std::string(why), Cause::lost);
    return;
  }
  fail_all("connect to " + options_.peer + " failed: " + std::string(why), Cause::connect_failed);
}

void Connection::on_connect_failed(Instant now, const Error& error) {
  (void)latest_now_.observe(now);  // time is kept for the inputs after it
  if (state_ == State::closed) return;
  for (std::size_t i = resp_; i < entries_.size(); ++i) {
    Error e = error;
    e.certainty = Certainty::definite;  // not connected: nothing was handed out
    ++transport_failures_;
    finish(entries_[i], tl::unexpected(std::move(e)));
  }
  resp_ = entries_.size();
  state_ = State::closed;
  close_reason_ = error.message;
  retire();
}

void Connection::enqueue(Instant now, Request request) {
  now = latest_now_.observe(now);
  if (!can_accept() || request.bytes.empty()) {
    ++transport_failures_;
    outcomes_.push_back(Outcome{
        request.id, tl::unexpected(make_error(
                        ErrorCode::unavailable, Certainty::definite, true,
                        request.bytes.empty() ? "empty request"
                                              : "the connection to " + options_.peer + " takes no more requests"))});
    return;
  }
  const bool becomes_head = outstanding() == 0;
  Entry e;
  e.request = std::move(request);
  e.start = queued_end_;
  queued_end_ += e.request.bytes.size();
  entries_.push_back(std::move(e));
  if (becomes_head) start_response(now);
}

WriteView Connection::take_write(Instant now) {
  now = latest_now_.observe(now);
  WriteView view;
  if (!wants_write()) return view;
  std::uint64_t pos = written_pos_;
  for (Entry& e : entries_) {
    if (view.count == WriteView::kMaxParts) break;
    if (e.end() <= pos) continue;
    const auto offset = static_cast<std::size_t>(pos - e.start);
    view.parts[view.count++] = std::span<const char>(e.request.bytes.data() + offset, e.request.bytes.size() - offset);
    view.bytes += e.request.bytes.size() - offset;
    if (!e.handed) {
      e.handed = true;  // from here on it may reach the server: its failure is indefinite
      e.handed_at = now;
    }
    pos = e.end();
  }
  handed_end_ = pos;
  write_started_at_ = now;
  return view;
}

void Connection::on_written(Instant now, std::size_t bytes) {
  now = latest_now_.observe(now);
  if (!write_in_progress()) return;
  written_pos_ += std::min<std::uint64_t>(bytes, handed_end_ - written_pos_);
  handed_end_ = written_pos_;  // the write ended; an unwritten rest is handed out again
  for (Entry& e : entries_) {
    if (e.end() <= written_pos_) {
      if (!e.written) {
        e.written = true;
        e.written_at = now;
        ++requests_written_;
      }
    } else if (e.start >= written_pos_ && !e.responded) {
      e.handed = false;  // none of its bytes reached the socket: definite again (E2)
    }
  }
  retire();
}

void Connection::on_bytes(Instant now, std::span<const char> bytes) {
  now = latest_now_.observe(now);
  if (state_ != State::open) return;  // bytes after the close are not ours to read
  last_byte_at_ = now;
  std::size_t used = 0;
  while (used < bytes.size()) {
    Entry* h = head_entry();
    if (h == nullptr || !h->handed) {
      // Nothing asked: an idle server closing with a 408, or garbage. Requests not yet
      // handed out cannot have been answered, so they stay definite. Right behind a
      // response delivered from this same read, the bytes put that response's framing in
      // doubt (a Content-Length short of its body): it says so (message.hpp).
      if (used > 0 && !outcomes_.empty() && outcomes_.back().result) {
        outcomes_.back().result->unsolicited_bytes_after = bytes.size() - used;
      }
      fail_all(outstanding() == 0 ? "the server sent bytes with no request outstanding"
                                  : "the server sent bytes before the request was written",
               Cause::lost);
      return;
    }
    if (!response_started_) {
      response_started_ = true;
      if (const auto due = head_due()) wait_sample_ = elapsed(*due, now);
    }
    used += parser_.feed(bytes.subspan(used));
    const auto state = parser_.state();
    if (state == ResponseParser::State::incomplete) break;
    if (state == ResponseParser::State::failed) {
      ++transport_failures_;
      const bool abandoned = parser_.error().code == ErrorCode::cancelled;
      finish(*h, tl::unexpected(parser_.error()));
      ++resp_;
      fail_all(abandoned ? "the connection was closed inside an abandoned response body"
                         : "the connection is unusable after a malformed response",
               Cause::lost);
      return;
    }
    const bool fully_handed = h->end() <= handed_end_ || h->end() <= written_pos_;
    Response response = parser_.take_response();
    const bool keep_alive = response.keep_alive;
    deliver_response(now, std::move(response));
    if (!keep_alive) {
      fail_all("the server closed the connection after an earlier response", Cause::closed_after);
      return;
    }
    if (!fully_handed) {
      fail_all("the server answered before the request was completely sent", Cause::lost);
      return;
    }
  }
}

void Connection::on_eof(Instant now) {
  now = latest_now_.observe(now);
  if (state_ == State::closed) return;
  if (state_ == State::connecting) {
    on_connect_failed(now, "the connection closed while connecting");
    return;
  }
  std::string why = outstanding() == 0 ? "the server closed the idle connection" : "the server closed the connection";
  Entry* h = head_entry();
  if (h != nullptr && h->handed && parser_.consumed() > 0) {
    parser_.finish_eof();  // an EOF-delimited body ends here
    if (parser_.state() == ResponseParser::State::complete) {
      deliver_response(now, parser_.take_response());
    } else if (parser_.state() == ResponseParser::State::failed) {
      why += ": " + parser_.error().message;  // truncated: retryable, not malformed
    }
  }
  fail_all(why, Cause::lost);
}

void Connection::on_error(Instant now, std::string_view why) {
  now = latest_now_.observe(now);
  if (state_ == State::connecting) {
    on_connect_failed(now, why);
    return;
  }
  fail_all(std::string(why), Cause::lost);
}

void Connection::close(std::string_view why) {
  fail_all(std::string(why), Cause::local_close);
}

void Connection::handle_timeout(Instant now, Duration stall_timeout_ns) {
  now = latest_now_.observe(now);
  if (state_ == State::connecting) {
    if (now >= connect_deadline_) {
      fail_all("connect to " + options_.peer + " timed out after " + milliseconds_text(options_.connect_timeout_ns),
               Cause::connect_failed);
    }
    return;
  }
  if (state_ != State::open) return;
  if (write_in_progress() && now >= saturating_add(write_started_at_, options_.request_timeout_ns)) {
    // A write that never ends (a server that stopped reading) would hold every request
    // behind it without a deadline.
    fail_all("writing the request did not finish within " + milliseconds_text(options_.request_timeout_ns),
             Cause::lost);
    return;
  }
  const Entry* h = head_entry();
  if (h == nullptr || !h->handed) return;
  if (now >= request_deadline(*h)) {
    fail_all(parser_.streaming_body()
                 ? "the response body stopped arriving for " + milliseconds_text(options_.request_timeout_ns)
                 : "request timed out after " + milliseconds_text(options_.request_timeout_ns),
             Cause::lost);
    return;
  }
  if (const auto deadline = stall_deadline(stall_timeout_ns); deadline && now >= *deadline) {
    auto& look = entries_[resp_].stall_look;
    if (!look || look->deadline != *deadline) {
      // The first look past this deadline (the pool's stall timeout may have changed since
      // an earlier one): the caller's loop reads its sockets before the second.
      look = Entry::StallLook{*deadline, saturating_add(now, kStallSecondLookNs)};
      return;
    }
    if (now >= look->second_look_at) {
      closed_by_stall_ = true;
      fail_all("no response from " + options_.peer + " within " + milliseconds_text(stall_timeout_ns) +
                   " of the request being due (stalled; the connection is replaced)",
               Cause::lost);
    }
  }
}

// ---- outputs -----------------------------------------------------------------------------

std::vector<Unprocessed> Connection::take_unprocessed() {
  return std::exchange(unprocessed_, {});
}

std::optional<Outcome> Connection::poll_outcome() {
  if (outcomes_.empty()) return std::nullopt;
  Outcome out = std::move(outcomes_.front());
  outcomes_.pop_front();
  return out;
}

std::optional<Duration> Connection::poll_wait_sample() {
  return std::exchange(wait_sample_, std::nullopt);
}

std::optional<Instant> Connection::next_deadline(Duration stall_timeout_ns) const {
  if (state_ == State::connecting) return connect_deadline_;
  if (state_ != State::open) return std::nullopt;
  std::optional<Instant> write_deadline;
  if (write_in_progress()) write_deadline = saturating_add(write_started_at_, options_.request_timeout_ns);
  const Entry* h = head_entry();
  if (h == nullptr || !h->handed) return write_deadline;
  Instant when = request_deadline(*h);
  if (write_deadline) when = std::min(when, *write_deadline);
  if (const auto deadline = stall_deadline(stall_timeout_ns)) {
    const auto& look = h->stall_look;  // past the deadline already: the second look is next
    when = std::min(when, look && look->deadline == *deadline ? look->second_look_at : *deadline);
  }
  return when;
}

// ---- transitions ---------------------------------------------------------------------------

void Connection::start_response(Instant now) {
  (void)now;
  const Entry* h = head_entry();
  parser_.reset(h != nullptr && h->request.head, h != nullptr ? h->request.body_sink.get() : nullptr);
  response_started_ = false;
}

void Connection::finish(Entry& e, tl::expected<Response, Error> result) {
  e.responded = true;
  outcomes_.push_back(Outcome{e.request.id, std::move(result)});
}

void Connection::deliver_response(Instant now, Response response) {
  Entry& h = entries_[resp_];
  finish(h, std::move(response));
  ++resp_;
  ++responses_;
  previous_response_at_ = now;
  if (outstanding() == 0) idle_since_ = now;
  start_response(now);
  retire();
}

/// Every unanswered request fails (see the file comment for the classification) and the
/// connection closes. Bytes stay alive while a write still uses them.
void Connection::fail_all(const std::string& why, Cause cause) {
  if (state_ == State::closed) return;
  // Handed back (hand_back_unprocessed) only when none of them was handed out (those come
  // first, and fail indefinite): the caller's resends of those must go out first, so the
  // rest fails with them and the caller resends everything in its own order.
  const bool hand_back = options_.hand_back_unprocessed && (cause == Cause::lost || cause == Cause::closed_after) &&
                         (resp_ >= entries_.size() || !entries_[resp_].handed);
  for (std::size_t i = resp_; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    Error error;
    // Any loss of a handed-out request leaves its outcome unknown — behind a closing
    // response too: RFC 9112 9.6 forbids a server to process requests after it, but one
    // that had read a pipelined request may (Node's HTTP server stores it and then drops
    // its response), and a plain append resent as if it had not been would be doubled.
    if (e.handed) {
      error = make_error(ErrorCode::connection_lost, Certainty::indefinite, true,
                         cause == Cause::closed_after ? why +
                                                            "; the request was already sent, so it may have been "
                                                            "processed anyway"
                                                      : why);
    } else {
      switch (cause) {
        case Cause::connect_failed: error = make_error(ErrorCode::unavailable, Certainty::definite, true, why); break;
        case Cause::lost:
          error = make_error(ErrorCode::connection_lost, Certainty::definite, true,
                             "the connection closed before the request was sent (" + why + ")");
          break;
        case Cause::closed_after:
          error = make_error(ErrorCode::connection_lost, Certainty::definite, true,
                             "not processed: " + why + " (RFC 9112 section 9.6)");
          break;
        case Cause::local_close:
          error = make_error(ErrorCode::closed, Certainty::definite, false,
                             "the connection was closed before the request was sent (" + why + ")");
          break;
      }
    }
    if (hand_back) {       // every one of them is definite here
      e.responded = true;  // decided here: handed back, no outcome
      unprocessed_.push_back(Unprocessed{e.request, std::move(error)});
      continue;
    }
    if (cause != Cause::local_close) ++transport_failures_;
    finish(e, tl::unexpected(std::move(error)));
  }
  resp_ = entries_.size();
  state_ = State::closed;
  close_reason_ = why;
  parser_.reset();  // forgets the body sink of a request that is about to be retired
  retire();
}

/// Drops answered requests whose bytes no write uses any more.
void Connection::retire() {
  while (!entries_.empty() && entries_.front().responded &&
         (entries_.front().end() <= written_pos_ || (state_ == State::closed && !write_in_progress()))) {
    entries_.pop_front();
    --resp_;
  }
}

}  // namespace prodsm::http
