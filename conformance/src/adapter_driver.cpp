// SPDX-License-Identifier: Apache-2.0
// prodsm's adapters as conformance targets (adapter_targets.hpp): the real Asio or
// blocking Durable Streams producer, on real time, talking HTTP over loopback to the
// harness's receiving server (wire_server.hpp), which holds every request until the
// simulated server's answer is decided. Sends are read off the wire (wire_sends.hpp);
// completions are observed in the producer's callbacks (or, for the blocking producer's
// flush and close, the calls returning), each with how it ran (CallbackFacts: A1–A4).
//
// Time: trace time is real time divided by RealTimeOptions::time_scale; every instant
// recorded is measured (a step's when it began, an observation's when it happened). What
// the producer does while the harness is between commands (a timer that fired) is
// recorded as a timer step of its own before the next command.
//
// A step ends at quiescence: every send the producer made arrived, every completion's
// callback ran, every answer given was read by the producer, every thrown callback was
// reported — and then nothing new for quiet_real_ns.
#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "adapter_shim.hpp"
#include "ds_wire.hpp"
#include "prodsm/conformance/adapter_targets.hpp"
#include "prodsm/durable_streams.hpp"
#include "wire_driver.hpp"

namespace prodsm::conformance {
namespace {

using Clock = std::chrono::steady_clock;
using detail::Completion;
using namespace std::chrono_literals;

/// Shared by the driver and every callback it gave the producer (so a callback that runs
/// after the driver is gone is harmless): completions, the threads they ran on, A3's
/// reports, and the lock probe.
class Recorder {
 public:
  explicit Recorder(std::thread::id harness) : harness_{harness} {}
  ~Recorder() { stop_probe(); }

  /// How the callback starting now on this thread runs (its thread, overlap, lock).
  CallbackFacts enter(std::optional<std::size_t> submit_step) {
    CallbackFacts f;
    f.submit_step = submit_step;
    f.overlapped = active_.fetch_add(1) > 0;
    {
      std::lock_guard lock(mu_);
      const auto id = std::this_thread::get_id();
      if (id != harness_) {
        auto [it, fresh] = threads_.emplace(id, static_cast<std::uint32_t>(threads_.size() + 1));
        f.thread = it->second;
      }
    }
    f.under_lock = under_lock();
    return f;
  }
  void leave() { active_.fetch_sub(1); }

  void add(Completion c) {
    std::lock_guard lock(mu_);
    if (c.kind == Completion::Kind::record) ++records_;
    if (c.kind == Completion::Kind::flush) ++flushes_;
    if (c.facts && c.facts->threw) ++thrown_;
    completions_.push_back(std::move(c));
  }
  std::vector<Completion> take() {
    std::lock_guard lock(mu_);
    return std::exchange(completions_, {});
  }
  /// A3: on_callback_exception received the exception of `ticket`'s callback.
  void reported(std::uint64_t ticket) {
    std::lock_guard lock(mu_);
    reported_.insert(ticket);
  }
  bool was_reported(std::uint64_t ticket) {
    std::lock_guard lock(mu_);
    return reported_.count(ticket) > 0;
  }
  /// Record callbacks and flush completions so far; callbacks that threw, reports.
  struct Counts {
    std::uint64_t records = 0, flushes = 0, thrown = 0, reported = 0;
  };
  Counts counts() {
    std::lock_guard lock(mu_);
    return {records_, flushes_, thrown_, reported_.size()};
  }

  /// The ticket of the submit at `step` (set by the harness as submit returns); a
  /// callback may run before that, so it waits for it (bounded). nullopt: refused.
  void set_ticket(std::size_t step, std::optional<std::uint64_t> ticket) {
    {
      std::lock_guard lock(mu_);
      tickets_[step] = ticket;
    }
    cv_.notify_all();
  }
  std::optional<std::uint64_t> ticket_of(std::size_t step) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 10s, [&] { return tickets_.count(step) > 0; });
    const auto it = tickets_.find(step);
    return it == tickets_.end() ? std::nullopt : it->second;
  }

