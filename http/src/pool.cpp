// SPDX-License-Identifier: Apache-2.0
// http::Pool: the connections to one server, sans-IO. Options, dispatch (which request
// goes on which connection, in what order) and connection replacement live here; the
// socket events (and the TLS pump) in pool_socket_events.cpp, the stall estimate and the
// deadlines in pool_stall.cpp; each connection's own transitions in connection.cpp.
#include "prodsm/http/pool.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "prodsm/http/detail/text.hpp"

namespace prodsm::http {
namespace {

using namespace std::chrono_literals;

std::string in_range_text(std::string_view field, std::uint64_t lo, std::uint64_t hi, std::uint64_t got) {
  std::string m{field};
  m += ": must be in ";
  detail::append_decimal(m, lo);
  m += "..";
  detail::append_decimal(m, hi);
  m += " (got ";
  detail::append_decimal(m, got);
  m += ')';
  return m;
}

bool duration_in(Duration d, Duration lo, Duration hi) {
  return d >= lo && d <= hi;
}

/// "<field>: must be in <range> (got <ns> ns)".
std::string duration_range_text(std::string_view field, std::string_view range, Duration got) {
  return std::string{field} + ": must be in " + std::string{range} + " (got " + std::to_string(got.count()) + " ns)";
}

}  // namespace

std::optional<std::string> PoolOptions::validate() const {
  if (host.empty()) return "host: must not be empty";
  if (port == 0) return "port: must be in 1..65535 (got 0)";
  return transport.validate();
}

std::optional<std::string> TransportOptions::validate() const {
  if (auto why = tls.validate()) return why;
  if (mode != ConnectionMode::pipelined && mode != ConnectionMode::pool) return "mode: must be pipelined or pool";
  if (max_connections < 1 || max_connections > 64) return in_range_text("max_connections", 1, 64, max_connections);
  if (max_pipelined_requests < 1 || max_pipelined_requests > 1024) {
    return in_range_text("max_pipelined_requests", 1, 1024, max_pipelined_requests);
  }
  if (!duration_in(connect_timeout_ns, 1ms, 10min)) {
    return duration_range_text("connect_timeout_ns", "1 ms..10 min", connect_timeout_ns);
  }
  if (!duration_in(request_timeout_ns, 1ms, 10min)) {
    return duration_range_text("request_timeout_ns", "1 ms..10 min", request_timeout_ns);
  }
  if (!duration_in(idle_reuse_limit_ns, 0ms, 10min)) {
    return duration_range_text("idle_reuse_limit_ns", "0..10 min", idle_reuse_limit_ns);
  }
  if (!duration_in(stall.min_ns, 100us, 10min))
    return duration_range_text("stall.min_ns", "100 us..10 min", stall.min_ns);
  if (!duration_in(stall.initial_ns, stall.min_ns, 10min)) {
    return duration_range_text("stall.initial_ns", "stall.min_ns..10 min", stall.initial_ns);
  }
  const ResponseLimits& r = response_limits;
  if (r.max_header_bytes < ResponseLimits::kMinHeaderBytes || r.max_header_bytes > ResponseLimits::kMaxHeaderBytes) {
    return in_range_text("response_limits.max_header_bytes", ResponseLimits::kMinHeaderBytes,
                         ResponseLimits::kMaxHeaderBytes, r.max_header_bytes);
  }
  if (r.max_headers < ResponseLimits::kMinHeaders || r.max_headers > ResponseLimits::kMaxHeaders) {
    return in_range_text("response_limits.max_headers", ResponseLimits::kMinHeaders, ResponseLimits::kMaxHeaders,
                         r.max_headers);
  }
  if (r.max_body_bytes < ResponseLimits::kMinBodyBytes || r.max_body_bytes > ResponseLimits::kMaxBodyBytes) {
    return in_range_text("response_limits.max_body_bytes", ResponseLimits::kMinBodyBytes, ResponseLimits::kMaxBodyBytes,
                         r.max_body_bytes);
  }
  if (max_queued_requests < 1 || max_queued_requests > 65536) {
    return in_range_text("max_queued_requests", 1, 65536, max_queued_requests);
  }
  return std::nullopt;
}

tl::expected<Pool, std::string> Pool::create(PoolOptions options) {
  if (auto why = options.validate()) return tl::unexpected(std::move(*why));
  return Pool(std::move(options));
}

tl::expected<Pool, std::string> Pool::create(std::string host, std::uint16_t port, bool tls,
                                             TransportOptions transport) {
  PoolOptions options{std::move(host), port, std::move(transport), nullptr};
  if (auto why = options.validate()) return tl::unexpected(std::move(*why));
  if (tls) {
    auto context = TlsContext::create(options.transport.tls);
    if (!context) return tl::unexpected(std::move(context.error()));
    options.tls = std::move(*context);
  }
  return Pool(std::move(options));
}

Pool::Pool(PoolOptions options) noexcept : options_{std::move(options)} {}

// ---- lookup --------------------------------------------------------------------------------

Pool::Slot* Pool::find(ConnectionId id) noexcept {
  for (Slot& s : slots_) {
    if (s.id == id) return &s;
  }
  return nullptr;
}
const Pool::Slot* Pool::find(ConnectionId id) const noexcept {
  for (const Slot& s : slots_) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

bool Pool::knows(ConnectionId id) const noexcept {
  return find(id) != nullptr;
}

bool Pool::awaiting_response(ConnectionId id) const noexcept {
  const Slot* s = find(id);
  return s != nullptr && s->connection.awaiting_response();
}

std::size_t Pool::live_connections() const noexcept {
  return static_cast<std::size_t>(std::count_if(
      slots_.begin(), slots_.end(), [](const Slot& s) { return s.connection.state() != Connection::State::closed; }));
}

std::size_t Pool::outstanding() const noexcept {
  std::size_t n = queue_.size();
  for (const Slot& s : slots_) n += s.connection.outstanding();
  return n;
}

// ---- requests ------------------------------------------------------------------------------

void Pool::enqueue(Instant now, Request request) {
  now = latest_now_.observe(now);
  if (request.bytes.empty()) {
    outcomes_.push_back(Outcome{
        request.id, tl::unexpected(make_error(ErrorCode::unavailable, Certainty::definite, false, "empty request"))});
    return;
  }
  if (closed_) {
    outcomes_.push_back(Outcome{request.id, tl::unexpected(make_error(ErrorCode::closed, Certainty::definite, false,
                                                                      "the connection pool is closed"))});
    return;
  }
  if (queue_.size() >= options_.transport.max_queued_requests) {
    outcomes_.push_back(Outcome{
        request.id, tl::unexpected(make_error(ErrorCode::unavailable, Certainty::definite, true,
                                              "too many requests waiting for a connection (max_queued_requests)"))});
    return;
  }
  connects_paused_ = false;  // a new request (one accepted, not one refused) may try a connection again
  queue_.push_back(std::move(request));
  dispatch(now);
  sweep();
}

void Pool::close(Instant now) {
  (void)latest_now_.observe(now);  // time is kept for the inputs after it
  if (closed_) return;
  closed_ = true;
  // Connects not yet carried out never happen: their slots are closed below.
  std::erase_if(commands_, [](const IoCommand& c) { return std::holds_alternative<Connect>(c); });
  for (Slot& s : slots_) {
    const auto before = s.connection.state();
    s.connection.close("the connection pool was closed");
    after_event(s, before);
  }
  for (Request& r : std::exchange(queue_, {})) {
    outcomes_.push_back(Outcome{r.id, tl::unexpected(make_error(ErrorCode::closed, Certainty::definite, false,
                                                                "the connection pool was closed before the request "
                                                                "was sent"))});
  }
  sweep();
}

// ---- dispatch ------------------------------------------------------------------------------

Pool::Slot& Pool::open_connection(Instant now) {
  ConnectionOptions o;
  o.peer = options_.host + ":" + std::to_string(options_.port);
  o.connect_timeout_ns = options_.transport.connect_timeout_ns;
  o.request_timeout_ns = options_.transport.request_timeout_ns;
  o.response_limits = options_.transport.response_limits;
  o.max_requests = options_.transport.mode == ConnectionMode::pipelined ? options_.transport.max_pipelined_requests : 1;
  // Queued again, first and in order (after_event): on the one pipelined connection that
  // keeps them ahead of everything after them. In pool mode a later request may already be
  // on another connection; there the caller's resend decides, as for any failure.
  o.hand_back_unprocessed = options_.transport.mode == ConnectionMode::pipelined;
  const ConnectionId id{next_connection_id_++};
  slots_.push_back(Slot{id, Connection(std::move(o), now), false, false, nullptr, {}, 0, false});
  commands_.emplace_back(Connect{id});
  return slots_.back();
}

/// Hands queued requests to connections, in queue order (see the file comment).
void Pool::dispatch(Instant now) {
  if (closed_) return;
  auto stale = [&](const Slot& s) {
    return s.connection.state() == Connection::State::open && s.connection.outstanding() == 0 &&
           elapsed(s.connection.idle_since(), now) > options_.transport.idle_reuse_limit_ns;
  };
  auto replace_if_stale = [&](Slot& s) {
    if (!stale(s)) return false;
    const auto before = s.connection.state();
    s.connection.close("idle for longer than idle_reuse_limit_ns");  // nothing outstanding: no outcome
    after_event(s, before);
    return true;
  };
  while (!queue_.empty()) {
    Slot* target = nullptr;
    if (options_.transport.mode == ConnectionMode::pipelined) {
      for (Slot& s : slots_) {
        if (s.connection.state() != Connection::State::closed && !replace_if_stale(s)) target = &s;
      }
      if (target == nullptr) target = &open_connection(now);
      if (!target->connection.can_accept()) return;  // max_pipelined_requests outstanding
    } else {
      std::size_t connecting = 0;
      for (Slot& s : slots_) {
        if (s.connection.state() == Connection::State::connecting) ++connecting;
        if (target == nullptr && s.connection.state() == Connection::State::open && s.connection.outstanding() == 0 &&
            !replace_if_stale(s)) {
          target = &s;
        }
      }
      if (target == nullptr) {
        // Open connections for the requests no connecting one will take; the queue's
        // head goes to whichever connection is ready first, so order is kept.
        if (!connects_paused_ && connecting < queue_.size() &&
            live_connections() < options_.transport.max_connections) {
          open_connection(now);
          continue;
        }
        return;
      }
    }
    const auto before = target->connection.state();
    target->connection.enqueue(now, std::move(queue_.front()));
    queue_.pop_front();
    after_event(*target, before);
  }
}

/// Collects what a connection produced after an input, and turns its state into
/// commands: Close once closed, Write when it has bytes to write.
void Pool::after_event(Slot& slot, Connection::State before) {
  Connection& c = slot.connection;
  while (auto outcome = c.poll_outcome()) outcomes_.push_back(std::move(*outcome));
  // Requests the server certainly did not process go out again before anything queued
  // after them (they were dispatched before it), so a connection the server closed with
  // requests behind its response never lets a later request overtake them. Their caller
  // sees no failure, and nothing but the order of arrival changes for the server.
  // One that was queued again kMaxRequeues times fails, and so do those behind it (a
  // later one sent again could land before its caller's resend).
  std::vector<Unprocessed> back = c.take_unprocessed();
  std::size_t again = 0;
  while (again < back.size() && !closed_ && back[again].request.requeues < kMaxRequeues) ++again;
  for (std::size_t i = again; i < back.size(); ++i) {
    outcomes_.push_back(Outcome{back[i].request.id, tl::unexpected(std::move(back[i].error))});
  }
  for (std::size_t i = again; i-- > 0;) {
    ++back[i].request.requeues;
    ++requeued_;
    queue_.push_front(std::move(back[i].request));
  }
  if (auto wait = c.poll_wait_sample()) note_sample(*wait);
  if (c.state() == Connection::State::closed && !slot.close_sent) {
    slot.close_sent = true;
    commands_.emplace_back(Close{slot.id});
    if (c.closed_by_stall()) {
      ++stalls_;  // every replacement counts, also once the doubling below is capped
      // Held past the next response (see note_sample): a server slower than measured is
      // waited for longer, until its slow answers are measured.
      if (stall_backoff_ < 16) ++stall_backoff_;
      responses_since_stall_ = 0;
    }
    if (before == Connection::State::connecting && !closed_) {
      ++connect_failures_;
      // Nothing else can take the queued requests now: fail them with the same cause
      // rather than reconnect in a loop (the caller's retry opens the next connection).
      const bool any_live = std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) {
        return s.connection.state() != Connection::State::closed;
      });
      // With a connection still open or connecting, the queue waits for it; no further
      // connect is tried until a new request comes or a connect succeeds (no loop).
      connects_paused_ = true;
      if (!any_live) {
        for (Request& r : std::exchange(queue_, {})) {
          outcomes_.push_back(Outcome{
              r.id, tl::unexpected(make_error(ErrorCode::unavailable, Certainty::definite, true, c.close_reason()))});
        }
      }
    } else if (connects_paused_ && !queue_.empty()) {
      // The connection the queue was waiting for (connects paused by a failure beside
      // it) has ended: the queue may try one connect again, or it would wait for good.
      // Still no loop: only a connection that had opened ends a pause, and a connect
      // that fails with nothing live fails the queue (above).
      connects_paused_ = false;
    }
  }
  const bool wants_write =
      slot.tls ? slot.cipher_handed == 0 && (!slot.cipher.empty() || c.wants_write()) : c.wants_write();
  if (wants_write && !slot.write_pending && !slot.write_short) {
    slot.write_pending = true;
    commands_.emplace_back(Write{slot.id});
  }
}

