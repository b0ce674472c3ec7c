// SPDX-License-Identifier: Apache-2.0
// The core target's driver for runs with stream operations (CoreConfig::stream_operations,
// C4): prodsm's Durable Streams producer client (ds::ProducerClient — the core, request
// encoding and response classification, what both adapters run) on virtual time. The
// simulated server's answers reach it on the wire (ds_wire.hpp): as HTTP responses it
// classifies itself (S3–S7), or as the transport failure an HTTP connection reports.
//
// What the bare core driver (core_driver.cpp) can do that this one cannot: an
// invalid_ack of kind unknown_batch (an HTTP connection matches every response to its
// request; an unsolicited one is a transport protocol error, tested in tests/http).
#include <algorithm>
#include <chrono>
#include <map>

#include "ds_wire.hpp"
#include "prodsm/conformance/driver.hpp"
#include "prodsm/ds/client.hpp"
#include "sim_server.hpp"
#include "timed_driver.hpp"

namespace prodsm::conformance {
namespace {

class ClientDriver final : public detail::TimedDriver<ClientDriver> {
  using Base = detail::TimedDriver<ClientDriver>;

 public:
  ClientDriver(ds::ProducerClient client, const TraceConfig& config) : Base{config}, client_{std::move(client)} {}

  bool run(const Command& c) override {
    using K = Command::Kind;
    unsupported_.clear();
    if (auto shared = run_shared(c)) return *shared;
    switch (c.kind) {
      case K::close: {
        Step& step = begin(Input::Kind::close);
        const bool closed_before = closed_.has_value();
        client_.close(now_);
        drain(step);
        // As the core reports it: the first close's result is the Closed it emits; a
        // later close returns that result at the call (C1).
        if (closed_before) {
          step.result.kind = SyncResult::Kind::closed_result;
          step.result.ok = closed_->has_value();
          if (!*closed_) step.result.error = closed_->error();
        }
        return true;
      }
      case K::close_stream: {
        Step& step = begin(Input::Kind::close_stream);
        auto r = client_.close_stream(now_);
        step.result.kind = SyncResult::Kind::stream_close;
        step.result.ok = r.has_value();
        if (r) {
          step.result.value = *r;
        } else {
          step.result.error = r.error();
        }
        drain(step);
        return true;
      }
      case K::invalid_ack:
        if (c.invalid == Command::Invalid::unknown_batch) {
          unsupported_ =
              "invalid_ack(unknown_batch): an HTTP connection matches every response to its request (an unsolicited "
              "one is a transport protocol error)";
          return false;
        }
        [[fallthrough]];
      case K::ack:
      case K::duplicate:
      case K::fail: {
        auto answered = server_.answer(c);
        if (!answered) return false;
        std::string why;
        auto wire = detail::ds_wire_answer(answered->second, answered->first, &why);
        if (!wire) {
          server_.unanswer(answered->first);
          unsupported_ = why;
          return false;
        }
        deliver(answered->first, answered->second, std::move(*wire));
        return true;
      }
      case K::restart_server: {
        for (auto& [sent, response] : server_.restart(c.server_state_kept)) {
          deliver(sent, response, detail::WireAnswer{tl::unexpected(response.error)});
        }
        return true;
      }
      default: return false;
    }
  }

  ds::ProducerClient& producer() { return client_; }

  /// The client's drive rule: events first, then requests. The client queues them apart,
  /// and a request it makes in reaction to an event (the stream close after its barrier)
  /// comes after it.
  void drain(Step& step) {
    for (;;) {
      const bool events = take_events(step);
      const bool requests = take_requests(step);
      if (!events && !requests) break;
    }
  }