  /// The lock probe: `probe` takes the producer's lock (its stats()). It runs on a
  /// thread of its own; a callback asks it and waits up to 1 s.
  void start_probe(std::function<void()> probe) {
    probe_ = std::move(probe);
    prober_ = std::thread([this] {
      std::unique_lock lock(probe_mu_);
      while (true) {
        probe_cv_.wait(lock, [&] { return stopping_ || asked_ > answered_; });
        if (stopping_) return;
        const std::uint64_t upto = asked_;
        lock.unlock();
        probe_();
        lock.lock();
        answered_ = upto;
        probe_cv_.notify_all();
      }
    });
  }
  void stop_probe() {
    {
      std::lock_guard lock(probe_mu_);
      stopping_ = true;
    }
    probe_cv_.notify_all();
    if (prober_.joinable()) prober_.join();
  }

 private:
  bool under_lock() {
    std::unique_lock lock(probe_mu_);
    if (stopping_ || !prober_.joinable()) return false;
    const std::uint64_t mine = ++asked_;
    probe_cv_.notify_all();
    return !probe_cv_.wait_for(lock, 1s, [&] { return stopping_ || answered_ >= mine; });
  }

  const std::thread::id harness_;
  std::atomic<int> active_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::thread::id, std::uint32_t> threads_;
  std::vector<Completion> completions_;
  std::set<std::uint64_t> reported_;
  std::map<std::size_t, std::optional<std::uint64_t>> tickets_;
  std::uint64_t records_ = 0, flushes_ = 0, thrown_ = 0;
  // the probe
  std::function<void()> probe_;
  std::thread prober_;
  std::mutex probe_mu_;
  std::condition_variable probe_cv_;
  bool stopping_ = false;
  std::uint64_t asked_ = 0, answered_ = 0;
};

constexpr std::string_view kThrowText = "conformance A3 probe: the callback of ticket ";

TraceAck ack_of(const ds::RecordAck& a) {
  TraceAck t;
  t.next_offset = a.next_offset();
  t.duplicate = a.duplicate();
  return t;
}

/// `d` times `k`, at most `cap`.
Duration scaled(Duration d, std::uint32_t k, Duration cap) {
  if (d.count() > cap.count() / static_cast<std::int64_t>(k)) return cap;
  return d * k;
}

/// The refusal a flush or stream close reported asynchronously stands for.
RejectReason reason_of(const Error& e) {
  if (e.code == ErrorCode::closed) return RejectReason::closed;
  if (e.code == ErrorCode::would_block) return RejectReason::would_block;
  return RejectReason::failed;
}

class AdapterDriver final : public detail::WireDriver {
 public:
  AdapterDriver(const TraceConfig& config, RealTimeOptions rt, Capabilities caps,
                std::unique_ptr<detail::WireServer> wire, std::shared_ptr<Recorder> recorder, bool pipelined)
      : WireDriver{config, rt, caps, std::move(wire), pipelined}, recorder_{std::move(recorder)} {}
  ~AdapterDriver() override {
    recorder_->stop_probe();
    if (shim_) shim_->shutdown();  // before the receiving server goes (the base's wire_)
  }

  /// Gives the driver its producer (made once the server's port is known).
  void attach(std::unique_ptr<detail::AdapterShim> shim) {
    shim_ = std::move(shim);
    recorder_->start_probe([shim = shim_.get()] { (void)shim->stats(); });
  }

 private:
  using Completion = detail::Completion;

