// SPDX-License-Identifier: Apache-2.0
// The idempotent producer commands — idempotent-append, idempotent-append-batch,
// idempotent-close, idempotent-detach — on prodsm::asio::Producer (the real Producer
// core: producer id, epoch, seq per batch, auto-claim, max_in_flight, linger), and
// `validate` on the core's own configuration validation.
#include <asio/use_future.hpp>

#include <algorithm>
#include <cstdio>

#include "adapter_impl.hpp"
#include "prodsm/base64.hpp"

namespace prodsm::tools::dsconf {
namespace {

std::string producer_key(const std::string& path, const std::string& producer_id, std::int64_t epoch) {
  return path + "|" + producer_id + "|" + std::to_string(epoch);
}

/// A record of the command: `data`, base64-decoded when the (prodsm) extension field
/// `binary` is true — protocol.ts's idempotent commands carry text only.
std::string record_of(const Json& command) {
  std::string data = required_string(command, "data");
  if (optional_bool(command, "binary").value_or(false)) {
    auto bytes = base64::decode(data);
    if (!bytes) throw ArgumentError("data: binary is true but data is not valid base64");
    return std::move(*bytes);
  }
  return data;
}

/// A synchronous refusal of a submit as an ErrorResult.
Json rejection_result(std::string_view type, std::size_t index, const Rejection& r) {
  const std::string what = "items[" + std::to_string(index) + "]: " + std::string(r.detail);
  switch (r.reason) {
    case RejectReason::failed:
      if (r.terminal) return error_result(type, *r.terminal);
      return error_result(type, codes::kInternalError, what);
    case RejectReason::record_too_large:
    case RejectReason::invalid_record: return error_result(type, codes::kInvalidArgument, what);
    case RejectReason::would_block:
      return error_result(type, codes::kTimeout, what + " (no capacity within the command timeout)");
    case RejectReason::sequence_exhausted:
    case RejectReason::closed: break;
  }
  return error_result(type, codes::kInternalError, what);
}

}  // namespace

asio::Producer& Adapter::Impl::cached_producer(const Json& command, const std::string& path, bool auto_claim) {
  const std::string type = command.value("type", std::string{});
  const std::string producer_id = required_string(command, "producerId");
  const std::int64_t epoch = optional_integer(command, "epoch", 0, kMaxProtocolNumber).value_or(0);
  const std::string key = producer_key(path, producer_id, epoch);
  if (auto it = producers.find(key); it != producers.end()) return it->second.producer;

  asio::ProducerOptions o;
  o.url = stream_url(path).to_string();
  o.extra_headers = extra_headers(command);
  o.content_type = content_type_for(type, path, o.extra_headers);
  if (is_json_content_type(o.content_type)) o.producer.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  o.producer.protocol.idempotent =
      DurableStreamsPolicy::IdempotentOptions{producer_id, static_cast<std::uint64_t>(epoch), auto_claim};
  // The suite's producers are the TypeScript IdempotentProducer's: exactly the epoch the
  // test names, and a duplicate is an ordinary success (ds::ProducerStart::resume).
  o.start = ds::ProducerStart::resume;
  // As the TypeScript adapter's cached producer: one batch in flight, no linger.
  o.producer.max_in_flight = 1;
  o.producer.linger = Linger::after(std::chrono::nanoseconds{0});
  auto producer = asio::Producer::attach(session, std::move(o));
  if (!producer) throw ArgumentError(producer.error());

  while (producers.size() >= options.max_cached_producers && !producer_order.empty()) {
    drop_producer(producer_order.front());
  }
  auto [it, inserted] = producers.emplace(key, CachedProducer{path, std::move(*producer)});
  (void)inserted;
  producer_order.push_back(key);
  return it->second.producer;
}

void Adapter::Impl::drop_producer(std::string key) {
  std::erase(producer_order, key);
  auto it = producers.find(key);
  if (it == producers.end()) return;
  try {
    auto closed = it->second.producer.async_close(::asio::use_future);
    (void)await(closed);
  } catch (...) {  // a timeout: destroying it aborts whatever is left (C5)
  }
  producers.erase(it);
}

Json Adapter::Impl::idempotent_append(const Json& command) {
  const std::string path = required_string(command, "path");
  const std::string record = record_of(command);
  const bool auto_claim = optional_bool(command, "autoClaim").value_or(false);
  asio::Producer& producer = cached_producer(command, path, auto_claim);
  auto submitted = producer.async_submit(record, ::asio::use_future);
  auto flushed = producer.async_flush(::asio::use_future);
  asio::RecordResult result;
  try {
    result = await(submitted);
    (void)await(flushed);
  } catch (const TimeoutError&) {
    drop_producer(producer_key(path, required_string(command, "producerId"),
                               optional_integer(command, "epoch", 0, kMaxProtocolNumber).value_or(0)));
    throw;
  }
  if (!result) return error_result("idempotent-append", result.error());
  Json r = success("idempotent-append", 200);
  if (!result->next_offset().empty()) r["offset"] = result->next_offset();
  r["duplicate"] = result->duplicate();
  return r;
}

Json Adapter::Impl::idempotent_append_batch(const Json& command) {
  constexpr std::string_view type = "idempotent-append-batch";
  const std::string path = required_string(command, "path");
  auto items_it = command.find("items");
  if (items_it == command.end() || !items_it->is_array()) throw ArgumentError("items: required array of strings");
  for (std::size_t i = 0; i < items_it->size(); ++i) {
    if (!(*items_it)[i].is_string()) throw ArgumentError("items[" + std::to_string(i) + "]: must be a string");
  }
  const std::string producer_id = required_string(command, "producerId");
  const std::int64_t epoch = optional_integer(command, "epoch", 0, kMaxProtocolNumber).value_or(0);
  const bool auto_claim = optional_bool(command, "autoClaim").value_or(false);
  const auto max_in_flight = optional_integer(command, "maxInFlight", 1, Bounds::kMaxInFlightCap).value_or(1);

  asio::ProducerOptions o;
  o.url = stream_url(path).to_string();
  o.extra_headers = extra_headers(command);
  o.content_type = content_type_for(std::string(type), path, o.extra_headers);
  if (is_json_content_type(o.content_type)) o.producer.protocol.body_format = DurableStreamsPolicy::BodyFormat::json;
  o.producer.protocol.idempotent =
      DurableStreamsPolicy::IdempotentOptions{producer_id, static_cast<std::uint64_t>(epoch), auto_claim};
  // The suite's producers are the TypeScript IdempotentProducer's: exactly the epoch the
  // test names, and a duplicate is an ordinary success (ds::ProducerStart::resume).
  o.start = ds::ProducerStart::resume;
  o.producer.max_in_flight = static_cast<std::uint32_t>(max_in_flight);
  tl::expected<asio::Producer, std::string> created = tl::unexpected(std::string{});
  if (max_in_flight > 1) {
    // As the TypeScript adapter: one item per batch, no linger, so up to maxInFlight
    // batches are in flight at once. They go over maxInFlight pooled connections, so
    // they race at the server and arrive out of order: the core's S4 rule (wait for the
    // earlier seqs, then resend) is what gets every item delivered, in order.
    o.producer.max_batch_records = 1;
    o.producer.linger = Linger::after(std::chrono::nanoseconds{0});
    o.session.mode = asio::ConnectionMode::pool;
    o.session.max_connections = static_cast<std::uint32_t>(max_in_flight);
    o.session.request_timeout_ns = command_timeout;
    created = asio::Producer::create(io.get_executor(), std::move(o));
  } else {
    // maxInFlight 1: every item in as few batches as max_batch_bytes allows, sealed by
    // the flush below (the TypeScript adapter lingers 1 s for the same effect).
    o.producer.linger = Linger::disabled();
    created = asio::Producer::attach(session, std::move(o));
  }
  if (!created) throw ArgumentError(created.error());
  asio::Producer producer = std::move(*created);

  for (std::size_t i = 0; i < items_it->size(); ++i) {
    const auto left = std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw TimeoutError("no capacity for items[" + std::to_string(i) + "] within the command timeout");
    auto ticket = producer.submit_blocking((*items_it)[i].get_ref<const std::string&>(), left);
    if (!ticket) return rejection_result(type, i, ticket.error());  // destroying aborts the rest (C5)
  }
  auto flushed = producer.async_flush(::asio::use_future);
  const asio::VoidResult flush_result = await(flushed);
  // Detach (TS: producer.detach()): close the producer, leave the stream open.
  auto closed = producer.async_close(::asio::use_future);
  const asio::VoidResult close_result = await(closed);
  if (options.verbose) {
    const auto stats = producer.stats();
    std::fprintf(
        stderr,
        "prodsm-ds-conformance-adapter: %s: %llu batches, %llu sends, %llu gap resends (S4), "
        "%llu retries, %llu epoch claims (S5)\n",
        std::string(type).c_str(), static_cast<unsigned long long>(stats.core.batches_sealed),
        static_cast<unsigned long long>(stats.core.sends), static_cast<unsigned long long>(stats.core.gap_resends),
        static_cast<unsigned long long>(stats.core.retries), static_cast<unsigned long long>(stats.core.epoch_claims));
  }
  if (!flush_result) return error_result(type, flush_result.error());
  if (!close_result) return error_result(type, close_result.error());
  return success(type, 200);
}

Json Adapter::Impl::idempotent_close(const Json& command) {
  const std::string path = required_string(command, "path");
  const auto data = optional_string(command, "data");
  const bool auto_claim = optional_bool(command, "autoClaim").value_or(false);
  asio::Producer& producer = cached_producer(command, path, auto_claim);
  std::optional<std::string> final_record;
  if (data && !data->empty()) final_record = *data;
  // Flush, then one Stream-Closed request sequenced with the producer's headers (next
  // seq), then the producer is closed. The producer stays cached: a second
  // idempotent-close returns the same result, as TS IdempotentProducer.close() does.
  auto closed = producer.async_close_with_stream(std::move(final_record), ::asio::use_future);
  auto result = await(closed);
  if (!result) return error_result("idempotent-close", result.error());
  Json r = success("idempotent-close", 200);
  r["finalOffset"] = result->final_offset;
  return r;
}

Json Adapter::Impl::idempotent_detach(const Json& command) {
  const std::string path = required_string(command, "path");
  const std::string producer_id = required_string(command, "producerId");
  const std::int64_t epoch = optional_integer(command, "epoch", 0, kMaxProtocolNumber).value_or(0);
  const std::string key = producer_key(path, producer_id, epoch);
  (void)stream_url(path);  // validates path
  auto it = producers.find(key);
  if (it == producers.end()) return success("idempotent-detach", 200);  // nothing to detach
  asio::VoidResult result;
  try {
    auto closed = it->second.producer.async_close(::asio::use_future);
    result = await(closed);
  } catch (const TimeoutError&) {
    producers.erase(it);
    std::erase(producer_order, key);
    throw;
  }
  producers.erase(it);
  std::erase(producer_order, key);
  if (!result) return error_result("idempotent-detach", result.error());
  return success("idempotent-detach", 200);
}

namespace {

/// A number of milliseconds as ns, saturating far outside every bound the core accepts
/// (so an absurd value is refused by the core's own check, never converted with UB).
std::optional<Duration> optional_ms(const Json& target, std::string_view field) {
  auto it = target.find(field);
  if (it == target.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw ArgumentError(std::string(field) + ": must be a number of milliseconds");
  const double ms = it->get<double>();
  if (!(ms > -1e9 && ms < 1e9)) return Duration{ms > 0 ? INT64_MAX : INT64_MIN};  // NaN too: refused below
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

/// `message` with the core's retry field names replaced by the suite's.
std::string suite_names(std::string message) {
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"retry.max_attempts", "maxRetries (max_attempts = maxRetries + 1)"},
      {"retry.backoff_initial_ns", "initialDelayMs"},
      {"retry.backoff_max_ns", "maxDelayMs"},
      {"retry.backoff_multiplier", "multiplier"},
  };
  for (const auto& [core, suite] : kNames) {
    for (std::size_t at = message.find(core); at != std::string::npos; at = message.find(core, at + suite.size())) {
      message.replace(at, core.size(), suite);
    }
  }
  return message;
}

}  // namespace

Json Adapter::Impl::validate_retry_options(const Json& target) {
  // The suite's RetryOptions (maxRetries, initialDelayMs, maxDelayMs, multiplier) are the
  // core's RetryPolicy in other units; validation is the core's (B3), with its messages
  // in the suite's names. Absent fields keep the core's defaults.
  DurableStreamsConfig config;
  RetryPolicy& retry = config.retry;
  if (auto retries = optional_integer(target, "maxRetries", INT64_MIN, INT64_MAX)) {
    const std::int64_t attempts = *retries == INT64_MAX ? INT64_MAX : *retries + 1;  // the first send too
    retry.max_attempts = static_cast<std::uint32_t>(std::clamp<std::int64_t>(attempts, 0, UINT32_MAX));
  }
  if (auto initial = optional_ms(target, "initialDelayMs")) retry.backoff_initial_ns = *initial;
  if (auto max = optional_ms(target, "maxDelayMs")) retry.backoff_max_ns = *max;
  if (auto it = target.find("multiplier"); it != target.end() && !it->is_null()) {
    if (!it->is_number()) throw ArgumentError("multiplier: must be a number");
    retry.backoff_multiplier = it->get<double>();
  }
  if (auto error = DurableStreamsProducer::validate(config)) {
    return error_result("validate", codes::kInvalidArgument, suite_names(error->message()));
  }
  Json r;
  r["type"] = "validate";
  r["success"] = true;
  return r;
}

Json Adapter::Impl::validate(const Json& command) {
  auto target_it = command.find("target");
  if (target_it == command.end() || !target_it->is_object()) throw ArgumentError("target: required object");
  const Json& target = *target_it;
  const std::string kind = required_string(target, "target");
  if (kind == "retry-options") return validate_retry_options(target);
  if (kind != "idempotent-producer") {
    return error_result("validate", codes::kNotSupported, "Unknown validation target: " + kind);
  }
  // The suite's field names in every message; the ranges are the core's.
  DurableStreamsConfig config;
  const std::string producer_id = optional_string(target, "producerId").value_or("test-producer");
  const auto epoch = optional_integer(target, "epoch", 0, kMaxProtocolNumber);
  if (auto bytes = optional_integer(target, "maxBatchBytes", 1, INT64_MAX)) {
    config.max_batch_bytes = static_cast<std::uint64_t>(*bytes);
  }
  if (auto items = optional_integer(target, "maxBatchItems", 1, UINT32_MAX)) {
    config.max_batch_records = static_cast<std::uint32_t>(*items);
  }
  config.protocol.idempotent =
      DurableStreamsPolicy::IdempotentOptions{producer_id, static_cast<std::uint64_t>(epoch.value_or(0)), false};
  if (auto error = DurableStreamsProducer::validate(config)) {
    static const std::map<std::string, std::string, std::less<>> names{
        {"max_batch_bytes", "maxBatchBytes"},
        {"max_batch_records", "maxBatchItems"},
        {"protocol.idempotent.producer_id", "producerId"},
        {"protocol.idempotent.epoch", "epoch"},
    };
    auto name = names.find(error->field);
    const std::string field = name != names.end() ? name->second : error->field;
    return error_result("validate", codes::kInvalidArgument, field + ": " + error->reason);
  }
  Json r;
  r["type"] = "validate";
  r["success"] = true;
  return r;
}

}  // namespace prodsm::tools::dsconf
