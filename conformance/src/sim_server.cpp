// SPDX-License-Identifier: Apache-2.0
// The simulated server (sim_server.hpp):
//  - ack: S2 -> [base + first ticket, + count), base = the initial match_seq_num or 0
//    (a record's position is its ticket: the stream holds the records in order);
//    Durable Streams -> next offset = the byte tail after the body, as a 20-digit
//    decimal string, and the tail advances; for a sequenced (idempotent) batch the tail
//    in seq order — the bytes of every batch up to it — since the server appends an
//    idempotent producer's batches in seq order whatever order they are answered in.
//  - duplicate: Durable Streams sequenced -> {no offset, duplicate}; otherwise an ack.
//  - fail: the error of `fail_code`, with its certainty (connection_lost and
//    protocol_error indefinite, the rest definite) and retryability (unavailable and
//    connection_lost); sequence_gap -> received = seq, expected = the lowest seq of that
//    epoch not yet acknowledged (as a real server would say), or seq - 1 (0 for seq 0)
//    when every lower seq was acknowledged (an injected gap);
//    stale_epoch -> server epoch = the send's epoch + 1; stream_closed -> final offset =
//    the tail. S2: a failure kills the append session, so every other unanswered send
//    of that session (when the target reports sessions) fails with it, in send order,
//    in the same instant (fail_rest_of_session).
//  - invalid_ack: S2 -> the range is one record too long; Durable Streams -> neither an
//    offset nor a duplicate flag; unknown_batch -> an ack for a batch id never issued;
//    backwards -> S2 [previous start, + count), Durable Streams the previous ack's next
//    offset minus one byte; overlapping -> S2 [previous end - 1, + count), Durable
//    Streams the previous ack's next offset again (both need an earlier valid ack and, on
//    Durable Streams, an idempotent producer: otherwise the ack is the wrong_count one).
//  - request_timeout: indefinite and retryable, like connection_lost.
//  - restart_server: every unanswered send fails as connection_lost; with the state
//    lost, acknowledged seqs are forgotten and no epoch starts at the configured seq.
//  - a stream-close request (C4): answered in send order like a batch; ack or duplicate ->
//    closed, final offset = the tail; fail -> the error of `fail_code`.
//  - a configured first seq (TraceConfig::initial_seq): the server holds the seqs below it
//    for the configured epoch (a resumed producer), so a gap there reports from it.
#include "sim_server.hpp"

#include <cstdio>
#include <iterator>
#include <string>

namespace prodsm::conformance::detail {

std::string offset_text(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(bytes));
  return buf;
}

void SimServer::sent(const Observation& o) {
  batch_bytes_[o.first_ticket] = o.body.size();
  unanswered_.push_back(PendingSend{o.send_index, o.batch, o.attempt, o.first_ticket, o.count, o.body.size(), o.stamp,
                                    o.session, false, made_++});
}

void SimServer::sent_stream_close(const Observation& o) {
  PendingSend p;
  p.index = o.stream_close_index;
  p.stream_close = true;
  p.order = made_++;
  unanswered_.push_back(p);
}

std::vector<std::pair<PendingSend, Response>> SimServer::restart(bool state_kept) {
  std::vector<std::pair<PendingSend, Response>> out;
  Command lost = Command::fail_with(ErrorCode::connection_lost);
  for (const PendingSend& sent : unanswered_) {
    Response r;
    r.kind = Response::Kind::fail;
    r.error = failure(lost, sent);
    r.error.message = "harness: connection_lost (server restart)";
    out.emplace_back(sent, std::move(r));
  }
  unanswered_.clear();
  last_acked_.reset();
  last_ack_undo_.reset();
  if (!state_kept) {
    acked_seqs_.clear();
    state_lost_ = true;
  }
  return out;
}

void SimServer::unanswer(const PendingSend& send) {
  if (last_acked_ && last_acked_->first == send.stamp.epoch && last_acked_->second == send.stamp.seq) {
    acked_seqs_[send.stamp.epoch].erase(send.stamp.seq);
  }
  last_acked_.reset();
  if (last_ack_undo_ && last_ack_undo_->first == send.index) last_ack_ = last_ack_undo_->second;
  last_ack_undo_.reset();
  auto it = unanswered_.begin();
  while (it != unanswered_.end() && it->order < send.order) ++it;
  unanswered_.insert(it, send);
}

Response SimServer::unknown_batch_ack() {
  Response r;
  r.kind = Response::Kind::ack;
  r.invalid = true;
  return r;
}