  bool client_command(const Command& c) override {
    using K = Command::Kind;
    switch (c.kind) {
      case K::submit: {
        const std::size_t i = begin(Input::Kind::submit);
        trace_.steps[i].input.record = c.record;
        auto r = shim_->submit(c.record, record_callback(i));
        recorder_->set_ticket(i, r ? std::optional<std::uint64_t>{r->value} : std::nullopt);
        SyncResult& result = trace_.steps[i].result;
        if (r) {
          result.kind = SyncResult::Kind::ticket;
          result.value = r->value;
          sends_.accepted(c.record);
        } else {
          result.kind = SyncResult::Kind::rejected;
          result.reason = r.error().reason;
          result.error = r.error().terminal;
        }
        settle();
        finalize(i);
        return true;
      }
      case K::flush: {
        const std::size_t i = begin(Input::Kind::flush);
        const std::uint64_t call = next_call_++;
        const std::uint64_t barriers = shim_->stats().core.barriers_accepted;
        shim_->flush(outcome_callback(Completion::Kind::flush, call));
        // The producer took a barrier or refused the flush; a refusal completes with its
        // error (the adapters deliver it behind the callbacks already queued, A2).
        const bool refused = shim_->stats().core.barriers_accepted == barriers;
        settle();
        if (refused) await_completion(Completion::Kind::flush, call);
        SyncResult& result = trace_.steps[i].result;
        if (auto* done = pending_completion(Completion::Kind::flush, call); refused && done) {
          result.kind = SyncResult::Kind::rejected;
          result.reason = reason_of(done->error);
          if (result.reason == RejectReason::failed) result.error = done->error;
          refused_calls_.insert(call);
        } else {
          barrier_of_call_[call] = next_barrier_;
          result.kind = SyncResult::Kind::barrier;
          result.value = next_barrier_++;
          sends_.cut();
        }
        finalize(i);
        return true;
      }
      case K::close: {
        // As the core reports it: the first close's result is the Closed observation; a
        // later close returns that result at the call (C1).
        const std::size_t i = begin(Input::Kind::close);
        const std::uint64_t call = next_call_++;
        const bool closed_before = closed_observed_;
        sends_.cut();  // close seals the partial batch
        shim_->close(outcome_callback(Completion::Kind::close, call));
        settle();
        if (closed_before) await_completion(Completion::Kind::close, call);  // it completes at once
        finalize(i, closed_before ? std::optional<std::uint64_t>{call} : std::nullopt);
        return true;
      }
      case K::close_stream: {
        const std::size_t i = begin(Input::Kind::close_stream);
        const std::uint64_t call = next_call_++;
        const std::uint64_t op = next_op_;
        op_of_call_[call] = op;
        sends_.stream_close_started(op);
        ++stream_closes_started_;
        const std::uint64_t barriers = shim_->stats().core.barriers_accepted;
        shim_->close_stream(stream_close_callback(call));
        const bool refused = shim_->stats().core.barriers_accepted == barriers;  // its flush barrier
        settle();
        if (refused) await_completion(Completion::Kind::stream_close, call);
        SyncResult& result = trace_.steps[i].result;
        result.kind = SyncResult::Kind::stream_close;
        if (auto* done = pending_completion(Completion::Kind::stream_close, call); refused && done) {
          result.ok = false;
          result.error = done->error;
          refused_calls_.insert(call);
          sends_.stream_close_finished(op);
        } else {
          result.ok = true;
          result.value = op;
          ++next_op_;
          sends_.cut();  // its flush barrier
        }
        finalize(i);
        return true;
      }
      case K::abort: {
        // The adapters' abort() has no completion of its own: the producer's final result
        // (C1, C5) is what a close() returns after it, so the driver asks for it.
        const std::size_t i = begin(Input::Kind::abort);
        shim_->abort();
        const std::uint64_t call = next_call_++;
        shim_->close(outcome_callback(Completion::Kind::close, call));
        settle();
        await_completion(Completion::Kind::close, call);  // an aborted producer's close completes at once
        finalize(i);
        return true;
      }
      default: return false;
    }
  }

  /// Settles until the completion of `kind` for `call` came (one that completes without
  /// waiting for the server: a refusal, an aborted producer's close), within the settle
  /// timeout.
  void await_completion(Completion::Kind kind, std::uint64_t call) {
    const auto give_up = Clock::now() + rt_.settle_timeout_real_ns;
    while (pending_completion(kind, call) == nullptr && Clock::now() < give_up) settle();
  }

  bool collect_outcomes() override {
    bool any = false;
    for (auto& c : recorder_->take()) {
      any = true;
      const auto at = c.at;
      pending_.push_back(Pending{at, std::nullopt, std::move(c)});
    }
    return any;
  }

