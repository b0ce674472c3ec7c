// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file stream_ops.hpp
/// Stream administration over a Session, as Asio operations: create (PUT), head, catch-up
/// read (GET until up to date), delete, and close the stream (POST Stream-Closed: true).
/// Create, head, delete and close are single requests, not retried; reads run the shared
/// ds::StreamReader (streamed, retried, bounded: ds/reader.hpp). Errors are classified
/// values (S7).
/// Source: PROTOCOL.md of durable-streams/durable-streams.

#include <functional>
#include <memory>
#include <string>

#include "prodsm/asio/session.hpp"
#include "prodsm/ds/reader.hpp"
#include "prodsm/ds/results.hpp"

namespace prodsm::asio {

/// Outcomes of the stream operations (ds/results.hpp; the blocking adapter's are the same).
using CreateStreamResult = ds::CreateStreamResult;
using HeadStreamResult = ds::HeadStreamResult;
using CloseStreamResult = ds::CloseStreamResult;
using DeleteStreamResult = ds::DeleteStreamResult;

/// Everything read from a stream by read_stream_all (ds/reader.hpp).
using StreamContents = ds::StreamContents;
/// Outcome of read_stream_all: everything read, or the error that stopped the read.
using ReadStreamResult = ds::ReadStreamResult;
/// Outcome of read_stream: where the read ended, or the error that stopped it.
using ReadOutcome = ds::ReadOutcome;
/// Receives a streamed read's data (ds::ReadChunk) on the session's strand, synchronously
/// while the response is parsed: while it runs the session reads nothing (that is the
/// back-pressure), so it may block — every other request on the session waits meanwhile.
/// Return false to stop the read (it ends with `cancelled`).
using ReadHandler = std::function<bool(const ds::ReadChunk&)>;
/// Told each retry of a streamed read when it is decided, before it goes out (E4: the
/// failure, the offset read again, the attempt, the wait), on the session's strand; not
/// the failure that ends the read (that is its outcome). Must not block; a throw is
/// caught and dropped. Empty: not told.
using ReadRetryHandler = std::function<void(const ds::ReadRetry&)>;

// Callback versions: `done` runs once, on the session's strand. Error statuses not listed
// are classified as for an append (S7: 404/410 not_found, 408 request_timeout, other 4xx
// rejected, 429/503 and 5xx unavailable — definite for a HEAD or GET, which changes
// nothing); transport errors of Session::exchange are passed through.

/// Creates the stream: PUT `url` with `content_type` and `create` (TTL, expiry, created closed).
/// Success on 201 (created) or 200 (same configuration); 409: conflict (other configuration).
void create_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                   ds::CreateOptions create, ds::RequestOptions options, std::function<void(CreateStreamResult)> done);
/// Reads the stream's metadata: HEAD `url`. Success on 200 with Stream-Next-Offset; 404/410:
/// not_found; a missing Stream-Next-Offset: protocol_error.
void head_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                 std::function<void(HeadStreamResult)> done);
/// Deletes the stream: DELETE `url`. Success on 200/204; 404/410: not_found.
void delete_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                   std::function<void(DeleteStreamResult)> done);
/// Closes the stream: POST `url` with an empty body and `Stream-Closed: true`, without producer
/// headers. Success on 200/204; 409 with Stream-Closed: stream_closed (S6); other 409: conflict.
void close_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                  ds::RequestOptions options, std::function<void(CloseStreamResult)> done);
/// A streamed catch-up read (ds::StreamReader): from options.offset until the server says
/// up to date or closed, handing each piece of data to `on_data` as it arrives (bytes
/// runs, or JSON elements); `done` runs once, on the strand, with where the read ended or
/// the error (404: not_found naming the path; a JSON body that does not parse:
/// protocol_error; 408/429/5xx/lost connections retried within options.retry; the bounds of
/// ds::ReadOptions; `cancelled` when on_data stopped it or options.timeout_ns passed).
/// Invalid options: `done` gets `rejected` naming the field. `on_retry`: see ReadRetryHandler.
void read_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::ReadOptions options,
                 ReadHandler on_data, std::function<void(ReadOutcome)> done, ReadRetryHandler on_retry = {});
