// SPDX-License-Identifier: Apache-2.0
// Reading a Durable Streams producer's batches off the wire (wire_sends.hpp).
#include "wire_sends.hpp"

#include "prodsm/http/detail/text.hpp"

#include <algorithm>
#include <charconv>

namespace prodsm::conformance::detail {
namespace {

std::optional<std::uint64_t> decimal(std::optional<std::string_view> text) {
  if (!text || text->empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end != text->data() + text->size()) return std::nullopt;
  return v;
}

bool is_true(std::optional<std::string_view> v) {
  return v && http::detail::iequals(*v, "true");
}

}  // namespace

void WireSends::stream_close_finished(std::uint64_t op) {
  std::erase(stream_close_ops_, op);
}

void WireSends::answered(std::size_t send_index, bool acknowledged) {
  for (auto& b : batches_) {
    if (b.outstanding != send_index) continue;
    b.outstanding.reset();
    b.done = b.done || acknowledged;
  }
}

std::string WireSends::frame(std::uint64_t first, std::uint32_t count) const {
  std::string out;
  const bool json = config_.json;
  if (json) out += '[';
  for (std::uint32_t i = 0; i < count; ++i) {
    if (json && i > 0) out += ',';
    out += records_[first + i];
  }
  if (json) out += ']';
  return out;
}

std::optional<std::uint32_t> WireSends::match_new(std::uint64_t first, const std::string& body) const {
  // Grow the batch record by record while the body still starts with its framing. Every
  // count that frames to the whole body is a reading of it (several only with empty
  // records): the largest that spans no cut and keeps max_batch_records, else the largest.
  std::optional<std::uint32_t> found;
  std::optional<std::uint32_t> plausible;
  auto spans_cut = [&](std::uint32_t count) {
    return std::any_of(cuts_.begin(), cuts_.end(), [&](std::size_t k) { return k > first && k < first + count; });
  };
  std::size_t at = config_.json ? 1 : 0;
  if (config_.json && (body.empty() || body.front() != '[')) return std::nullopt;
  for (std::uint64_t t = first; t < records_.size(); ++t) {
    const std::uint32_t count = static_cast<std::uint32_t>(t - first + 1);
    if (config_.json && count > 1) {
      if (at >= body.size() || body[at] != ',') break;
      ++at;
    }
    const std::string& r = records_[t];
    if (at + r.size() > body.size() || body.compare(at, r.size(), r) != 0) break;
    at += r.size();
    const std::size_t end = at + (config_.json ? 1 : 0);
    if (end == body.size() && (!config_.json || body.back() == ']')) {
      found = count;
      const bool fits = config_.max_batch_records == 0 || count <= config_.max_batch_records;
      if (fits && !spans_cut(count)) plausible = count;
    }
    if (end > body.size()) break;
  }
  return plausible ? plausible : found;
}

std::optional<Observation> WireSends::decode(const WireRequest& r, std::size_t send_index,
                                             std::size_t stream_close_index) {
  if (r.method != "POST") return std::nullopt;
  Observation o;
  o.body = r.body;
  // A sequenced close (producer headers, e.g. the TypeScript IdempotentProducer's close())
  // closes producer and stream in one: not a batch, and no C4 stream close either.
  if (is_true(r.header("Stream-Closed")) && r.header("Producer-Id") && r.body.empty()) return std::nullopt;
  if (is_true(r.header("Stream-Closed")) && !r.header("Producer-Id")) {
    o.kind = Observation::Kind::stream_close;
    o.stream_close_index = stream_close_index;
    o.op = stream_close_ops_.empty() ? 0 : stream_close_ops_.front();
    return o;
  }
  o.kind = Observation::Kind::send;
  o.send_index = send_index;
  const auto epoch = decimal(r.header("Producer-Epoch"));
  const auto seq = decimal(r.header("Producer-Seq"));
  if (r.header("Producer-Id") && epoch && seq) {
    o.stamp.sequenced = true;
    o.stamp.epoch = *epoch;
    o.stamp.seq = *seq;
  }
  // A resend: an earlier batch with the same body, not acknowledged. Without sequencing
  // it must also not be awaiting an answer (a resend follows a failed attempt, E4). With
  // the idempotent producer the same (epoch, seq) is the same batch, and a new epoch
  // renumbers (S5) the oldest batch not yet sent in it — also while its old-epoch attempt
  // is unanswered: a claim supersedes it.
  Batch* resend = nullptr;
  for (auto& b : batches_) {
    if (b.done || b.body != r.body) continue;
    if (o.stamp.sequenced && b.last_stamp.sequenced) {
      const bool same = b.last_stamp.epoch == o.stamp.epoch && b.last_stamp.seq == o.stamp.seq;
      const bool renumbered = b.last_stamp.epoch != o.stamp.epoch;
      if (same && !b.outstanding) {
        resend = &b;
        break;
      }
      if (renumbered && !resend) resend = &b;
      continue;
    }
    if (!b.outstanding && !resend) resend = &b;
  }
  // Otherwise a new batch: a retry never overtakes (E4) and a claim renumbers every
  // unacknowledged batch before a new one goes out (S5), so a matching resend comes first.
  // A conforming producer sends its batches in seal order, from the lowest record no batch
  // holds; one that does not (an SDK deferring a batch behind a claim) sends a later run
  // first, so the run is searched for among the records no batch holds yet.
  Batch* b = resend;
  if (!b) {
    std::vector<bool> held(records_.size(), false);
    for (const auto& x : batches_) {
      for (std::uint64_t t = x.first; t < x.first + x.count && t < held.size(); ++t) held[t] = true;
    }
    std::uint64_t lowest = 0;
    while (lowest < held.size() && held[lowest]) ++lowest;
    Batch fresh{lowest, 0, r.body, 0, {}, std::nullopt, false};
    for (std::uint64_t first = lowest; first < records_.size(); ++first) {
      if (held[first]) continue;
      const auto count = match_new(first, r.body);
      if (!count) continue;
      bool free = true;
      for (std::uint64_t t = first; t < first + *count; ++t) free = free && !held[t];
      if (!free) continue;
      fresh.first = first;
      fresh.count = *count;
      break;
    }
    batches_.push_back(std::move(fresh));
    b = &batches_.back();
  }
  ++b->attempts;
  b->last_stamp = o.stamp;
  b->outstanding = send_index;
  o.batch = b->first;
  o.attempt = b->attempts;
  o.first_ticket = b->first;
  o.count = b->count;
  return o;
}

}  // namespace prodsm::conformance::detail