  /// Every send the producer made arrived, every completion's callback ran, every answer
  /// written was read, every exception a callback threw was reported.
  bool quiescent(Clock::time_point step_start) override {
    const ProducerAdapterStats st = shim_->stats();
    const auto counts = recorder_->counts();
    const bool sends_arrived = sends_made() >= st.core.sends ||
                               // a request failed before it was written (a closed session)
                               (Clock::now() - step_start > std::chrono::milliseconds{50} &&
                                sends_made() + stream_close_requests() >= st.session.requests_written);
    const bool callbacks = counts.records >= st.core.records_succeeded + st.core.records_failed;
    const bool barriers =
        counts.flushes + stream_closes_started_ >= st.core.barriers_completed;  // a stream close takes one
    // An answer written to a connection the producer was closing (an aborted or closed
    // producer's session) is never read: once Closed was observed, 50 ms is its chance.
    const bool answers = st.session.responses + st.session.transport_failures >= answers_written_ ||
                         (closed_observed_ && Clock::now() - step_start > std::chrono::milliseconds{50});
    const bool reported = counts.thrown == counts.reported;
    unsettled_ =
        "sends " + std::to_string(sends_made()) + "/" + std::to_string(st.core.sends) + ", callbacks " +
        std::to_string(counts.records) + "/" + std::to_string(st.core.records_succeeded + st.core.records_failed) +
        ", barriers " + std::to_string(counts.flushes + stream_closes_started_) + "/" +
        std::to_string(st.core.barriers_completed) + ", answers read " +
        std::to_string(st.session.responses + st.session.transport_failures) + "/" + std::to_string(answers_written_) +
        ", exceptions reported " + std::to_string(counts.reported) + "/" + std::to_string(counts.thrown);
    const bool settled = sends_arrived && callbacks && barriers && answers && reported;
    // Answers the producer will never read are forgotten once the step settled, so later
    // steps do not wait for them again.
    if (settled) answers_written_ = std::min(answers_written_, st.session.responses + st.session.transport_failures);
    return settled;
  }
  [[nodiscard]] std::string unsettled() const override { return unsettled_; }

  std::optional<Observation> convert(Completion& c, Step& step, std::optional<std::uint64_t> close_call) override {
    Observation o;
    o.at = trace_time(c.at);
    o.ok = c.ok;
    if (!c.ok) o.error = c.error;
    o.callback = c.facts;
    switch (c.kind) {
      case Completion::Kind::record:
        o.kind = Observation::Kind::done;
        o.first_ticket = o.last_ticket = c.call;
        if (c.ok) o.ack = c.ack;
        if (o.callback && o.callback->threw) o.callback->reported = recorder_->was_reported(c.call);
        return o;
      case Completion::Kind::flush: {
        const auto b = barrier_of_call_.find(c.call);
        if (refused_calls_.count(c.call) || b == barrier_of_call_.end()) return std::nullopt;  // the step's refusal
        o.kind = Observation::Kind::barrier;
        o.barrier = b->second;
        return o;
      }
      case Completion::Kind::close:
        if (close_call == c.call) {  // C1: close's result, once Closed came
          step.result.kind = SyncResult::Kind::closed_result;
          step.result.ok = c.ok;
          if (!c.ok) step.result.error = c.error;
        }
        if (closed_observed_) return std::nullopt;  // a second close reports the same result
        closed_observed_ = true;
        o.kind = Observation::Kind::closed;
        return o;
      case Completion::Kind::stream_close: {
        const auto op = op_of_call_.find(c.call);
        if (refused_calls_.count(c.call) || op == op_of_call_.end()) return std::nullopt;
        o.kind = Observation::Kind::stream_closed;
        o.op = op->second;
        if (c.ok) o.final_offset = c.final_offset;
        sends_.stream_close_finished(op->second);
        return o;
      }
    }
    return std::nullopt;
  }

  // ---- callbacks (on the adapter's threads) ----------------------------------------------

