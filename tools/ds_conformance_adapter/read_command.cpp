// SPDX-License-Identifier: Apache-2.0
// read (catch-up reads) and the retried exchange under read, head and plain append:
// 429, 5xx and lost connections retried within the adapter's retry policy (E4), errors
// naming the stream's path, JSON bodies that do not parse reported as PARSE_ERROR.
#include <algorithm>
#include <thread>

#include "adapter_impl.hpp"
#include "prodsm/base64.hpp"
#include "prodsm/detail/backoff.hpp"

namespace prodsm::tools::dsconf {
namespace {

/// `e` with the stream's path in its message: "read: HTTP 404 ..." -> "read /s: HTTP 404 ...".
Error naming_path(Error e, const std::string& path) {
  const std::string_view prefix = "read: ";
  if (e.message.rfind(prefix, 0) == 0) {
    e.message = "read " + path + ": " + e.message.substr(prefix.size());
  } else {
    e.message = "read " + path + ": " + e.message;
  }
  return e;
}

/// The wait a 429/5xx response asks for (Retry-After delta-seconds), if any.
std::optional<Duration> retry_after(const ds::Response& r) {
  const auto v = r.header("Retry-After");
  if (!v) return std::nullopt;
  const auto seconds = ds::parse_protocol_number(*v);
  if (!seconds) return std::nullopt;
  return std::chrono::seconds{static_cast<std::int64_t>(std::min<std::uint64_t>(*seconds, 3600))};
}

}  // namespace

RetryPolicy Adapter::Impl::request_retry_policy() {
  RetryPolicy p;
  p.max_attempts = 5;
  p.backoff_initial_ns = std::chrono::milliseconds{50};
  p.backoff_max_ns = std::chrono::seconds{2};
  return p;
}

asio::ExchangeResult Adapter::Impl::exchange_retrying(const std::string& request, bool head_request, bool idempotent) {
  const RetryPolicy policy = request_retry_policy();
  detail::SplitMix64 rng(policy.jitter_seed);
  for (std::uint32_t attempt = 1;; ++attempt) {
    auto result = exchange(request, head_request);
    Error failure;
    if (result) {
      const int s = result->status;
      if (s != 429 && (s < 500 || s > 599)) return result;
      failure = make_error(ErrorCode::unavailable, Certainty::definite, true, "HTTP " + std::to_string(s));
      failure.retry_after_ns = retry_after(*result);
    } else {
      failure = result.error();
      const bool may_resend = failure.retryable && (failure.certainty == Certainty::definite || idempotent);
      if (!may_resend) return result;
    }
    if (attempt >= policy.max_attempts) return result;
    const Duration wait = detail::backoff_delay(policy, attempt, failure, rng);
    // Within the command's deadline only: past it, the last answer is the result.
    if (std::chrono::steady_clock::now() + wait >= deadline) return result;
    std::this_thread::sleep_for(wait);
  }
}

Json Adapter::Impl::read(const Json& command) {
  const std::string path = required_string(command, "path");
  const ds::StreamUrl url = stream_url(path);
  std::string offset = optional_string(command, "offset").value_or("-1");
  if (auto it = command.find("live"); it != command.end() && !it->is_null()) {
    if (!(it->is_boolean() && !it->get<bool>())) {
      return error_result(
          "read", codes::kNotSupported,
          "live reads (" + it->dump() + ") are not supported: prodsm's adapter does catch-up reads only (live: false)");
    }
  }
  const auto max_chunks = static_cast<std::size_t>(optional_integer(command, "maxChunks", 0, 1'000'000).value_or(100));
  const ds::RequestOptions request_options{extra_headers(command)};

  Json chunks = Json::array();
  std::size_t total = 0;
  bool up_to_date = false;
  bool closed = false;
  for (std::size_t requests = 0; requests < options.max_read_requests; ++requests) {
    auto response = exchange_retrying(ds::encode_read(url, offset, request_options), false, true);
    if (!response) return error_result("read", naming_path(response.error(), path), Operation::read);
    auto got = ds::classify_read(*response);
    if (!got) return error_result("read", naming_path(got.error(), path), Operation::read);
    const bool empty = got->body.empty();
    if (!empty && chunks.size() < max_chunks) {
      Json chunk;
      const auto ct = response->header("Content-Type");
      bool done = false;
      if (ct && is_json_content_type(*ct)) {
        // JSON streams: the items of this response's array, re-serialized compactly
        // (JSON.stringify of the parsed array, as the TypeScript adapter reports them).
        // A body that is not a JSON array (truncated, corrupted) is a parse error, never
        // data (consumer/json-parsing-errors.yaml).
        Json items = Json::parse(got->body, nullptr, false);
        if (!items.is_array()) {
          return error_result(
              "read", codes::kParseError,
              "read " + path + ": the JSON stream's response body is not a JSON array (" +
                  (items.is_discarded() ? std::string("it does not parse") : "a " + std::string(items.type_name())) +
                  ", " + std::to_string(got->body.size()) + " bytes)",
              response->status);
        }
        if (!items.empty()) chunk["data"] = items.dump(-1, ' ', false, Json::error_handler_t::replace);
        done = true;
      }
      if (!done) {
        if (is_valid_utf8(got->body)) {
          chunk["data"] = got->body;
        } else {
          chunk["data"] = base64::encode(got->body);
          chunk["binary"] = true;
        }
      }
      if (!chunk.is_null()) {
        chunk["offset"] = got->next_offset;
        chunks.push_back(std::move(chunk));
      }
      total += got->body.size();
    }
    if (!got->next_offset.empty()) offset = got->next_offset;
    up_to_date = got->up_to_date;
    closed = got->closed;
    if (up_to_date || closed || empty) break;  // caught up, the end, or no progress
    if (chunks.size() >= max_chunks || total >= options.max_read_bytes) break;
  }
  Json r = success("read");
  r["status"] = 200;
  r["chunks"] = std::move(chunks);
  r["offset"] = offset;
  r["upToDate"] = up_to_date || closed;
  r["streamClosed"] = closed;
  return r;
}

}  // namespace prodsm::tools::dsconf
