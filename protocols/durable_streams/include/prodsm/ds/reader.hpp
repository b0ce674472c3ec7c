// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file reader.hpp
/// A catch-up read of a whole Durable Streams stream as a sans-IO loop: the reader gives
/// the next GET, the caller sends it and hands back the outcome, until the server says up
/// to date (or closed). Both adapters' read operations run this one loop.
/// Source: PROTOCOL.md of durable-streams/durable-streams, "Reading" (catch-up reads,
/// Stream-Next-Offset, Stream-Up-To-Date, Stream-Closed; JSON mode returns arrays).

#include <cstddef>
#include <optional>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/error.hpp"
#include "prodsm/http/connection.hpp"

namespace prodsm::ds {

/// Everything read from a stream by a catch-up read.
struct StreamContents {
  /// Bytes streams: the bytes, concatenated. JSON streams: the elements of every
  /// response's array, joined as one JSON array text `[e0,e1,...]`.
  std::string body;
  std::string next_offset;  ///< where a later read would start
  bool closed = false;      ///< the stream is closed and this is all of it
  std::size_t reads = 0;    ///< GET requests made
};
/// Outcome of a catch-up read: everything read, or the error that stopped it.
using ReadStreamResult = tl::expected<StreamContents, Error>;

/// The catch-up read loop (see the file comment). Not thread-safe; movable.
class CatchUpReader {
 public:
  /// A read of `url` from the start (offset "-1"); `json`: the stream is a JSON stream
  /// (responses are arrays to join); at most `max_bytes` bytes (R3: more is a
  /// protocol_error naming the limit).
  CatchUpReader(StreamUrl url, bool json, std::size_t max_bytes, RequestOptions options = {});

  /// The next GET (retry_safe: a read changes nothing).
  [[nodiscard]] http::Request next_request();
  /// Consumes the outcome of the last next_request(): nullopt to go on with the next
  /// request, or the read's result. Errors: the transport's or the response's
  /// classified error (404 not_found, ...); protocol_error for a JSON read that is not an
  /// array, data that does not advance Stream-Next-Offset (it would be read twice), or
  /// more than max_bytes.
  std::optional<ReadStreamResult> handle(tl::expected<http::Response, Error> outcome);

 private:
  StreamUrl url_;
  bool json_;
  std::size_t max_bytes_;
  RequestOptions options_;
  StreamContents contents_;
  std::string offset_ = "-1";
};

}  // namespace prodsm::ds