  /// A record callback: reports the outcome with how it ran; every third ticket's throws (A3).
  std::function<void(const ds::RecordResult&)> record_callback(std::size_t step) {
    return [rec = recorder_, step](const ds::RecordResult& r) {
      CallbackFacts f = rec->enter(step);
      const auto ticket = rec->ticket_of(step);
      Completion c;
      c.kind = Completion::Kind::record;
      c.at = Clock::now();
      c.call = ticket.value_or(UINT64_MAX);  // a refused submit's callback: A4 names it
      c.ok = r.has_value();
      if (r) {
        c.ack = ack_of(*r);
      } else {
        c.error = r.error();
      }
      f.threw = ticket && *ticket % 3 == 2;
      c.facts = f;
      const bool throw_now = f.threw;
      rec->add(std::move(c));
      rec->leave();
      if (throw_now) throw std::runtime_error(std::string(kThrowText) + std::to_string(*ticket));
    };
  }

  /// A flush's or close's outcome (a callback on the Asio producer, a returning call on
  /// the blocking one: facts only for callbacks).
  std::function<void(const ds::VoidResult&)> outcome_callback(Completion::Kind kind, std::uint64_t call) {
    return [rec = recorder_, kind, call, facts = shim_->outcomes_are_callbacks()](const ds::VoidResult& r) {
      Completion c;
      if (facts) c.facts = rec->enter(std::nullopt);
      c.kind = kind;
      c.at = Clock::now();
      c.call = call;
      c.ok = r.has_value();
      if (!r) c.error = r.error();
      rec->add(std::move(c));
      if (facts) rec->leave();
    };
  }

  std::function<void(const ds::CloseStreamResult&)> stream_close_callback(std::uint64_t call) {
    return [rec = recorder_, call, facts = shim_->outcomes_are_callbacks()](const ds::CloseStreamResult& r) {
      Completion c;
      if (facts) c.facts = rec->enter(std::nullopt);
      c.kind = Completion::Kind::stream_close;
      c.at = Clock::now();
      c.call = call;
      c.ok = r.has_value();
      if (r) {
        c.final_offset = r->final_offset;
      } else {
        c.error = r.error();
      }
      rec->add(std::move(c));
      if (facts) rec->leave();
    };
  }

  std::shared_ptr<Recorder> recorder_;
  std::unique_ptr<detail::AdapterShim> shim_;
  std::uint64_t next_call_ = 0;
  std::uint64_t next_barrier_ = 0;
  std::uint64_t next_op_ = 0;
  std::map<std::uint64_t, std::uint64_t> barrier_of_call_;
  std::map<std::uint64_t, std::uint64_t> op_of_call_;
  std::set<std::uint64_t> refused_calls_;
  bool closed_observed_ = false;
  std::uint64_t stream_closes_started_ = 0;
  std::string unsettled_;
};

/// The adapter's configuration for a vector's: every duration times the time scale
/// (capped at its field's maximum); with the idempotent producer a pool of one connection
/// per request (so the harness can answer any send first, and fail one alone), plain
/// appends pipelined on one connection (the adapters refuse pooled plain appends with
/// more than one in flight: they could land out of order); no stall detection (the
/// harness holds requests on purpose); submits that never wait (R1 refusals at the call,
/// as the core gives them).
ds::ProducerOptions adapter_options(const CoreConfig& core, std::uint32_t k, std::uint16_t port, std::uint64_t run) {
  ds::ProducerOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/conformance/" + std::to_string(run);
  const bool json = core.durable_streams.protocol.body_format == DurableStreamsPolicy::BodyFormat::json;
  o.content_type = json ? "application/json" : "application/octet-stream";
  o.producer = core.durable_streams;
  auto& p = o.producer;
  if (!p.linger.is_disabled()) p.linger = Linger::after(scaled(p.linger.duration_ns(), k, Linger::kMaxLinger));
  p.delivery_timeout_ns = scaled(p.delivery_timeout_ns, k, Bounds::kMaxDeliveryTimeout);
  p.retry.backoff_initial_ns = scaled(p.retry.backoff_initial_ns, k, Bounds::kMaxBackoff);
  p.retry.backoff_max_ns = scaled(p.retry.backoff_max_ns, k, Bounds::kMaxBackoff);
  o.start = ds::ProducerStart::resume;  // exactly the configured epoch, as the core target
  o.max_pending_records = 1U << 24;     // the core's limits decide (R1)
  o.submit_timeout_ns = Duration::zero();
  if (p.protocol.idempotent) {
    o.session.mode = http::ConnectionMode::pool;
    o.session.max_connections = 64;
  } else {
    o.session.mode = http::ConnectionMode::pipelined;
    o.session.max_pipelined_requests = 1024;
  }
  o.session.stall.enabled = false;
  o.session.request_timeout_ns = std::chrono::minutes{10};
  return o;
}

}  // namespace

