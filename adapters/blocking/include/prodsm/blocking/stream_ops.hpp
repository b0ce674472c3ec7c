// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file stream_ops.hpp
/// Stream administration over a blocking Session, as calls that wait for their outcome:
/// create (PUT), head, catch-up read (GET until up to date), delete, and close the stream
/// (POST Stream-Closed: true). The same operations and result types as the Asio
/// adapter's (prodsm/asio/stream_ops.hpp). Create, head, delete and close are single
/// requests, not retried; reads run the shared ds::StreamReader (streamed, retried,
/// bounded: ds/reader.hpp). Errors are classified values (S7). Not from a session handler (they would wait for the I/O
/// thread that runs it: `would_block`). Source: PROTOCOL.md of durable-streams/durable-streams.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "prodsm/blocking/session.hpp"
#include "prodsm/ds/reader.hpp"
#include "prodsm/ds/results.hpp"

namespace prodsm::blocking {

using CreateStreamResult = ds::CreateStreamResult;  ///< see ds/results.hpp
using HeadStreamResult = ds::HeadStreamResult;      ///< see ds/results.hpp
using CloseStreamResult = ds::CloseStreamResult;    ///< see ds/results.hpp
using DeleteStreamResult = ds::DeleteStreamResult;  ///< see ds/results.hpp
using StreamContents = ds::StreamContents;          ///< see ds/reader.hpp
using ReadStreamResult = ds::ReadStreamResult;      ///< see ds/reader.hpp
using ReadOutcome = ds::ReadOutcome;                ///< see ds/reader.hpp
/// Receives a streamed read's data (ds::ReadChunk): on the session's I/O thread while a
/// response's body is parsed (while it runs the session reads nothing: that is the
/// back-pressure, and every other request on the session waits), on the calling thread
/// otherwise; never two calls at once. Return false to stop the read (`cancelled`).
using ReadHandler = std::function<bool(const ds::ReadChunk&)>;
/// Told each retry of a streamed read when it is decided, before it goes out (E4: the
/// failure, the offset read again, the attempt, the wait), on the calling thread; not
/// the failure that ends the read (that is its outcome). Must not block; a throw is
/// caught and dropped. Empty: not told.
using ReadRetryHandler = std::function<void(const ds::ReadRetry&)>;

/// PUT `url` with `content_type` and `create` (TTL, expiry, created closed). Success on
/// 201 (created) or 200 (same configuration); 409: conflict. `timeout_ns`: how long to
/// wait (then `cancelled`).
[[nodiscard]] CreateStreamResult create_stream(Session& session, const ds::StreamUrl& url,
                                               const std::string& content_type, const ds::CreateOptions& create = {},
                                               const ds::RequestOptions& options = {},
                                               std::optional<Duration> timeout_ns = std::nullopt);
/// HEAD `url`: content type, next offset, closed. 404/410: not_found.
[[nodiscard]] HeadStreamResult head_stream(Session& session, const ds::StreamUrl& url,
                                           const ds::RequestOptions& options = {},
                                           std::optional<Duration> timeout_ns = std::nullopt);
/// DELETE `url`. Success on 200/204; 404/410: not_found.
[[nodiscard]] DeleteStreamResult delete_stream(Session& session, const ds::StreamUrl& url,
                                               const ds::RequestOptions& options = {},
                                               std::optional<Duration> timeout_ns = std::nullopt);
/// POST `url` with an empty body and `Stream-Closed: true`, without producer headers.
/// Success on 200/204 (the final offset); 409 with Stream-Closed: stream_closed (S6).
[[nodiscard]] CloseStreamResult close_stream(Session& session, const ds::StreamUrl& url,
                                             const std::string& content_type, const ds::RequestOptions& options = {},
                                             std::optional<Duration> timeout_ns = std::nullopt);
/// A streamed catch-up read (ds::StreamReader): from options.offset until the server says
/// up to date or closed, handing each piece of data to `on_data` as it arrives (bytes
/// runs, or JSON elements), and waits for its end. Errors as the Asio adapter's
/// read_stream (404 not_found naming the path; a JSON body that does not parse:
/// protocol_error; 408/429/5xx/lost connections retried within options.retry; `cancelled`
/// when on_data stopped it or options.timeout_ns passed; invalid options: `rejected`
/// naming the field). From a session handler: `would_block`. `on_retry`: see ReadRetryHandler.
[[nodiscard]] ReadOutcome read_stream(Session& session, const ds::StreamUrl& url, ds::ReadOptions options,
                                      ReadHandler on_data, ReadRetryHandler on_retry = {});
/// Reads from offset "-1" until up to date, collecting everything (read_stream);
/// `json`: a JSON stream (elements joined into one array text). At most `max_bytes`
/// bytes (then protocol_error, R3).
[[nodiscard]] ReadStreamResult read_stream_all(Session& session, const ds::StreamUrl& url, bool json,
                                               std::size_t max_bytes, const ds::RequestOptions& options = {});

}  // namespace prodsm::blocking
