// SPDX-License-Identifier: Apache-2.0
// Fuzz target: an http::Pool (pipelined or pool mode, chosen by the input) driven by a
// byte script of socket events — enqueue, take_write, on_written (all, part, nothing),
// on_bytes (fuzzer bytes or slices of canned responses), EOF, reset, connect success or
// failure, time and timeouts, close — applied to the connections the pool asked to
// Connect. After every operation the pool's guarantees are checked against a model of
// what the adapter saw; a broken one aborts with its name, as does any sanitizer finding:
//  - every request gets at most one outcome, and after close() exactly one;
//  - outcomes of one connection's requests come in the order they were handed out (in
//    pipelined mode: in enqueue order overall, requests refused at enqueue aside);
//  - a request none of whose bytes were handed out never fails indefinite, never gets a
//    response and never fails protocol_error; `unavailable` and `closed` are definite;
//  - take_write hands out exactly the unwritten rest of the requests on the connection,
//    then new requests in order (pipelined: in enqueue order overall; pool: one at a time);
//    a request is handed out on one connection only, unless none of its bytes were
//    written there and that connection ended (pipelined: the pool queues it again, first);
//  - the bytes of a write stay intact until its on_written, even after the Close;
//  - a write with bytes is only ever found after a Write command for that connection, or
//    after a short write on it (whose rest is the caller's to take: no Write comes for it);
//  - commands: Connect ids new and increasing, one Close per connection, at most
//    max_connections (pipelined: one) connections not closed; events for closed or
//    unknown ids change nothing;
//  - handle_timeout before every deadline changes nothing (D3); after handle_timeout(now)
//    next_deadline() is not at or before now; outstanding work always has a deadline, a
//    Write command, a write in progress or the rest of a short write to move it;
//  - outstanding() and stats().responses agree with the outcomes delivered.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "prodsm/http/pool.hpp"

namespace http = prodsm::http;
using prodsm::Certainty;
using prodsm::Duration;
using prodsm::ErrorCode;
using prodsm::Instant;
using namespace std::chrono_literals;

