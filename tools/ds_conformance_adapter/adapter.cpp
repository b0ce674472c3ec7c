// SPDX-License-Identifier: Apache-2.0
// The adapter's dispatch, init/shutdown and stream commands (create, connect, append,
// read, head, delete, close). Stream commands are single requests over one pipelined
// prodsm::asio::Session, encoded and classified by prodsm's Durable Streams codec.
#include <asio/use_future.hpp>

#include <cstdio>
#include <new>

#include "adapter_impl.hpp"
#include "prodsm/base64.hpp"

#ifndef PRODSM_VERSION
#define PRODSM_VERSION "0.0.0"
#endif

namespace prodsm::tools::dsconf {
namespace {

/// The body of an append, a close or a create's initial data: one message. In JSON mode
/// it is sent as `[data]`, as the TypeScript client does, so an array-valued message
/// stays one message (the server flattens exactly one array level).
std::string message_body(std::string data, bool json) {
  if (!json) return data;
  return "[" + data + "]";
}

void log_line(const char* what, const std::string& text) {
  std::fprintf(stderr, "prodsm-ds-conformance-adapter: %s %s\n", what, text.c_str());
}

}  // namespace

// ---- Adapter ------------------------------------------------------------------------------

Adapter::Adapter(AdapterOptions options) : impl_{std::make_unique<Impl>(options)} {}
Adapter::~Adapter() = default;

bool Adapter::shutdown_requested() const noexcept {
  return impl_->shutdown_done;
}

Json Adapter::handle(const Json& command) noexcept {
  std::string type = "init";  // protocol.ts has no "unknown": the TS adapters use "init"
  try {
    impl_->deadline = std::chrono::steady_clock::now() + impl_->command_timeout;
    if (!command.is_object()) {
      return error_result(type, codes::kParseError, "a command must be a JSON object");
    }
    auto it = command.find("type");
    if (it == command.end() || !it->is_string()) {
      return error_result(type, codes::kInvalidArgument, "type: required string");
    }
    type = it->get<std::string>();
    if (impl_->options.verbose) log_line("<-", serialize_line(command).substr(0, 2000));
    impl_->dynamic.begin_command();
    Json result = impl_->dispatch(type, command);
    impl_->report_dynamic(result);
    if (impl_->options.verbose) log_line("->", serialize_line(result).substr(0, 2000));
    return result;
  } catch (const ArgumentError& e) {
    return error_result(type, codes::kInvalidArgument, e.what());
  } catch (const TimeoutError& e) {
    log_line(type.c_str(), e.what());
    return error_result(type, codes::kTimeout, e.what());
  } catch (ResultError& e) {
    return std::move(e.result);
  } catch (const std::bad_alloc&) {
    return error_result(type, codes::kInternalError, "out of memory");
  } catch (const std::exception& e) {
    log_line(type.c_str(), e.what());
    return error_result(type, codes::kInternalError, e.what());
  } catch (...) {
    return error_result(type, codes::kInternalError, "unknown failure");
  }
}

// ---- state --------------------------------------------------------------------------------

Adapter::Impl::Impl(AdapterOptions o) : options{o}, command_timeout{o.command_timeout} {
  io_thread = std::thread([this] { io.run(); });
}

Adapter::Impl::~Impl() {
  deadline = std::chrono::steady_clock::now() + command_timeout;
  try {
    reset_state();
  } catch (...) {
  }
  work.reset();
  io.stop();
  io_thread.join();
}

void Adapter::Impl::reset_state() {
  while (!producer_order.empty()) drop_producer(producer_order.front());
  producers.clear();
  content_types.clear();
  content_type_order.clear();
  if (session) session->close();
  session.reset();
  server.reset();
  initialized = false;
}

Json Adapter::Impl::dispatch(const std::string& type, const Json& command) {
  if (type == "init") return init(command);
  if (type == "shutdown") return shutdown();
  if (type == "benchmark" || type == "server-close") {
    return error_result(type, codes::kNotSupported,
                        type + " is not supported by prodsm's adapter (see docs/ds-client-conformance.md)");
  }
  using Handler = Json (Impl::*)(const Json&);
  static const std::map<std::string, Handler, std::less<>> handlers{
      {"create", &Impl::create},
      {"connect", &Impl::connect},
      {"append", &Impl::append},
      {"read", &Impl::read},
      {"head", &Impl::head},
      {"delete", &Impl::remove},
      {"close", &Impl::close},
      {"idempotent-append", &Impl::idempotent_append},
      {"idempotent-append-batch", &Impl::idempotent_append_batch},
      {"idempotent-close", &Impl::idempotent_close},
      {"idempotent-detach", &Impl::idempotent_detach},
      {"validate", &Impl::validate},
      {"set-dynamic-header", &Impl::set_dynamic_header},
      {"set-dynamic-param", &Impl::set_dynamic_param},
      {"clear-dynamic", &Impl::clear_dynamic},
  };
  auto it = handlers.find(type);
  if (it == handlers.end()) {
    return error_result(type, codes::kNotSupported, "Unknown command type: " + type);
  }
  if (!initialized) {
    return error_result(type, codes::kInvalidArgument, "no server yet: init (with serverUrl) must come first");
  }
  return (this->*(it->second))(command);
}

Json Adapter::Impl::init(const Json& command) {
  const std::string server_url = required_string(command, "serverUrl");
  const auto timeout_ms = optional_integer(command, "timeoutMs", 1, 600'000);
  auto url = ds::StreamUrl::parse(server_url);
  if (!url) throw ArgumentError("serverUrl: " + url.error());
  reset_state();
  command_timeout = timeout_ms ? std::chrono::milliseconds{*timeout_ms} : options.command_timeout;
  while (!url->path.empty() && url->path.back() == '/') url->path.pop_back();
  asio::SessionOptions session_options;
  session_options.request_timeout_ns = command_timeout;
  session_options.header_provider = dynamic.provider();  // every request asks (set-dynamic-*)
  // No hedged resends: the suite's scenarios expect each append sent once (as the
  // TypeScript client does), and a slow response (a loaded or sanitizer-slowed machine)
  // that stall detection resent would come back as a duplicate without an offset.
  session_options.stall.enabled = false;
  auto created = asio::Session::create(io.get_executor(), url->host, url->port, session_options);
  if (!created) throw ArgumentError("serverUrl: " + created.error());
  session = std::move(*created);
  server = std::move(*url);
  initialized = true;

  Json r = success("init");
  r["clientName"] = "prodsm";
  r["clientVersion"] = PRODSM_VERSION;
  // Only what works: catch-up reads, the batching idempotent Producer, maxBatchItems
  // validation with 0 rejected, dynamic headers and params (the session's per-request
  // header provider), RetryOptions (the core's RetryPolicy). No live reads (SSE,
  // long-poll, auto), no streaming reads.
  r["features"] = Json{{"batching", true},     {"sse", false},       {"longPoll", false},
                       {"auto", false},        {"streaming", false}, {"dynamicHeaders", true},
                       {"retryOptions", true}, {"batchItems", true}, {"strictZeroValidation", true}};
  return r;
}

Json Adapter::Impl::shutdown() {
  reset_state();
  shutdown_done = true;
  return success("shutdown");
}

// ---- helpers ------------------------------------------------------------------------------

ds::StreamUrl Adapter::Impl::stream_url(const std::string& path) const {
  if (path.empty() || path.front() != '/') throw ArgumentError("path: must start with '/'");
  ds::StreamUrl url = *server;
  url.path += path;
  return url;
}

ds::Headers Adapter::Impl::extra_headers(const Json& command) {
  ds::Headers headers;
  for (auto& [name, value] : string_map(command, "headers")) {
    ds::Header h{name, value};
    if (auto why = ds::check_extra_header(h)) throw ArgumentError("headers." + name + ": " + *why);
    headers.push_back(std::move(h));
  }
  return headers;
}

asio::ExchangeResult Adapter::Impl::exchange(std::string request, bool head_request) {
  if (request.empty()) throw std::bad_alloc();  // the encoders' only failure
  http::Request r;
  r.bytes = std::move(request);
  r.head = head_request;
  auto f = session->async_exchange(std::move(r), ::asio::use_future);
  return await(f);
}

std::string Adapter::Impl::content_type_for(const std::string& command_type, const std::string& path,
                                            const ds::Headers& headers) {
  if (auto it = content_types.find(path); it != content_types.end()) return it->second;
  auto response = exchange_retrying(ds::encode_head(stream_url(path), ds::RequestOptions{headers}), true, true);
  if (!response) throw ResultError{error_result(command_type, response.error())};
  auto head = ds::classify_head(*response);
  if (!head) throw ResultError{error_result(command_type, head.error())};
  std::string content_type = head->content_type.empty() ? "application/octet-stream" : head->content_type;
  remember_content_type(path, content_type);
  return content_type;
}

void Adapter::Impl::remember_content_type(const std::string& path, const std::string& content_type) {
  if (content_type.empty()) return;
  auto [it, inserted] = content_types.insert_or_assign(path, content_type);
  (void)it;
  if (!inserted) return;
  content_type_order.push_back(path);
  while (content_types.size() > options.max_cached_content_types && !content_type_order.empty()) {
    content_types.erase(content_type_order.front());
    content_type_order.pop_front();
  }
}

void Adapter::Impl::forget_content_type(const std::string& path) {
  content_types.erase(path);
  std::erase(content_type_order, path);
}

// ---- stream commands ----------------------------------------------------------------------

Json Adapter::Impl::create(const Json& command) {
  const std::string path = required_string(command, "path");
  const ds::StreamUrl url = stream_url(path);
  const std::string content_type = optional_string(command, "contentType").value_or("application/octet-stream");
  const auto ttl = optional_integer(command, "ttlSeconds", 0, kMaxProtocolNumber);
  const auto expires_at = optional_string(command, "expiresAt");
  const bool closed = optional_bool(command, "closed").value_or(false);
  const auto data = optional_string(command, "data");
  const bool has_data = data && !data->empty();
  const ds::RequestOptions request_options{extra_headers(command)};

  // PUT creates; initial data (not in the codec's PUT) follows as one append, closing the
  // stream with it when asked — the same end state, in two requests.
  ds::CreateOptions create;
  if (ttl) create.ttl_seconds = static_cast<std::uint64_t>(*ttl);
  create.expires_at = expires_at;
  create.closed = closed && !has_data;
  auto response = exchange(ds::encode_create(url, content_type, create, request_options));
  if (!response) return error_result("create", response.error());
  auto created = ds::classify_create(*response);
  if (!created) return error_result("create", created.error());
  remember_content_type(path, content_type);
  std::string offset = created->next_offset;

  if (has_data && created->created) {
    const std::string body = message_body(*data, is_json_content_type(content_type));
    ds::AppendOptions append;
    append.close_stream = closed;
    auto appended = exchange(ds::encode_append(url, content_type, body.size(), append, request_options) + body);
    if (!appended) return error_result("create", appended.error());
    auto ack = ds::classify_append(*appended, std::nullopt);
    if (!ack) return error_result("create", ack.error());
    offset = ack->next_offset;
  }
  if (offset.empty()) {
    if (auto h = exchange(ds::encode_head(url, request_options), true)) {
      if (auto head = ds::classify_head(*h)) offset = head->next_offset;
    }
  }
  Json r = success("create");
  r["status"] = created->created ? 201 : 200;
  if (!offset.empty()) r["offset"] = offset;
  return r;
}

Json Adapter::Impl::connect(const Json& command) {
  const std::string path = required_string(command, "path");
  auto response =
      exchange_retrying(ds::encode_head(stream_url(path), ds::RequestOptions{extra_headers(command)}), true, true);
  if (!response) return error_result("connect", response.error());
  auto head = ds::classify_head(*response);
  if (!head) return error_result("connect", head.error());
  remember_content_type(path, head->content_type);
  Json r = success("connect");
  r["status"] = 200;
  if (!head->next_offset.empty()) r["offset"] = head->next_offset;
  return r;
}

Json Adapter::Impl::append(const Json& command) {
  if (auto it = command.find("ifMatch"); it != command.end() && !it->is_null()) {
    // The OCC cases (producer/occ.yaml) send ifMatch; protocol.ts's AppendCommand has no
    // such field and prodsm has no If-Match support: refuse rather than append anyway.
    return error_result("append", codes::kNotSupported, "ifMatch (If-Match optimistic concurrency) is not supported");
  }
  const std::string path = required_string(command, "path");
  const ds::StreamUrl url = stream_url(path);
  std::string data = required_string(command, "data");
  if (optional_bool(command, "binary").value_or(false)) {
    auto bytes = base64::decode(data);
    if (!bytes) throw ArgumentError("data: binary is true but data is not valid base64");
    data = std::move(*bytes);
  }
  ds::AppendOptions append;
  if (auto seq = optional_integer(command, "seq", 0, INT64_MAX)) append.stream_seq = std::to_string(*seq);
  const auto producer_id = optional_string(command, "producerId");
  const auto producer_epoch = optional_integer(command, "producerEpoch", 0, kMaxProtocolNumber);
  const auto producer_seq = optional_integer(command, "producerSeq", 0, kMaxProtocolNumber);
  if (producer_id || producer_epoch || producer_seq) {
    if (!producer_id || !producer_epoch || !producer_seq) {
      throw ArgumentError("producerId, producerEpoch, producerSeq: give all three or none");
    }
  }
  const ds::RequestOptions request_options{extra_headers(command)};
  const std::string content_type = content_type_for("append", path, request_options.extra_headers);
  const std::string body = message_body(std::move(data), is_json_content_type(content_type));
  if (producer_id) {
    append.producer = ds::ProducerHeaders{*producer_id, static_cast<std::uint64_t>(*producer_epoch),
                                          static_cast<std::uint64_t>(*producer_seq)};
  }
  // 429 and 5xx are retried within the adapter's retry policy (plain appends too, as the
  // TypeScript client does: a 5xx may have been applied, so a plain append may then be
  // appended twice; producer appends are deduplicated, S3). A connection lost after the
  // request was written is not retried for a plain append.
  const bool sequenced = append.producer.has_value();
  auto response = exchange_retrying(ds::encode_append(url, content_type, body.size(), append, request_options) + body,
                                    false, sequenced);
  if (!response) return error_result("append", response.error());
  std::optional<ds::ProducerStamp> sent;
  if (sequenced) sent = ds::ProducerStamp{append.producer->epoch, append.producer->seq};
  auto ack = ds::classify_append(*response, sent);
  if (!ack) return error_result("append", ack.error());
  Json r = success("append");
  // A plain append succeeds with 204; like the TypeScript adapter (and the suite's
  // expectations), success is reported as 200. A producer append reports the server's
  // status: 200 appended, 204 duplicate (S3).
  r["status"] = sequenced ? response->status : 200;
  if (!ack->next_offset.empty()) r["offset"] = ack->next_offset;
  if (sequenced) {
    r["duplicate"] = ack->duplicate;
    if (auto h = response->header("Producer-Epoch")) {
      if (auto v = ds::parse_protocol_number(*h)) r["producerEpoch"] = *v;
    }
    if (auto h = response->header("Producer-Seq")) {
      if (auto v = ds::parse_protocol_number(*h)) r["producerSeq"] = *v;
    }
  }
  return r;
}

Json Adapter::Impl::head(const Json& command) {
  const std::string path = required_string(command, "path");
  auto response =
      exchange_retrying(ds::encode_head(stream_url(path), ds::RequestOptions{extra_headers(command)}), true, true);
  if (!response) return error_result("head", response.error());
  auto head = ds::classify_head(*response);
  if (!head) return error_result("head", head.error());
  remember_content_type(path, head->content_type);
  Json r = success("head");
  r["status"] = 200;
  if (!head->next_offset.empty()) r["offset"] = head->next_offset;
  if (!head->content_type.empty()) r["contentType"] = head->content_type;
  r["streamClosed"] = head->closed;
  return r;
}

Json Adapter::Impl::remove(const Json& command) {
  const std::string path = required_string(command, "path");
  auto response = exchange(ds::encode_delete(stream_url(path), ds::RequestOptions{extra_headers(command)}));
  if (!response) return error_result("delete", response.error());
  auto deleted = ds::classify_delete(*response);
  if (!deleted) return error_result("delete", deleted.error());
  forget_content_type(path);
  Json r = success("delete");
  r["status"] = 200;
  return r;
}

Json Adapter::Impl::close(const Json& command) {
  const std::string path = required_string(command, "path");
  const ds::StreamUrl url = stream_url(path);
  const auto data = optional_string(command, "data");
  const auto content_type_given = optional_string(command, "contentType");
  std::string final_offset;
  if (data && !data->empty()) {  // append the final message and close, in one request
    const std::string content_type = content_type_given ? *content_type_given : content_type_for("close", path, {});
    const std::string body = message_body(*data, is_json_content_type(content_type));
    ds::AppendOptions append;
    append.close_stream = true;
    auto response = exchange(ds::encode_append(url, content_type, body.size(), append, {}) + body);
    if (!response) return error_result("close", response.error());
    auto ack = ds::classify_append(*response, std::nullopt);
    if (!ack) return error_result("close", ack.error());
    final_offset = ack->next_offset;
  } else {  // close only: idempotent on the server (204 again)
    std::string content_type;
    if (content_type_given) {
      content_type = *content_type_given;
    } else if (auto it = content_types.find(path); it != content_types.end()) {
      content_type = it->second;
    }
    auto response = exchange(ds::encode_close(url, content_type, std::nullopt, {}));
    if (!response) return error_result("close", response.error());
    auto closed = ds::classify_close(*response, std::nullopt);
    if (!closed) return error_result("close", closed.error());
    final_offset = closed->final_offset;
  }
  Json r = success("close");
  r["finalOffset"] = final_offset;
  return r;
}

}  // namespace prodsm::tools::dsconf
