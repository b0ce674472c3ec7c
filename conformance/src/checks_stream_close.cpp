// SPDX-License-Identifier: Apache-2.0
// C4 — closing the stream is an operation apart from closing the producer
// (docs/contract.md). Read from the trace's close_stream inputs, stream-close requests
// and stream-close results; the ownership half of C4 (owned sessions closed, attached
// left open) is an adapter property, tested with each adapter.
#include <map>
#include <string>

#include "checker_support.hpp"

namespace prodsm::conformance::detail {
namespace {

/// What the trace shows of one stream close (one op).
struct StreamCloseSeen {
  std::size_t call_step = 0;                 ///< the close_stream input
  std::uint64_t cutoff = 0;                  ///< tickets accepted before it: the records it covers
  std::optional<std::size_t> first_request;  ///< observation seq of its first stream-close request
  std::size_t first_request_step = 0;
  std::vector<std::size_t> requests;    ///< stream_close_index of each of its requests
  const Observation* result = nullptr;  ///< its stream_closed observation
  std::size_t result_step = 0;
  std::size_t results = 0;
};

}  // namespace

Result check_c4(const Checked& c) {
  const auto& x = c.index;
  std::map<std::uint64_t, StreamCloseSeen> ops;
  std::map<std::size_t, const Response*> answers;  // stream_close_index -> the server's last answer
  const auto end = close_or_abort_step(x);
  for (std::size_t i = 0; i < x.trace.steps.size(); ++i) {
    const Step& step = x.trace.steps[i];
    if (step.input.kind == Input::Kind::close_stream) {
      if (step.result.kind != SyncResult::Kind::stream_close) {
        return violation("C4", "close_stream returned no stream-close result", {i});
      }
      if (step.result.ok) {
        if (ops.count(step.result.value) != 0) {
          return violation("C4", "two close_stream calls returned the same op", {ops[step.result.value].call_step, i});
        }
        StreamCloseSeen& s = ops[step.result.value];
        s.call_step = i;
        s.cutoff = x.accepted_before[i];
      } else if ((!end || *end > i) && !(step.result.error && step.result.error->code == ErrorCode::would_block)) {
        // A refusal needs a producer that cannot take a barrier now (would_block: R1, R3)
        // or can no longer flush: closed, aborted or failed.
        bool failed = false;
        for (std::uint64_t k = 0; k < x.accepted_before[i] && !failed; ++k) {
          failed = x.tickets[k].completions > 0 && x.tickets[k].done_step < i && !x.tickets[k].ok;
        }
        if (!failed) return violation("C4", "close_stream was refused while the producer was open and healthy", {i});
      }
    }
    if (step.input.kind == Input::Kind::respond_stream_close) {
      answers[step.input.stream_close_index] = &step.input.response;
    }
    for (std::size_t k = 0; k < step.observed.size(); ++k) {
      const Observation& o = step.observed[k];
      const std::size_t seq = x.step_first_seq[i] + k;
      if (o.kind == Observation::Kind::stream_close) {
        auto it = ops.find(o.op);
        if (it == ops.end()) {
          return violation("C4",
                           "a stream-close request was sent with no close_stream: closing the producer closed "
                           "the stream",
                           {i});
        }
        if (!o.body.empty()) return violation("C4", "the stream-close request carried record bytes", {i});
        if (!it->second.first_request) {
          it->second.first_request = seq;
          it->second.first_request_step = i;
        }
        it->second.requests.push_back(o.stream_close_index);
      } else if (o.kind == Observation::Kind::stream_closed) {
        auto it = ops.find(o.op);
        if (it == ops.end()) return violation("C4", "a stream close finished that was never started", {i});
        if (++it->second.results > 1) {
          return violation("C4", "a stream close finished twice", {it->second.result_step, i});
        }
        it->second.result = &o;
        it->second.result_step = i;
      }
    }
  }
  for (const auto& [op, s] : ops) {
    // Every record submitted before close_stream is resolved before the stream is closed,
    // and the stream is closed only if all of them succeeded (a flush barrier, F5).
    std::optional<std::uint64_t> failed;
    for (std::uint64_t k = 0; k < s.cutoff; ++k) {
      const auto& tk = x.tickets[k];
      bool resolved = tk.completions > 0 && tk.done_seq < (s.first_request ? *s.first_request : 0);
      // On an adapter target a completion is the record's callback, which the dispatcher
      // runs after the producer resolved the record: there the ack of its batch is the point.
      if (!resolved && c.caps.adapter_callbacks && tk.batch && s.first_request) {
        const auto acked = acked_at(x, x.batches.at(*tk.batch));
        resolved = acked && *acked <= s.first_request_step;
      }
      if (s.first_request && !resolved) {
        return violation("C4", "the stream-close request was sent before " + t(k) + " completed",
                         {tk.submit_step, s.first_request_step});
      }
      if (tk.completions > 0 && !tk.ok && !failed) failed = k;
    }
    if (failed && s.first_request) {
      return violation("C4", "the stream was closed although " + t(*failed) + " failed",
                       {x.tickets[*failed].done_step, s.first_request_step});
    }
    if (s.result == nullptr) continue;
    if (failed && s.result->ok) {
      return violation("C4", "the stream close succeeded although " + t(*failed) + " failed",
                       {x.tickets[*failed].done_step, s.result_step});
    }
    if (s.result->ok) {
      // Success needs a request the server acknowledged.
      bool acked = false;
      for (std::size_t r : s.requests) {
        const auto a = answers.find(r);
        acked = acked || (a != answers.end() && a->second->kind == Response::Kind::ack);
      }
      if (!acked) {
        return violation("C4", "the stream close reported success without an acknowledged stream-close request",
                         {s.call_step, s.result_step});
      }
    }
  }
  return std::nullopt;
}

}  // namespace prodsm::conformance::detail
