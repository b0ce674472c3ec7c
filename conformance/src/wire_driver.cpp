// SPDX-License-Identifier: Apache-2.0
// The wire targets' shared driver (wire_driver.hpp).
#include "wire_driver.hpp"

#include "prodsm/conformance/model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace prodsm::conformance::detail {

using namespace std::chrono_literals;

WireDriver::WireDriver(const TraceConfig& config, RealTimeOptions rt, Capabilities caps,
                       std::unique_ptr<WireServer> wire, bool pipelined)
    : rt_{rt}, caps_{caps}, pipelined_{pipelined}, wire_{std::move(wire)}, sends_{config}, server_{config} {
  trace_.config = config;
}

Instant WireDriver::trace_time(Clock::time_point t) const {
  return Instant{} + std::chrono::duration_cast<Duration>((t - start_) / rt_.time_scale);
}

std::size_t WireDriver::begin(Input::Kind kind) {
  trace_.steps.emplace_back();
  trace_.steps.back().input.kind = kind;
  trace_.steps.back().input.at = trace_time(Clock::now());
  return trace_.steps.size() - 1;
}

bool WireDriver::run(const Command& c) {
  using K = Command::Kind;
  unsupported_.clear();
  between_commands();
  switch (c.kind) {
    case K::submit:
    case K::flush:
    case K::close:
    case K::close_stream:
    case K::abort: return client_command(c);
    case K::advance: return advance(c.advance_ns);
    case K::invalid_ack:
      if (c.invalid == Command::Invalid::unknown_batch) {
        unsupported_ =
            "invalid_ack(unknown_batch): an HTTP connection matches every response to its request (an unsolicited one "
            "is a transport protocol error)";
        return false;
      }
      [[fallthrough]];
    case K::ack:
    case K::duplicate:
    case K::fail: {
      if (pipelined_ && c.which == Command::Which::newest && server_.unanswered() > 1) {
        unsupported_ =
            "answering the newest send first: the target pipelines its requests on one connection, whose answers come "
            "in request order";
        return false;
      }
      auto answered = server_.answer(c);
      if (!answered) return false;
      std::string why;
      auto wire = ds_wire_answer(answered->second, answered->first, &why);
      if (!wire) {
        server_.unanswer(answered->first);
        unsupported_ = why;
        return false;
      }
      const std::size_t i = deliver(answered->first, answered->second, *wire);
      settle();
      finalize(i);
      return true;
    }
    case K::restart_server:
      // Every unanswered send fails (its connection reset), one answer step each, in send
      // order as the core target delivers them: the target reads each reset before the
      // next (a pool of connections would otherwise notice them in any order).
      for (auto& [sent, response] : server_.restart(c.server_state_kept)) {
        const std::size_t i = deliver(sent, response, WireAnswer{tl::unexpected(response.error)});
        settle();
        finalize(i);
      }
      return true;
  }
  return false;
}

void WireDriver::finish() {
  const Duration quiet = std::max<Duration>(5 * rt_.quiet_real_ns, std::chrono::milliseconds{50});
  auto last_new = Clock::now();
  const auto give_up = last_new + rt_.settle_timeout_real_ns;
  while (Clock::now() - last_new < quiet && Clock::now() < give_up) {
    if (collect_wire() || collect_outcomes()) last_new = Clock::now();
    std::this_thread::sleep_for(1ms);
  }
  if (!pending_.empty()) finalize(begin(Input::Kind::advance));
}

void WireDriver::between_commands() {
  const bool wire = collect_wire();
  const bool outcomes = collect_outcomes();
  if (!wire && !outcomes) return;
  finalize(begin(Input::Kind::advance));  // what the target did on its own, as a timer step
}

bool WireDriver::advance(Duration d) {
  const Duration real = d * rt_.time_scale + 1ms;  // the margin: a deadline at the end has fired
  if (advanced_real_ + real > rt_.max_advance_real_ns) {
    unsupported_ =
        "advance(" + std::to_string(std::chrono::duration<double, std::milli>(d).count()) +
        " ms): a real-time target would spend more than " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(rt_.max_advance_real_ns).count()) +
        " ms of real time advancing in one run (time scale " + std::to_string(rt_.time_scale) + ")";
    return false;
  }
  advanced_real_ += real;
  std::this_thread::sleep_for(real);
  const std::size_t i = begin(Input::Kind::advance);
  settle();
  finalize(i);
  return true;
}

std::size_t WireDriver::deliver(const PendingSend& sent, const Response& response, const WireAnswer& answer) {
  const std::size_t i = begin(sent.stream_close ? Input::Kind::respond_stream_close : Input::Kind::respond);
  Input& in = trace_.steps[i].input;
  in.response = response;
  if (sent.stream_close) {
    in.stream_close_index = sent.index;
  } else {
    in.send_index = sent.index;
    // An ack acknowledges the batch only when the producer still waits for that attempt:
    // one superseded by an epoch claim (S5) or already resolved is ignored, and the batch
    // may still be resent (the reference model says which answers take effect).
    const bool ack = response.kind == Response::Kind::ack && !response.invalid;
    const bool effective = ack && predict(trace_).effective_answer.at(i);
    sends_.answered(sent.index, effective);
  }
  const auto request = request_of_.find({sent.stream_close, sent.index});
  if (request == request_of_.end()) return i;
  bool written = false;
  if (answer) {
    written = wire_->respond(request->second, http_response_bytes(*answer));
  } else if (answer.error().code == ErrorCode::request_timeout) {
    http::Response timeout;  // a proxy's or the server's 408: indefinite, retryable (S7)
    timeout.status = 408;
    timeout.body = "request timeout";
    written = wire_->respond(request->second, http_response_bytes(timeout));
  } else if (answer.error().code == ErrorCode::protocol_error) {
    written = wire_->respond(request->second, "NOT HTTP AT ALL\r\n\r\n");
  } else {  // connection_lost
    written = wire_->reset(request->second);
  }
  if (written) ++answers_written_;
  return i;
}

