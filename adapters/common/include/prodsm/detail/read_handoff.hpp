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

/// A reader and the caller's handler (`bool(const ds::ReadChunk&)`: false stops the read).
/// Not thread-safe: the adapter keeps it under its lock or on its strand.
struct ReadHandoff {
  /// Takes the reader and the handler.
  ReadHandoff(ds::StreamReader r, std::function<bool(const ds::ReadChunk&)> h)
      : reader{std::move(r)}, handler{std::move(h)} {}

  ds::StreamReader reader;                            ///< the sans-IO read (requests, parsing, retries)
  std::function<bool(const ds::ReadChunk&)> handler;  ///< the caller's: false stops the read
  std::uint64_t responses_told = 0;                   ///< responses whose end offset the handler was told

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
