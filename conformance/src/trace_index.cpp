// SPDX-License-Identifier: Apache-2.0
#include "trace_index.hpp"

namespace prodsm::conformance::detail {

TraceIndex::TraceIndex(const Trace& traced) : trace{traced}, config{traced.config} {
  std::size_t seq = 0;
  std::uint64_t accepted = 0;
  step_first_seq.reserve(traced.steps.size() + 1);
  accepted_before.reserve(traced.steps.size() + 1);
  for (std::size_t i = 0; i < traced.steps.size(); ++i) {
    const Step& step = traced.steps[i];
    step_first_seq.push_back(seq);
    accepted_before.push_back(accepted);
    switch (step.input.kind) {
      case Input::Kind::submit:
        if (step.result.kind == SyncResult::Kind::ticket) {
          if (step.result.value != accepted) ticket_ids_out_of_order.push_back(i);
          TicketInfo info;
          info.submit_step = i;
          info.at = step.input.at;
          info.size = step.input.record.size();
          info.meter = config.meter(info.size);
          tickets.push_back(info);
          ++accepted;
        } else if (step.result.kind == SyncResult::Kind::rejected && step.result.reason == RejectReason::would_block) {
          would_block_steps.push_back(i);
        }
        break;
      case Input::Kind::flush: {
        FlushInfo f;
        f.step = i;
        f.accepted = step.result.kind == SyncResult::Kind::barrier;
        f.barrier = step.result.value;
        f.cutoff = accepted;
        if (f.accepted) flush_by_barrier[f.barrier] = flushes.size();
        if (step.result.kind == SyncResult::Kind::rejected && step.result.reason == RejectReason::would_block) {
          would_block_steps.push_back(i);
        }
        flushes.push_back(f);
        break;
      }
      case Input::Kind::close: close_steps.push_back(i); break;
      case Input::Kind::abort: abort_steps.push_back(i); break;
      case Input::Kind::respond:
        if (step.input.send_index < sends.size()) {
          sends[step.input.send_index].response_step = i;
          sends[step.input.send_index].response = &step.input.response;
        }
        break;
      case Input::Kind::advance: break;
      case Input::Kind::close_stream:  // C4: read by check_c4 from the trace itself
      case Input::Kind::respond_stream_close: break;
    }
    for (const Observation& o : step.observed) {
      switch (o.kind) {
        case Observation::Kind::send: {
          if (sends.size() <= o.send_index) sends.resize(o.send_index + 1);
          SendInfo& s = sends[o.send_index];
          s.step = i;
          s.seq = seq;
          s.at = o.at.value_or(step.input.at);
          s.obs = &o;
          if (o.count == 0 || o.first_ticket + o.count > tickets.size() || o.first_ticket + o.count < o.first_ticket) {
            malformed_sends.push_back(i);
            break;
          }
          BatchInfo& b = batches[o.batch];
          b.id = o.batch;
          b.first = o.first_ticket;
          b.count = o.count;
          b.sends.push_back(o.send_index);
          for (std::uint64_t t = o.first_ticket; t < o.first_ticket + o.count && t < tickets.size(); ++t) {
            if (!tickets[t].batch) tickets[t].batch = o.batch;
          }
          break;
        }
        case Observation::Kind::done:
          if (o.first_ticket > o.last_ticket || o.last_ticket >= tickets.size()) {
            malformed_dones.push_back(i);
            break;
          }
          dones.push_back(DoneInfo{i, seq, &o});
          for (std::uint64_t t = o.first_ticket; t <= o.last_ticket && t < tickets.size(); ++t) {
            TicketInfo& info = tickets[t];
            if (info.completions++ == 0) {
              info.done_step = i;
              info.done_seq = seq;
              info.ok = o.ok;
              info.ack = o.ack;
              info.error = o.error;
            }
          }
          for (auto& [id, b] : batches) {
            if (b.first == o.first_ticket && !b.completed) {
              b.completed = true;
              b.completed_step = i;
              b.completed_seq = seq;
              b.completed_ok = o.ok;
            }
          }
          break;
        case Observation::Kind::barrier: barrier_dones.push_back(BarrierDoneInfo{i, seq, &o}); break;
        case Observation::Kind::closed: closeds.push_back(ClosedInfo{i, seq, &o}); break;
        case Observation::Kind::capacity: capacity.emplace_back(i, seq); break;
        case Observation::Kind::stream_close:
        case Observation::Kind::stream_closed: break;  // C4: check_c4
      }
      if (o.kind != Observation::Kind::stream_close && o.kind != Observation::Kind::stream_closed) {
        producer_observations_end = seq + 1;
      }
      ++seq;
    }
  }
  step_first_seq.push_back(seq);
  accepted_before.push_back(accepted);
  observations = seq;
}

}  // namespace prodsm::conformance::detail