std::optional<AdapterTarget> adapter_target(std::string_view name) {
  if (name == "prodsm-asio") return AdapterTarget::asio;
  if (name == "prodsm-blocking") return AdapterTarget::blocking;
  return std::nullopt;
}

DriverFactory adapter_driver_factory(AdapterTarget target, RealTimeOptions rt, TargetInfo* info) {
  Capabilities caps;
  caps.virtual_time = false;
  caps.measured_time = true;
  caps.adapter_callbacks = true;
  caps.capacity_signal = false;
  caps.blocking_outcomes = target == AdapterTarget::blocking;
  const std::string name = target == AdapterTarget::asio ? "prodsm-asio" : "prodsm-blocking";
  if (info) {
    info->driver = name;
    info->sdk = target == AdapterTarget::asio ? "prodsm::asio::Producer (this build)"
                                              : "prodsm::blocking::Producer (this build)";
    info->protocols = {Protocol::durable_streams};
    info->capabilities = caps;
    info->notes["virtual_time"] = "real time, measured: trace time is the clock divided by the time scale (" +
                                  std::to_string(rt.time_scale) + ")";
    if (caps.blocking_outcomes) {
      info->notes["blocking_outcomes"] =
          "flush() and close() block: their returns are observed on threads of their own, so P3 orders the record "
          "callbacks; A2 judges each return against the callbacks it covers";
    }
    info->notes["capacity_signal"] =
        "the adapters hand freed capacity to waiting submits instead of announcing it (R1's announcement is "
        "judged on the core)";
  }
  auto runs = std::make_shared<std::uint64_t>(0);
  return [target, rt, caps, runs](Protocol protocol, const nlohmann::json& config,
                                  std::string* error) -> std::unique_ptr<Driver> {
    if (protocol != Protocol::durable_streams) {
      if (error) {
        *error = std::string(kUnsupportedPrefix) +
                 "protocol s2: the adapter targets run the Durable Streams producers (the S2 producers are tested "
                 "against the S2 test server)";
      }
      return nullptr;
    }
    auto core = core_config_from_json(protocol, config, error);
    if (!core) return nullptr;
    // The configuration as given is judged as on the core target (B3) ...
    if (auto p = DurableStreamsProducer::create(core->durable_streams); !p) {
      if (error) *error = p.error().message();
      return nullptr;
    }
    TraceConfig trace = trace_config(*core);
    trace.measured_time = true;
    trace.time_tolerance_ns = std::chrono::milliseconds{1};
    auto wire = detail::WireServer::start();
    if (!wire) {
      if (error) *error = wire.error();
      return nullptr;
    }
    const std::uint16_t port = (*wire)->port();
    auto recorder = std::make_shared<Recorder>(std::this_thread::get_id());
    const bool pipelined = !core->durable_streams.protocol.idempotent.has_value();
    auto driver = std::make_unique<AdapterDriver>(trace, rt, caps, std::move(*wire), recorder, pipelined);
    // ... and run scaled onto the clock.
    auto on_exception = [rec = std::weak_ptr<Recorder>(recorder)](std::exception_ptr e) {
      auto r = rec.lock();
      if (!r) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        const std::string_view what = x.what();
        if (what.rfind(kThrowText, 0) == 0) r->reported(std::stoull(std::string(what.substr(kThrowText.size()))));
      } catch (...) {
      }
    };
    auto shim = detail::make_adapter_shim(
        target == AdapterTarget::asio ? detail::AdapterKind::asio : detail::AdapterKind::blocking,
        adapter_options(*core, rt.time_scale, port, ++*runs), on_exception);
    if (!shim) {
      if (error) *error = shim.error();
      return nullptr;
    }
    driver->attach(std::move(*shim));
    return driver;
  };
}

}  // namespace prodsm::conformance
