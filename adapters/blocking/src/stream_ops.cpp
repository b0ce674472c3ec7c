// SPDX-License-Identifier: Apache-2.0
// Stream administration over a blocking Session: encode, exchange and wait, classify
// (reads: read_stream.cpp).
#include "prodsm/blocking/stream_ops.hpp"

namespace prodsm::blocking {
namespace {

/// Sends `bytes` and classifies the response with `classify`; transport errors pass.
template <class Result, class Classify>
Result run(Session& session, std::string bytes, bool head, std::optional<Duration> timeout_ns, Classify classify) {
  http::Request request;
  request.bytes = std::move(bytes);
  request.head = head;
  // Not retry_safe, though each is idempotent at the server: stall detection would give up
  // on a slow answer (connection_lost), and nothing here sends it again. One request is
  // bounded by timeout_ns and the session's request timeout, as on the Asio session.
  request.retry_safe = false;
  auto r = session.exchange_and_wait(std::move(request), timeout_ns);
  if (!r) return tl::unexpected(std::move(r.error()));
  return classify(*r);
}

}  // namespace

CreateStreamResult create_stream(Session& session, const ds::StreamUrl& url, const std::string& content_type,
                                 const ds::CreateOptions& create, const ds::RequestOptions& options,
                                 std::optional<Duration> timeout_ns) {
  return run<CreateStreamResult>(session, ds::encode_create(url, content_type, create, options), false, timeout_ns,
                                 [](const ds::Response& r) { return ds::classify_create(r); });
}

HeadStreamResult head_stream(Session& session, const ds::StreamUrl& url, const ds::RequestOptions& options,
                             std::optional<Duration> timeout_ns) {
  return run<HeadStreamResult>(session, ds::encode_head(url, options), true, timeout_ns,
                               [](const ds::Response& r) { return ds::classify_head(r); });
}

DeleteStreamResult delete_stream(Session& session, const ds::StreamUrl& url, const ds::RequestOptions& options,
                                 std::optional<Duration> timeout_ns) {
  return run<DeleteStreamResult>(session, ds::encode_delete(url, options), false, timeout_ns,
                                 [](const ds::Response& r) { return ds::classify_delete(r); });
}

CloseStreamResult close_stream(Session& session, const ds::StreamUrl& url, const std::string& content_type,
                               const ds::RequestOptions& options, std::optional<Duration> timeout_ns) {
  return run<CloseStreamResult>(session, ds::encode_close(url, content_type, std::nullopt, options), false, timeout_ns,
                                [](const ds::Response& r) { return ds::classify_close(r, std::nullopt); });
}

}  // namespace prodsm::blocking