void WireDriver::answer_other(const WireRequest& r) {
  // Not a producer request: the stream exists and is empty as far as reads go (an SDK may
  // look before it appends); it is not part of the trace.
  http::Response other;
  const std::string content_type = trace_.config.json ? "application/json" : "application/octet-stream";
  if (r.method == "POST") {  // a sequenced close: closes the stream at its tail, echoing the stamp
    other.status = 204;
    other.headers = {{"Stream-Closed", "true"}, {"Stream-Next-Offset", offset_text(0)}};
    for (const char* h : {"Producer-Epoch", "Producer-Seq"}) {
      if (auto v = r.header(h)) other.headers.push_back({h, std::string(*v)});
    }
  } else if (r.method == "PUT") {
    other.status = 201;
    other.headers = {{"Content-Type", content_type}, {"Stream-Next-Offset", offset_text(0)}};
  } else if (r.method == "HEAD" || r.method == "GET") {
    other.status = 200;
    other.headers = {
        {"Content-Type", content_type}, {"Stream-Next-Offset", offset_text(0)}, {"Stream-Up-To-Date", "true"}};
    if (r.method == "GET") other.body = trace_.config.json ? "[]" : "";
  } else {
    other.status = 405;
  }
  wire_->respond(r.id, http_response_bytes(other));
}

bool WireDriver::collect_wire() {
  bool any = false;
  while (auto r = wire_->take(Clock::now())) {
    any = true;
    auto o = sends_.decode(*r, sends_made_, stream_close_requests_);
    if (!o) {
      answer_other(*r);
      continue;
    }
    o->at = trace_time(r->arrived);
    if (o->kind == Observation::Kind::send) {
      request_of_[{false, o->send_index}] = r->id;
      ++sends_made_;
      server_.sent(*o);
    } else {
      request_of_[{true, o->stream_close_index}] = r->id;
      ++stream_close_requests_;
      server_.sent_stream_close(*o);
    }
    pending_.push_back(Pending{r->arrived, std::move(o), std::nullopt});
  }
  return any;
}

void WireDriver::settle() {
  const auto start = Clock::now();
  auto last_new = start;
  while (true) {
    const bool wire = collect_wire();
    const bool outcomes = collect_outcomes();
    if (wire || outcomes) last_new = Clock::now();
    const auto now = Clock::now();
    if (now - last_new >= rt_.quiet_real_ns && quiescent(start)) return;
    if (now - start >= rt_.settle_timeout_real_ns) {
      // Diagnostics only (the trace shows what happened): which condition never held.
      if (std::getenv("PRODSM_CONFORM_DEBUG") != nullptr) {
        std::fprintf(stderr, "prodsm conform: step %zu did not settle within %lld ms (quiet: %s; %s)\n",
                     trace_.steps.size() - 1,
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()),
                     now - last_new >= rt_.quiet_real_ns ? "yes" : "no", unsettled().c_str());
      }
      return;
    }
    std::this_thread::sleep_for(100us);
  }
}

Completion* WireDriver::pending_completion(Completion::Kind kind, std::uint64_t call) {
  for (auto& p : pending_) {
    if (p.completion && p.completion->kind == kind && p.completion->call == call) return &*p.completion;
  }
  return nullptr;
}

std::optional<Observation> WireDriver::convert(Completion& /*c*/, Step& /*step*/,
                                               std::optional<std::uint64_t> /*close_call*/) {
  return std::nullopt;
}

void WireDriver::finalize(std::size_t i, std::optional<std::uint64_t> close_call) {
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) { return a.at < b.at; });
  for (auto& p : std::exchange(pending_, {})) {
    if (p.observation) {
      trace_.steps[i].observed.push_back(std::move(*p.observation));
    } else if (auto o = convert(*p.completion, trace_.steps[i], close_call)) {
      trace_.steps[i].observed.push_back(std::move(*o));
    }
  }
}

}  // namespace prodsm::conformance::detail

namespace prodsm::conformance {

using namespace std::chrono_literals;

std::optional<std::string> RealTimeOptions::validate() const {
  if (time_scale < 1 || time_scale > 1000)
    return "time_scale: must be 1..1000 (got " + std::to_string(time_scale) + ")";
  if (max_advance_real_ns < 1ms || max_advance_real_ns > 10min) return "max_advance_real_ns: must be 1 ms..10 min";
  if (quiet_real_ns < 100us || quiet_real_ns > 1s) return "quiet_real_ns: must be 100 us..1 s";
  if (settle_timeout_real_ns < 1ms || settle_timeout_real_ns > 1min)
    return "settle_timeout_real_ns: must be 1 ms..1 min";
  return std::nullopt;
}

}  // namespace prodsm::conformance
