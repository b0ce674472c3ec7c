// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file read_handoff.hpp
/// Internal: how both adapters' streamed reads hand a ds::StreamReader's output to the
/// caller's data handler — every parsed chunk in order, then, when a response ended, a
/// chunk carrying only the offset it reached; a handler that returns false or throws
/// stops the read (cancelled, definite). Not part of the public API.

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "prodsm/ds/reader.hpp"

namespace prodsm::detail {

/// A reader and the caller's handlers (`bool(const ds::ReadChunk&)`: false stops the read;
/// `void(const ds::ReadRetry&)`, may be empty: each retry, E4). Not thread-safe: the
/// adapter keeps it under its lock or on its strand.
struct ReadHandoff {
  /// Takes the reader and the handlers.
  ReadHandoff(ds::StreamReader r, std::function<bool(const ds::ReadChunk&)> h,
              std::function<void(const ds::ReadRetry&)> on_retry_told = {})
      : reader{std::move(r)}, handler{std::move(h)}, on_retry{std::move(on_retry_told)} {}

  ds::StreamReader reader;                             ///< the sans-IO read (requests, parsing, retries)
  std::function<bool(const ds::ReadChunk&)> handler;   ///< the caller's: false stops the read
  std::function<void(const ds::ReadRetry&)> on_retry;  ///< the caller's, or empty: told each retry
  std::uint64_t responses_told = 0;                    ///< responses whose end offset the handler was told
  std::uint64_t retries_told = 0;                      ///< retries on_retry was told of

  /// Hands the reader's parsed output to the handler; false once the read was stopped.
  bool hand_on() {
    for (const std::string_view data : reader.output()) {
      if (!call(ds::ReadChunk{data, std::nullopt, reader.json()})) return false;
    }
    return true;
  }

  /// hand_on(), then, if any response ended since the last call, one chunk with the
  /// offset reached — unless a re-read is still catching up with data handed on before
  /// (ds::StreamReader::catching_up: the offset would be behind it); nothing more once
  /// the handler stopped the read.
  void hand_on_with_offsets() {
    if (!hand_on()) return;
    if (reader.summary().responses != responses_told) {
      responses_told = reader.summary().responses;
      if (!reader.catching_up()) call(ds::ReadChunk{{}, std::string_view(reader.offset()), reader.json()});
    }
    tell_retry();
  }

  /// Tells on_retry of a retry decided since the last call (E4), before it goes out; a
  /// throw is caught and dropped (the hook only observes: the read goes on).
  void tell_retry() {
    if (reader.retries_decided() == retries_told) return;
    retries_told = reader.retries_decided();
    if (!on_retry || !reader.last_retry()) return;
    try {
      on_retry(*reader.last_retry());
    } catch (...) {
    }
  }

  /// One chunk to the handler; a false or a throw stops the read.
  bool call(const ds::ReadChunk& chunk) {
    bool go_on = false;
    try {
      go_on = handler(chunk);
    } catch (...) {
      go_on = false;
    }
    if (!go_on) {
      reader.stop(
          make_error(ErrorCode::cancelled, Certainty::definite, false, "the read was stopped by its data handler"));
    }
    return go_on;
  }
};

/// The options of a read_stream_all: the whole stream (`json`: as a JSON array, capped at
/// `max_bytes` bytes) with `request`'s headers and timeouts.
inline ds::ReadOptions read_all_options(bool json, std::size_t max_bytes, ds::RequestOptions request) {
  ds::ReadOptions o;
  o.json = json;
  o.max_bytes = max_bytes;
  o.request = std::move(request);
  return o;
}

}  // namespace prodsm::detail
