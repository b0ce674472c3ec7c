// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file stream_ops.hpp
/// Stream administration over a Session, as Asio operations: create (PUT), head, catch-up
/// read (GET until up to date), delete, and close the stream (POST Stream-Closed: true).
/// These are single requests, not retried; errors are classified values (S7).
/// Source: PROTOCOL.md of durable-streams/durable-streams.

#include <functional>
#include <memory>
#include <string>

#include "prodsm/asio/session.hpp"

namespace prodsm::asio {

using CreateStreamResult = tl::expected<ds::CreateResult, Error>;
using HeadStreamResult = tl::expected<ds::HeadResult, Error>;
using CloseStreamResult = tl::expected<ds::CloseResult, Error>;
using DeleteStreamResult = tl::expected<void, Error>;

/// Everything read from a stream by read_stream_all.
struct StreamContents {
  /// Bytes streams: the bytes, concatenated. JSON streams: the elements of every
  /// response's array, joined as one JSON array text `[e0,e1,...]`.
  std::string body;
  std::string next_offset;  ///< where a later read would start
  bool closed = false;      ///< the stream is closed and this is all of it
  std::size_t reads = 0;    ///< GET requests made
};
using ReadStreamResult = tl::expected<StreamContents, Error>;

/// Callback versions (run on the session's strand).
void create_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                   ds::CreateOptions create, ds::RequestOptions options, std::function<void(CreateStreamResult)> done);
void head_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                 std::function<void(HeadStreamResult)> done);
void delete_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                   std::function<void(DeleteStreamResult)> done);
void close_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                  ds::RequestOptions options, std::function<void(CloseStreamResult)> done);
/// Reads from offset "-1" until the server says up to date; `json` = the stream is a
/// JSON stream (responses are arrays to join). Stops with protocol_error after
/// `max_bytes` bytes (R3).
void read_stream_all(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, bool json,
                     std::size_t max_bytes, ds::RequestOptions options, std::function<void(ReadStreamResult)> done);

namespace detail {
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

/// Asio-operation versions: signature void(<Result>).
template <class Token>
auto async_create_stream(std::shared_ptr<Session> s, ds::StreamUrl url, std::string content_type,
                         ds::CreateOptions create, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<CreateStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), ct = std::move(content_type), create = std::move(create),
                                   options = std::move(options)](auto done) mutable {
        create_stream(s, url, std::move(ct), std::move(create), std::move(options), std::move(done));
      });
}
template <class Token>
auto async_head_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<HeadStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), options = std::move(options)](auto done) mutable {
        head_stream(s, url, std::move(options), std::move(done));
      });
}
template <class Token>
auto async_delete_stream(std::shared_ptr<Session> s, ds::StreamUrl url, ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<DeleteStreamResult>(
      std::forward<Token>(token), [s, url = std::move(url), options = std::move(options)](auto done) mutable {
        delete_stream(s, url, std::move(options), std::move(done));
      });
}
template <class Token>
auto async_close_stream(std::shared_ptr<Session> s, ds::StreamUrl url, std::string content_type,
                        ds::RequestOptions options, Token&& token) {
  return detail::initiate_stream_op<CloseStreamResult>(
      std::forward<Token>(token),
      [s, url = std::move(url), ct = std::move(content_type), options = std::move(options)](auto done) mutable {
        close_stream(s, url, std::move(ct), std::move(options), std::move(done));
      });
}
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