/// Drops closed connections no write uses any more, keeping their counters.
void Pool::sweep() {
  for (auto it = slots_.begin(); it != slots_.end();) {
    const Connection& c = it->connection;
    if (c.state() == Connection::State::closed && it->close_sent && !it->write_in_progress()) {
      dropped_stats_.requests_written += c.requests_written();
      dropped_stats_.responses += c.responses();
      dropped_stats_.transport_failures += c.transport_failures();
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- outputs -------------------------------------------------------------------------------

std::optional<IoCommand> Pool::poll_command() {
  if (commands_.empty()) return std::nullopt;
  IoCommand c = commands_.front();
  commands_.pop_front();
  return c;
}

std::optional<Outcome> Pool::poll_outcome() {
  if (outcomes_.empty()) return std::nullopt;
  Outcome o = std::move(outcomes_.front());
  outcomes_.pop_front();
  return o;
}

PoolStats Pool::stats() const noexcept {
  PoolStats s = dropped_stats_;
  s.connections_opened = connections_opened_;
  s.connect_failures = connect_failures_;
  s.stalls = stalls_;
  s.requeued = requeued_;
  for (const Slot& slot : slots_) {
    s.requests_written += slot.connection.requests_written();
    s.responses += slot.connection.responses();
    s.transport_failures += slot.connection.transport_failures();
  }
  return s;
}

}  // namespace prodsm::http
