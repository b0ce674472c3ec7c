// SPDX-License-Identifier: Apache-2.0
// Rendering traces for people: one line per step, and a violation's evidence.
#include <sstream>
#include <string>

#include "prodsm/conformance/checkers.hpp"

namespace prodsm::conformance {

namespace {
std::string observation_text(const Observation& o) {
  std::ostringstream s;
  switch (o.kind) {
    case Observation::Kind::send:
      s << "send#" << o.send_index << " batch " << o.batch << " attempt " << o.attempt << " tickets " << o.first_ticket
        << "+" << o.count;
      if (o.stamp.sequenced) {
        if (o.stamp.match_seq_num) {
          s << " match_seq_num " << *o.stamp.match_seq_num;
        } else {
          s << " epoch " << o.stamp.epoch << " seq " << o.stamp.seq;
        }
      }
      break;
    case Observation::Kind::done:
      s << "done tickets " << o.first_ticket << ".." << o.last_ticket << " "
        << (o.ok ? (o.ack.duplicate ? std::string("ok(duplicate)") : std::string("ok")) : o.error.describe());
      break;
    case Observation::Kind::barrier:
      s << "barrier " << o.barrier << " " << (o.ok ? std::string("ok") : o.error.describe());
      break;
    case Observation::Kind::closed: s << "closed " << (o.ok ? std::string("ok") : o.error.describe()); break;
    case Observation::Kind::capacity: s << "capacity available"; break;
    case Observation::Kind::stream_close:
      s << "stream-close request#" << o.stream_close_index << " (op " << o.op << ", " << o.body.size() << "B)";
      break;
    case Observation::Kind::stream_closed:
      s << "stream closed (op " << o.op << ") " << (o.ok ? "ok, final offset " + o.final_offset : o.error.describe());
      break;
  }
  return s.str();
}
}  // namespace

std::string describe(const Step& step, std::size_t index) {
  std::ostringstream s;
  s << "#" << index << " @" << std::chrono::duration<double, std::milli>(step.input.at.time_since_epoch()).count()
    << "ms ";
  switch (step.input.kind) {
    case Input::Kind::submit: s << "submit(" << step.input.record.size() << "B)"; break;
    case Input::Kind::flush: s << "flush"; break;
    case Input::Kind::close: s << "close"; break;
    case Input::Kind::abort: s << "abort"; break;
    case Input::Kind::advance: s << "timer"; break;
    case Input::Kind::respond:
      s << "answer send#"
        << (step.input.send_index == SIZE_MAX ? std::string("?") : std::to_string(step.input.send_index)) << " with "
        << (step.input.response.kind == Response::Kind::ack
                ? (step.input.response.invalid
                       ? std::string("an invalid ack")
                       : (step.input.response.ack.duplicate ? std::string("duplicate") : std::string("ack")))
                : std::string(to_string(step.input.response.error.code)));
      break;
    case Input::Kind::close_stream: s << "close_stream"; break;
    case Input::Kind::respond_stream_close:
      s << "answer stream-close request#" << step.input.stream_close_index << " with "
        << (step.input.response.kind == Response::Kind::ack ? std::string("ack")
                                                            : std::string(to_string(step.input.response.error.code)));
      break;
  }
  switch (step.result.kind) {
    case SyncResult::Kind::ticket: s << " -> ticket " << step.result.value; break;
    case SyncResult::Kind::barrier: s << " -> barrier " << step.result.value; break;
    case SyncResult::Kind::rejected: s << " -> refused " << to_string(step.result.reason); break;
    case SyncResult::Kind::closed_result: s << " -> " << (step.result.ok ? "closed ok" : "closed failed"); break;
    case SyncResult::Kind::stream_close:
      if (step.result.ok) {
        s << " -> stream close op " << step.result.value;
      } else {
        s << " -> stream close refused " << (step.result.error ? step.result.error->describe() : std::string());
      }
      break;
    case SyncResult::Kind::none: break;
  }
  for (const auto& o : step.observed) s << "\n      " << observation_text(o);
  return s.str();
}

std::string render_evidence(const Trace& trace, const Violation& v) {
  std::ostringstream s;
  s << v.clause << ": " << v.message << "\n";
  for (std::size_t i : v.evidence) {
    if (i < trace.steps.size()) s << "    " << describe(trace.steps[i], i) << "\n";
  }
  return s.str();
}

}  // namespace prodsm::conformance