namespace {

[[noreturn]] void broken(const char* what, int line) {
  std::fprintf(stderr, "http_transport: invariant broken at line %d: %s\n", line, what);
  std::abort();
}
#define CHECK(cond)                       \
  do {                                    \
    if (!(cond)) broken(#cond, __LINE__); \
  } while (0)

/// Responses (and bits of them) a server might send; slices of them make pipelined and
/// split responses likely.
const std::vector<std::string>& canned() {
  static const std::vector<std::string> kResponses = {
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 204 No Content\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\n",
      "HTTP/1.0 200 OK\r\n\r\nbody until EOF",
      "HTTP/1.1 200 OK\r\n\r\nbody until EOF",
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",  // a HEAD answer, or a truncated body
      "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n",  // beyond small body limits
      "HTTP/1.1 200 OK\r\nX-Pad: " + std::string(600, 'p') + "\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
      "HTTP/2 200\r\n\r\n",
      "\r\nHTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
  };
  return kResponses;
}

std::string request_bytes(std::uint64_t id, bool head) {
  return std::string(head ? "HEAD" : "GET") + " /r" + std::to_string(id) + " HTTP/1.1\r\nHost: fuzz\r\n\r\n";
}

/// The id in a request's first bytes ("GET /r<id> " or "HEAD /r<id> "), or 0.
std::uint64_t request_id_of(std::string_view bytes) {
  for (const std::string_view prefix : {std::string_view("GET /r"), std::string_view("HEAD /r")}) {
    if (bytes.substr(0, prefix.size()) != prefix) continue;
    std::uint64_t id = 0;
    for (std::size_t i = prefix.size(); i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9'; ++i) {
      id = id * 10 + static_cast<std::uint64_t>(bytes[i] - '0');
    }
    return id;
  }
  return 0;
}

std::string joined(const http::WriteView& v) {
  std::string out;
  for (const auto part : v.spans()) out.append(part.data(), part.size());
  return out;
}

struct Req {
  std::string bytes;
  bool refused = false;     ///< its outcome came during its own enqueue
  bool handed = false;      ///< some byte appeared in a take_write
  std::uint64_t conn = 0;   ///< the connection it was handed out on
  std::size_t written = 0;  ///< bytes reported written
  int outcomes = 0;
};

struct Conn {
  bool close_seen = false;
  bool write_cmd = false;              ///< a Write command came and no take_write since
  bool writing = false;                ///< a take_write with bytes not yet reported by on_written
  bool short_write = false;            ///< the last write wrote less than handed: the caller takes the rest
  http::WriteView view{};              ///< that write
  std::string taken;                   ///< its bytes when handed out
  std::vector<std::uint64_t> parts;    ///< the request of each of its spans
  std::vector<std::uint64_t> handed;   ///< requests handed out on it, in order
  std::vector<std::uint64_t> pending;  ///< of those, the ones not completely written, in order
};

class Driver {
 public:
  Driver(http::PoolOptions options, Instant start)
      : pool_(http::Pool::create(std::move(options)).value()), now_(start) {
    pipelined_ = pool_.options().transport.mode == http::ConnectionMode::pipelined;
  }

  void run(FuzzedDataProvider& in) {
    for (int step = 0; step < 400 && in.remaining_bytes() > 0; ++step) {
      const auto op = in.ConsumeIntegralInRange<int>(0, 19);
      switch (op) {
        case 0:
        case 1: {
          const bool head = in.ConsumeBool();
          enqueue(head, in.ConsumeBool());
          break;
        }
        case 2: take(pick(in)); break;
        case 3: written(pick(in), Written::all, 0); break;
        case 4: {
          const std::size_t c = pick(in);
          written(c, Written::part, in.ConsumeIntegral<std::uint16_t>());
          break;
        }
        case 5: written(pick(in), Written::none, 0); break;
        case 6: {
          const std::size_t c = pick(in);
          const std::string& r = canned()[in.ConsumeIntegralInRange<std::size_t>(0, canned().size() - 1)];
          const auto from = in.ConsumeIntegralInRange<std::size_t>(0, r.size());
          const auto to = in.ConsumeBool() ? r.size() : in.ConsumeIntegralInRange<std::size_t>(from, r.size());
          bytes(c, std::string_view(r).substr(from, to - from));
          break;
        }
        case 7: {
          const std::size_t c = pick(in);
          bytes(c, in.ConsumeRandomLengthString(64));
          break;
        }
        case 8: event(pick(in), Event::eof); break;
        case 9: event(pick(in), Event::error); break;
        case 10: event(pick(in), Event::connect_failed); break;
        case 11:
        case 12: event(pick(in), Event::connected); break;
        case 13: now_ += std::chrono::microseconds{in.ConsumeIntegralInRange<int>(0, 20'000)}; break;
        case 14: timeout(); break;
        case 15:
          if (const auto d = pool_.next_deadline(); d && *d > now_) now_ = *d;
          timeout();
          break;
        case 16: early_timeout(); break;
        case 17: {  // a round trip: write everything, answer with a whole canned response
          const std::size_t c = pick(in);
          take(c);
          written(c, Written::all, 0);
          bytes(c, canned()[in.ConsumeIntegralInRange<std::size_t>(0, 3)]);
          break;
        }
        case 18: unknown_ids(); break;
        case 19:
          if (in.ConsumeIntegralInRange(0, 7) == 0) close();
          break;
        default: break;
      }
    }
    finish();
  }

 private:
  enum class Written : std::uint8_t { all, part, none };
  enum class Event : std::uint8_t { eof, error, connect_failed, connected };

  /// A connection index (0 = none known yet: the operation is skipped), mostly a live one.
  std::size_t pick(FuzzedDataProvider& in) {
    if (conns_.empty()) return 0;
    const auto i = in.ConsumeIntegralInRange<std::size_t>(0, conns_.size() - 1);
    if (in.ConsumeBool()) {  // prefer the newest connection the pool has not closed
      for (std::size_t k = conns_.size(); k > 0; --k) {
        if (!conns_[k - 1].close_seen) return k;
      }
    }
    return i + 1;
  }

  http::ConnectionId id_of(std::size_t c) const { return http::ConnectionId{c}; }

  void enqueue(bool head, bool retry_safe) {
    if (reqs_.size() >= 64) return;
    const std::uint64_t id = reqs_.size() + 1;
    Req model;
    model.bytes = request_bytes(id, head);
    reqs_.push_back(std::move(model));
    http::Request r;
    r.id = http::RequestId{id};
    r.bytes = reqs_.back().bytes;
    r.head = head;
    r.retry_safe = retry_safe;
    pool_.enqueue(now_, std::move(r));
    drain(id);
  }

  void take(std::size_t c) {
    if (c == 0) return;
    Conn& k = conns_[c - 1];
    const http::WriteView v = pool_.take_write(id_of(c), now_);
    const bool had_cmd = std::exchange(k.write_cmd, false);
    const bool was_short = std::exchange(k.short_write, false);
    if (k.writing || k.close_seen) {
      CHECK(v.empty());  // one write at a time; a closed connection writes nothing
      drain(0);
      return;
    }
    if (v.empty()) {
      drain(0);
      return;
    }
    CHECK(had_cmd || was_short);  // bytes to write were announced by a Write command, or left by a short write
    std::size_t total = 0;
    k.parts.clear();
    for (std::size_t i = 0; i < v.count; ++i) {
      const std::string_view span(v.parts[i].data(), v.parts[i].size());
      CHECK(!span.empty());
      total += span.size();
      if (i < k.pending.size()) {  // the unwritten rest of a request already handed out
        const Req& q = reqs_[k.pending[i] - 1];
        CHECK(span == std::string_view(q.bytes).substr(q.written));
        k.parts.push_back(k.pending[i]);
        continue;
      }
      const std::uint64_t id = request_id_of(span);
      CHECK(id >= 1 && id <= reqs_.size());
      Req& q = reqs_[id - 1];
      CHECK(span == q.bytes);  // a new request starts at its first byte
      CHECK(q.outcomes == 0);  // nothing was decided about it yet
      CHECK(!q.refused);
      // Handed out again only when none of its bytes were written and its (pipelined)
      // connection ended: the pool queued it again, first.
      const bool again = q.handed;
      if (again) CHECK(pipelined_ && q.written == 0 && q.conn != c && conns_[q.conn - 1].close_seen);
      CHECK(k.handed.empty() || k.handed.back() < id);  // in enqueue order on the connection
      if (pipelined_) {
        CHECK(id > last_handed_ || again);  // pipelined: in enqueue order overall, the queued-again first
        last_handed_ = std::max(last_handed_, id);
      } else {
        for (const std::uint64_t prev : k.handed) CHECK(reqs_[prev - 1].outcomes == 1);  // one at a time
      }
      q.handed = true;
      q.conn = c;
      k.handed.push_back(id);
      k.pending.push_back(id);
      k.parts.push_back(id);
    }
    CHECK(total == v.bytes);
    CHECK(v.count <= http::WriteView::kMaxParts);
    k.writing = true;
    k.view = v;
    k.taken = joined(v);
    drain(0);
  }

  void written(std::size_t c, Written how, std::size_t amount) {
    if (c == 0) return;
    Conn& k = conns_[c - 1];
    if (!k.writing) {
      // No write in progress: a spurious report changes nothing.
      pool_.on_written(id_of(c), now_, how == Written::none ? 0 : amount);
      drain(0);
      return;
    }
    CHECK(joined(k.view) == k.taken);  // the bytes of a write in progress stay intact
    std::size_t n = how == Written::all ? k.view.bytes : how == Written::none ? 0 : amount % (k.view.bytes + 1);
    const bool closed_before = k.close_seen;
    pool_.on_written(id_of(c), now_, n);
    k.writing = false;
    k.short_write = n < k.view.bytes;  // the rest is the caller's to take when writable
    for (const std::uint64_t id : k.parts) {
      Req& q = reqs_[id - 1];
      const std::size_t w = std::min(n, q.bytes.size() - q.written);
      q.written += w;
      n -= w;
    }
    while (!k.pending.empty() && reqs_[k.pending.front() - 1].written == reqs_[k.pending.front() - 1].bytes.size()) {
      k.pending.erase(k.pending.begin());
    }
    if (closed_before) CHECK(!pool_.knows(id_of(c)));  // the write ended: the closed connection is gone
    drain(0);
  }

  void bytes(std::size_t c, std::string_view data) {
    if (c == 0) return;
    const bool ignored = conns_[c - 1].close_seen;
    pool_.on_bytes(id_of(c), now_, std::span<const char>(data.data(), data.size()));
    drain(0, ignored);
  }

  void event(std::size_t c, Event e) {
    if (c == 0) return;
    const bool ignored = conns_[c - 1].close_seen;
    switch (e) {
      case Event::eof: pool_.on_eof(id_of(c), now_); break;
      case Event::error: pool_.on_error(id_of(c), now_, "Connection reset by peer"); break;
      case Event::connect_failed: pool_.on_connect_failed(id_of(c), now_, "Connection refused"); break;
      case Event::connected: pool_.on_connected(id_of(c), now_); break;
    }
    drain(0, ignored);
  }

  /// Events for ids the pool never announced change nothing.
  void unknown_ids() {
    const http::ConnectionId id{conns_.size() + 1 + static_cast<std::uint64_t>(now_.time_since_epoch().count() & 3)};
    const std::string_view data = canned()[0];
    pool_.on_connected(id, now_);
    CHECK(pool_.take_write(id, now_).empty());
    pool_.on_written(id, now_, 10);
    pool_.on_bytes(id, now_, std::span<const char>(data.data(), data.size()));
    pool_.on_eof(id, now_);
    pool_.on_error(id, now_, "x");
    pool_.on_connect_failed(id, now_, "x");
    CHECK(!pool_.knows(id));
    drain(0, true);
  }

  void timeout() {
    pool_.handle_timeout(now_);
    drain(0);
    const auto d = pool_.next_deadline();
    CHECK(!d || *d > now_);  // whatever was due at now was processed
  }

  /// handle_timeout just before the earliest deadline: a no-op (D3), repeated or not.
  void early_timeout() {
    const auto d = pool_.next_deadline();
    if (!d || *d <= now_) return;
    now_ = *d - 1ns;
    const auto stall = pool_.stall_timeout();
    pool_.handle_timeout(now_);
    pool_.handle_timeout(now_);
    drain(0, true);
    CHECK(pool_.next_deadline() == d);
    CHECK(pool_.stall_timeout() == stall);
  }

  void close() {
    pool_.close(now_);
    closed_ = true;
    drain(0);
    for (const Req& q : reqs_) CHECK(q.outcomes == 1);  // close() decides every request at once
    CHECK(pool_.outstanding() == 0);
    for (const Conn& k : conns_) CHECK(k.close_seen);  // and closes every connection
  }

  void finish() {
    if (!closed_) close();
    enqueue(false, false);  // refused: the pool is closed
    for (std::size_t c = 1; c <= conns_.size(); ++c) {
      if (conns_[c - 1].writing) written(c, Written::all, 0);
      CHECK(!pool_.knows(id_of(c)));  // every write ended: nothing is kept
    }
    for (const Req& q : reqs_) CHECK(q.outcomes == 1);
    CHECK(!pool_.next_deadline().has_value());
  }

  /// Drains commands and outcomes and checks them. `enqueued`: the id of the request
  /// just enqueued (the only one that may get an outcome now). `quiet`: the operation
  /// must change nothing (closed or unknown id, a handle_timeout before the deadline).
  void drain(std::uint64_t enqueued, bool quiet = false) {
    while (auto cmd = pool_.poll_command()) {
      CHECK(!quiet);
      if (const auto* x = std::get_if<http::Connect>(&*cmd)) {
        CHECK(x->id.value == conns_.size() + 1);  // new ids, in order
        CHECK(!closed_);
        conns_.emplace_back();
      } else if (const auto* w = std::get_if<http::Write>(&*cmd)) {
        CHECK(w->id.value >= 1 && w->id.value <= conns_.size());
        CHECK(!conns_[w->id.value - 1].close_seen);
        CHECK(!conns_[w->id.value - 1].short_write);  // the rest of a short write is the caller's to take
        conns_[w->id.value - 1].write_cmd = true;
      } else if (const auto* cl = std::get_if<http::Close>(&*cmd)) {
        CHECK(cl->id.value >= 1 && cl->id.value <= conns_.size());
        Conn& k = conns_[cl->id.value - 1];
        CHECK(!k.close_seen);  // one Close per connection
        k.close_seen = true;
        k.write_cmd = false;
      }
    }
    while (auto o = pool_.poll_outcome()) {
      CHECK(!quiet);
      check_outcome(*o, enqueued);
    }
    std::size_t live = 0;
    bool moving = false;  // something will move the outstanding requests on
    for (const Conn& k : conns_) {
      live += k.close_seen ? 0 : 1;
      moving = moving || k.write_cmd || k.writing || (k.short_write && !k.close_seen);
    }
    for (std::size_t c = 1; c <= conns_.size(); ++c) {
      const Conn& k = conns_[c - 1];
      // Known while open or connecting, or closed with a write in progress.
      CHECK(pool_.knows(id_of(c)) == (!k.close_seen || k.writing));
    }
    CHECK(live <= (pipelined_ ? 1U : pool_.options().transport.max_connections));
    CHECK(pool_.outstanding() == reqs_.size() - outcomes_);
    CHECK(pool_.stats().responses == responses_);
    if (pool_.outstanding() > 0) CHECK(moving || pool_.next_deadline().has_value());  // no silent hang
    const Duration stall = pool_.stall_timeout();
    const auto& t = pool_.options().transport;
    if (t.stall.enabled) {
      CHECK(stall <= t.request_timeout_ns);
      CHECK(stall >= std::min(t.stall.min_ns, t.request_timeout_ns));
    } else {
      CHECK(stall == Duration{0});
    }
  }

  void check_outcome(const http::Outcome& o, std::uint64_t enqueued) {
    const std::uint64_t id = o.id.value;
    CHECK(id >= 1 && id <= reqs_.size());
    Req& q = reqs_[id - 1];
    CHECK(q.outcomes == 0);  // never two outcomes
    ++q.outcomes;
    ++outcomes_;
    if (enqueued != 0) {
      CHECK(id == enqueued);  // an enqueue decides nothing but the request it refuses
      q.refused = true;
    }
    if (o.result) {
      ++responses_;
      CHECK(q.handed);  // only a request handed out can be answered
    } else {
      const prodsm::Error& e = o.result.error();
      if (e.certainty == Certainty::indefinite) CHECK(q.handed);  // never handed out: definite
      switch (e.code) {
        case ErrorCode::unavailable: CHECK(e.certainty == Certainty::definite); break;
        case ErrorCode::closed: CHECK(e.certainty == Certainty::definite && closed_); break;
        case ErrorCode::protocol_error: CHECK(q.handed); break;
        case ErrorCode::connection_lost: CHECK(e.retryable); break;
        default: broken("an error code the transport never uses", __LINE__);
      }
      CHECK(!e.message.empty());
    }
    if (q.handed) {  // in the order handed out on its connection
      for (const std::uint64_t prev : conns_[q.conn - 1].handed) {
        if (prev == id) break;
        CHECK(reqs_[prev - 1].outcomes == 1);
      }
    }
    if (pipelined_ && !q.refused) {  // one connection at a time: enqueue order overall
      CHECK(id > last_outcome_);
      last_outcome_ = id;
    }
  }

  http::Pool pool_;
  Instant now_;
  bool pipelined_ = true;
  bool closed_ = false;
  std::vector<Req> reqs_;    ///< request id - 1
  std::vector<Conn> conns_;  ///< connection id - 1
  std::uint64_t outcomes_ = 0;
  std::uint64_t responses_ = 0;
  std::uint64_t last_handed_ = 0;
  std::uint64_t last_outcome_ = 0;
};

http::PoolOptions options_from(FuzzedDataProvider& in) {
  http::PoolOptions o;
  o.host = "fuzz";
  o.port = 80;
  auto& t = o.transport;
  t.mode = in.ConsumeBool() ? http::ConnectionMode::pool : http::ConnectionMode::pipelined;
  t.max_connections = in.ConsumeIntegralInRange<std::uint32_t>(1, 4);
  t.max_pipelined_requests = in.ConsumeIntegralInRange<std::uint32_t>(1, 20);
  t.connect_timeout_ns = std::chrono::milliseconds{in.ConsumeIntegralInRange(1, 50)};
  t.request_timeout_ns = std::chrono::milliseconds{in.ConsumeIntegralInRange(1, 200)};
  t.idle_reuse_limit_ns = std::chrono::milliseconds{in.ConsumeIntegralInRange(0, 20)};
  t.stall.enabled = in.ConsumeIntegralInRange(0, 3) != 0;
  t.stall.min_ns = std::chrono::microseconds{in.ConsumeIntegralInRange(100, 20'000)};
  t.stall.initial_ns = t.stall.min_ns + std::chrono::microseconds{in.ConsumeIntegralInRange(0, 50'000)};
  t.response_limits.max_header_bytes = in.ConsumeIntegralInRange<std::size_t>(256, 2048);
  t.response_limits.max_headers = in.ConsumeIntegralInRange<std::size_t>(8, 16);
  t.response_limits.max_body_bytes = in.ConsumeIntegralInRange<std::size_t>(1024, 4096);
  t.max_queued_requests = in.ConsumeIntegralInRange<std::uint32_t>(1, 16);
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  http::PoolOptions options = options_from(in);
  if (options.validate()) return 0;  // every generated option is in range; defensive
  Driver driver(std::move(options), Instant{} + 1s);
  driver.run(in);
  return 0;
}