 private:
  /// Records every queued event; true if there was one. Delivered outcomes free room
  /// under max_pending_records (R3), which may queue CapacityAvailable.
  bool take_events(Step& step) {
    std::uint64_t delivered = 0;
    bool any = false;
    while (auto event = client_.poll_event()) {
      any = true;
      Observation o;
      std::visit(
          [&](auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, ds::RecordsCompleted>) {
              o.kind = Observation::Kind::done;
              o.first_ticket = e.first.value;
              o.last_ticket = e.last.value;
              o.ok = e.result.has_value();
              if (e.result) {
                o.ack.next_offset = (*e.result)->next_offset;
                o.ack.duplicate = (*e.result)->duplicate;
              } else {
                o.error = e.result.error();
              }
              delivered += e.last.value - e.first.value + 1;
            } else if constexpr (std::is_same_v<T, BarrierCompleted>) {
              o.kind = Observation::Kind::barrier;
              o.barrier = e.barrier.value;
              o.ok = e.result.has_value();
              if (!e.result) o.error = e.result.error();
            } else if constexpr (std::is_same_v<T, Closed>) {
              o.kind = Observation::Kind::closed;
              o.ok = e.result.has_value();
              if (!e.result) o.error = e.result.error();
              closed_ = e.result;
            } else if constexpr (std::is_same_v<T, ds::StreamCloseCompleted>) {
              o.kind = Observation::Kind::stream_closed;
              o.op = e.op;
              o.ok = e.result.has_value();
              if (e.result) {
                o.final_offset = e.result->final_offset;
              } else {
                o.error = e.result.error();
              }
            } else {
              o.kind = Observation::Kind::capacity;
            }
          },
          *event);
      step.observed.push_back(std::move(o));
    }
    if (delivered > 0) client_.on_delivered(now_, delivered);  // the outcomes reached their owner
    return any;
  }

  /// Records every queued request (a send or a stream-close request); true if there was one.
  bool take_requests(Step& step) {
    bool any = false;
    while (auto request = client_.poll_request()) {
      any = true;
      Observation o;
      const std::string& bytes = request->request.bytes;
      o.body = bytes.substr(bytes.size() - std::min(request->body_bytes, bytes.size()));
      if (request->kind == ds::RequestKind::stream_close) {
        o.kind = Observation::Kind::stream_close;
        o.op = request->stream_close_op;
        o.stream_close_index = stream_close_requests_++;
        tags_[{true, o.stream_close_index}] = request->tag;
        server_.sent_stream_close(o);
      } else {
        const ds::RequestBatch& b = *request->batch;
        o.kind = Observation::Kind::send;
        o.send_index = sends_++;
        o.batch = b.batch.value;
        o.attempt = b.attempt;
        o.first_ticket = b.first_ticket.value;
        o.count = b.record_count;
        o.stamp.sequenced = b.stamp.sequenced;
        o.stamp.epoch = b.stamp.epoch;
        o.stamp.seq = b.stamp.seq;
        tags_[{false, o.send_index}] = request->tag;
        server_.sent(o);
      }
      step.observed.push_back(std::move(o));
    }
    return any;
  }

  /// One answer step: the wire form of the simulated server's response, given to the client.
  void deliver(const detail::PendingSend& sent, const Response& response, detail::WireAnswer wire) {
    Step& step = begin(sent.stream_close ? Input::Kind::respond_stream_close : Input::Kind::respond);
    if (sent.stream_close) {
      step.input.stream_close_index = sent.index;
    } else {
      step.input.send_index = sent.index;
    }
    step.input.response = response;
    const auto tag = tags_.find({sent.stream_close, sent.index});
    if (tag != tags_.end()) client_.handle_outcome(now_, tag->second, std::move(wire));
    drain(step);
  }

  ds::ProducerClient client_;
  std::size_t stream_close_requests_ = 0;
  std::map<std::pair<bool, std::size_t>, std::uint64_t> tags_;  ///< (stream close?, index) -> request tag
  std::optional<tl::expected<void, Error>> closed_;
};

}  // namespace

std::unique_ptr<Driver> make_client_driver(const CoreConfig& config, std::string* error) {
  ds::ProducerOptions options;
  options.url = "http://127.0.0.1/conformance";
  const bool json = config.durable_streams.protocol.body_format == DurableStreamsPolicy::BodyFormat::json;
  options.content_type = json ? "application/json" : "application/octet-stream";
  options.producer = config.durable_streams;
  options.start = ds::ProducerStart::resume;  // exactly the configured epoch; duplicates accepted as the core's default
  options.max_pending_records = 1U << 24;     // the core's limits decide (R1); outcomes are delivered at once
  auto client = ds::ProducerClient::create(options, std::chrono::system_clock::time_point{});
  if (!client) {
    if (error) *error = client.error();
    return nullptr;
  }
  return std::make_unique<ClientDriver>(std::move(*client), trace_config(config));
}

}  // namespace prodsm::conformance