std::optional<std::pair<PendingSend, Response>> SimServer::answer(const Command& c) {
  if (unanswered_.empty()) return std::nullopt;
  // S2: an append session acknowledges (or fails) its appends in the order they were
  // made, so only the oldest unanswered send can be answered; `newest` is for Durable
  // Streams, whose requests may be answered in any order.
  const bool in_order = config_.protocol == Protocol::s2;
  auto it = c.which == Command::Which::oldest || in_order ? unanswered_.begin() : std::prev(unanswered_.end());
  const PendingSend sent = *it;
  unanswered_.erase(it);
  last_acked_.reset();
  last_ack_undo_.reset();
  Response r;
  if (c.kind == Command::Kind::fail) {
    r.kind = Response::Kind::fail;
    r.error = failure(c, sent);
    return std::make_pair(sent, r);
  }
  r.kind = Response::Kind::ack;
  if (sent.stream_close) {  // closed at the tail; an invalid_ack leaves out the offset
    r.invalid = c.kind == Command::Kind::invalid_ack;
    if (!r.invalid) r.ack.next_offset = offset_text(tail_bytes_);
    return std::make_pair(sent, r);
  }
  r.ack = ack(c, sent, r.invalid);
  if (!r.invalid && !r.ack.duplicate && config_.protocol == Protocol::durable_streams) tail_bytes_ += sent.body_bytes;
  if (!r.invalid && !r.ack.duplicate) {
    last_ack_undo_ = std::make_pair(sent.index, last_ack_);
    last_ack_ = r.ack;
  }
  if (!r.invalid && sent.stamp.sequenced && acked_seqs_[sent.stamp.epoch].insert(sent.stamp.seq).second) {
    last_acked_ = std::make_pair(sent.stamp.epoch, sent.stamp.seq);
  }
  return std::make_pair(sent, r);
}

std::vector<std::pair<PendingSend, Response>> SimServer::fail_rest_of_session(const Command& c,
                                                                              const PendingSend& failed) {
  std::vector<std::pair<PendingSend, Response>> out;
  if (config_.protocol != Protocol::s2 || c.kind != Command::Kind::fail || !failed.session) return out;
  for (auto it = unanswered_.begin(); it != unanswered_.end();) {
    if (it->session != failed.session) {
      ++it;
      continue;
    }
    Response r;
    r.kind = Response::Kind::fail;
    r.error = failure(c, *it);
    out.emplace_back(*it, std::move(r));
    it = unanswered_.erase(it);
  }
  return out;
}

TraceAck SimServer::ack(const Command& c, const PendingSend& sent, bool& invalid) const {
  TraceAck a;
  const bool s2 = config_.protocol == Protocol::s2;
  const std::uint64_t start = config_.initial_match_seq_num.value_or(0) + sent.first_ticket;
  if (c.kind == Command::Kind::invalid_ack) {
    invalid = true;
    const bool ordered = c.invalid == Command::Invalid::backwards || c.invalid == Command::Invalid::overlapping;
    // (Durable Streams: only a sequenced batch's offset is ordered, see check_order.)
    if (ordered && last_ack_ && (s2 || sent.stamp.sequenced)) {
      const bool back = c.invalid == Command::Invalid::backwards;
      if (s2) {
        a.start = back ? last_ack_->start : last_ack_->end - 1;
        a.end = a.start + sent.count;  // the count is right; the positions are not
      } else {
        const std::uint64_t previous = std::stoull(last_ack_->next_offset);
        a.next_offset = offset_text(back ? previous - 1 : previous);
      }
      return a;
    }
    if (s2) {
      a.start = start;
      a.end = start + sent.count + 1;  // one record too many
    }                                  // Durable Streams: an ack without offset (and not a duplicate)
    return a;
  }
  if (c.kind == Command::Kind::duplicate && !s2 && sent.stamp.sequenced) {
    a.duplicate = true;
    return a;
  }
  if (s2) {
    a.start = start;
    a.end = start + sent.count;
  } else if (sent.stamp.sequenced) {
    std::uint64_t bytes = 0;  // in seq order: every batch up to this one (all were sent before it)
    for (auto it = batch_bytes_.begin(); it != batch_bytes_.end() && it->first <= sent.first_ticket; ++it) {
      bytes += it->second;
    }
    a.next_offset = offset_text(bytes);
  } else {
    a.next_offset = offset_text(tail_bytes_ + sent.body_bytes);
  }
  return a;
}

std::uint64_t SimServer::expected_seq(const PendingSend& sent) const {
  const auto it = acked_seqs_.find(sent.stamp.epoch);
  // A producer configured to start at seq n (resuming an epoch) has seqs < n on the server.
  std::uint64_t lowest = !state_lost_ && sent.stamp.epoch == config_.initial_epoch ? config_.initial_seq : 0;
  if (it != acked_seqs_.end()) {
    while (it->second.count(lowest) != 0) ++lowest;
  }
  if (lowest < sent.stamp.seq) return lowest;
  return sent.stamp.seq > 0 ? sent.stamp.seq - 1 : 0;
}

Error SimServer::failure(const Command& c, const PendingSend& sent) const {
  const ErrorCode code = c.fail_code;
  const bool indefinite =
      code == ErrorCode::connection_lost || code == ErrorCode::protocol_error || code == ErrorCode::request_timeout;
  const bool retryable =
      code == ErrorCode::unavailable || code == ErrorCode::connection_lost || code == ErrorCode::request_timeout;
  Error e = make_error(code, indefinite ? Certainty::indefinite : Certainty::definite, retryable,
                       "harness: " + std::string(to_string(code)));
  if (code == ErrorCode::unavailable) e.retry_after_ns = c.retry_after_ns;
  if (code == ErrorCode::sequence_gap) {
    e.received_seq = sent.stamp.seq;
    e.expected_seq = expected_seq(sent);
  }
  if (code == ErrorCode::stale_epoch) e.server_epoch = sent.stamp.epoch + 1;
  if (code == ErrorCode::stream_closed) e.final_offset = offset_text(tail_bytes_);
  return e;
}

}  // namespace prodsm::conformance::detail