/// Reads from offset "-1" until the server says up to date, collecting everything
/// (read_stream with default options otherwise); `json` = a JSON stream (the elements
/// are joined into one array text). Stops with protocol_error after `max_bytes` bytes (R3).
void read_stream_all(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, bool json,
                     std::size_t max_bytes, ds::RequestOptions options, std::function<void(ReadStreamResult)> done);

namespace detail {
/// Starts a stream operation as an Asio operation with signature void(Result):
/// `start(done)` begins it, and `done(Result)` completes the token's handler on its
/// associated executor.
template <class Result, class Token, class Start>
auto initiate_stream_op(Token&& token, Start start) {
  return ::asio::async_initiate<Token, void(Result)>(
      [start = std::move(start)](auto handler) mutable {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        start([shared](Result r) {
          auto ex = ::asio::get_associated_executor(*shared);
          ::asio::dispatch(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
        });
      },
      token);
}
}  // namespace detail

// Asio-operation versions of the callback versions above: signature void(<Result>); the
// handler runs on its associated executor.

/// create_stream as an Asio operation: PUT `url`; signature void(CreateStreamResult); errors as create_stream.
template <class Token>
auto async_create_stream(std::shared_ptr<Session> s, ds::StreamUrl url, std::string content_type,
                         ds::CreateOptions create, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<CreateStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), ct = std::move(content_type), create = std::move(create),
                                   options = std::move(options)](auto done) mutable {
        create_stream(s, url, std::move(ct), std::move(create), std::move(options), std::move(done));
      });
}
/// head_stream as an Asio operation: HEAD `url`; signature void(HeadStreamResult); errors as head_stream.
template <class Token>
auto async_head_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<HeadStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), options = std::move(options)](auto done) mutable {
        head_stream(s, url, std::move(options), std::move(done));
      });
}
/// delete_stream as an Asio operation: DELETE `url`; signature void(DeleteStreamResult); errors as
/// delete_stream.
template <class Token>
auto async_delete_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<DeleteStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), options = std::move(options)](auto done) mutable {
        delete_stream(s, url, std::move(options), std::move(done));
      });
}
/// close_stream as an Asio operation: POST `url` with `Stream-Closed: true`; signature
/// void(CloseStreamResult); errors as close_stream.
template <class Token>
auto async_close_stream(std::shared_ptr<Session> s, ds::StreamUrl url, std::string content_type,
                        ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<CloseStreamResult>(
      std::forward<Token>(token),
      [s, url = std::move(url), ct = std::move(content_type), options = std::move(options)](auto done) mutable {
        close_stream(s, url, std::move(ct), std::move(options), std::move(done));
      });
}
/// read_stream as an Asio operation: signature void(ReadOutcome); `on_data` runs on the
/// session's strand as data arrives (see ReadHandler), and `on_retry` at each retry
/// (see ReadRetryHandler).
template <class Token>
auto async_read_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::ReadOptions options, ReadHandler on_data,
                       ReadRetryHandler on_retry, Token&& token) {
  return detail::initiate_stream_op<ReadOutcome>(
      std::forward<Token>(token), [s, url = std::move(url), options = std::move(options), on_data = std::move(on_data),
                                   on_retry = std::move(on_retry)](auto done) mutable {
        read_stream(s, url, std::move(options), std::move(on_data), std::move(done), std::move(on_retry));
      });
}
/// async_read_stream without a retry handler.
template <class Token>
auto async_read_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::ReadOptions options, ReadHandler on_data,
                       Token&& token) {
  return async_read_stream(std::move(s), std::move(url), std::move(options), std::move(on_data), ReadRetryHandler{},
                           std::forward<Token>(token));
}
/// read_stream_all as an Asio operation: GETs from offset "-1" until up to date, at most
/// `max_bytes` bytes; signature void(ReadStreamResult); errors as read_stream_all.
template <class Token>
auto async_read_stream_all(std::shared_ptr<Session> s, ds::StreamUrl url, bool json, std::size_t max_bytes,
                           ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<ReadStreamResult>(
      std::forward<Token>(token),
      [s, url = std::move(url), json, max_bytes, options = std::move(options)](auto done) mutable {
        read_stream_all(s, url, json, max_bytes, std::move(options), std::move(done));
      });
}

}  // namespace prodsm::asio
