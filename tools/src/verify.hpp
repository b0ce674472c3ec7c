// SPDX-License-Identifier: Apache-2.0
#pragma once
// `prodsm produce --verify`: the stream read back (streamed, as it arrives) compared
// with the records produced, record by record, without holding the stream: bytes streams
// byte for byte against the records' concatenation; JSON streams value by value (equal
// as JSON values: the server may re-serialize them).

#include <asio/io_context.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prodsm/asio/session.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "prodsm/ds/reader.hpp"

namespace prodsm::tools {

/// Compares a streamed read with the expected records, pulled one by one from `next`.
class StreamVerifier {
 public:
  /// The next expected record (the input's records, in order, skipped ones included),
  /// or nullopt after the last one.
  using NextRecord = std::function<std::optional<std::string>()>;

  /// `json`: compare JSON values; else bytes.
  StreamVerifier(bool json, NextRecord next) : json_{json}, next_{std::move(next)} {}

  /// One chunk of the read (asio::ReadHandler): false once a difference is found (the
  /// read can stop there).
  bool add(const ds::ReadChunk& chunk);
  /// True once a chunk differed from the records (add returned false).
  [[nodiscard]] bool differs() const noexcept { return problem_.has_value(); }
  /// After the read: why the stream is not exactly the records, or nullopt.
  std::optional<std::string> finish();
  /// Records matched so far.
  [[nodiscard]] std::uint64_t matched() const noexcept { return matched_; }

 private:
  bool fail(std::string why);
  bool pull();

  bool json_;
  NextRecord next_;
  std::optional<std::string> problem_;
  std::string current_;       ///< bytes mode: the record being compared
  std::size_t position_ = 0;  ///< bytes of current_ matched
  bool have_current_ = false;
  std::uint64_t matched_ = 0;  ///< records matched completely
  std::uint64_t stream_bytes_ = 0;
};

/// Why `--verify` did not confirm the stream.
struct VerifyProblem {
  std::string message;  ///< what differs, or why nothing could be compared
  /// The stream could not be read back (a server or network failure after its retries):
  /// nothing was compared, so this is no mismatch (exit 3, not 1).
  bool unread = false;
  /// An interrupt ended the reading back (with `unread`): the run exits 130.
  bool interrupted = false;
};

/// `prodsm produce --verify`: reads the stream back (streamed, over a session with `session_options`: the run's TLS
/// and header provider) and compares it with the input's records: the input
/// file read again when there is one (`input_path`), else `produced`. Only the first
/// `records` input records are compared (a file that grew since is not an error), in
/// `read`'s mode (`read.json`). `read`: the read back's options (whole_stream_read: the
/// run's mode, request options and retry policy); `on_retry` is told its retries.
/// Returns why the stream is not exactly those records (or why it could not be read), or
/// nullopt when it is.
std::optional<VerifyProblem> verify_stream(const ds::StreamUrl& url, ::asio::io_context& io,
                                           const asio::SessionOptions& session_options, ds::ReadOptions read,
                                           const asio::ReadRetryHandler& on_retry, const std::string& input_path,
                                           std::uint64_t max_record_bytes, std::uint64_t records,
                                           const std::vector<std::string>& produced);

}  // namespace prodsm::tools
