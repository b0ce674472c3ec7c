// SPDX-License-Identifier: Apache-2.0
#include "verify.hpp"

#include <algorithm>
#include <fstream>
#include <utility>

#include "interrupt.hpp"
#include "json_values.hpp"
#include "record_reader.hpp"
#include "stream_read.hpp"

namespace prodsm::tools {

bool StreamVerifier::fail(std::string why) {
  if (!problem_) problem_ = std::move(why);
  return false;
}

/// Takes the next expected record into current_; false after the last one.
bool StreamVerifier::pull() {
  auto record = next_();
  if (!record) return false;
  current_ = std::move(*record);
  position_ = 0;
  have_current_ = true;
  return true;
}

bool StreamVerifier::add(const ds::ReadChunk& chunk) {
  if (problem_) return false;
  if (chunk.next_offset) return true;
  if (json_) {
    if (!pull()) return fail("the stream holds more JSON values than the " + std::to_string(matched_) + " produced");
    // Compared as the server holds values: numbers as doubles, members in any order.
    const auto got = canonical_json(chunk.data);
    const auto want = canonical_json(current_);
    have_current_ = false;
    if (!got || !want || *got != *want) {
      return fail("JSON value " + std::to_string(matched_) + " differs from the record produced");
    }
    ++matched_;
    return true;
  }
  std::string_view data = chunk.data;
  while (!data.empty()) {
    if (!have_current_ || position_ == current_.size()) {
      if (have_current_) ++matched_;
      have_current_ = false;
      if (!pull()) {
        return fail("the stream holds more bytes than the " + std::to_string(stream_bytes_) +
                    " bytes produced (after record " + std::to_string(matched_) + ")");
      }
      continue;
    }
    const std::size_t n = std::min(data.size(), current_.size() - position_);
    const auto a = data.substr(0, n);
    const auto b = std::string_view(current_).substr(position_, n);
    if (a != b) {
      const auto at = static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
      return fail("the contents differ at byte " + std::to_string(stream_bytes_ + at) + " (in record " +
                  std::to_string(matched_) + ")");
    }
    position_ += n;
    stream_bytes_ += n;
    data.remove_prefix(n);
  }
  return true;
}

std::optional<std::string> StreamVerifier::finish() {
  if (problem_) return problem_;
  if (have_current_ && position_ < current_.size()) {
    return "the stream ends after " + std::to_string(stream_bytes_) + " bytes, inside record " +
           std::to_string(matched_);
  }
  if (have_current_) ++matched_;
  have_current_ = false;
  std::uint64_t missing = 0;
  while (pull()) {
    if (!json_ && current_.empty()) continue;
    ++missing;
  }
  if (missing > 0) {
    return "the stream ends after " + std::to_string(matched_) + " records; " + std::to_string(missing) +
           " more were produced";
  }
  return std::nullopt;
}

std::optional<VerifyProblem> verify_stream(const ds::StreamUrl& url, ::asio::io_context& io,
                                           const asio::SessionOptions& session_options, ds::ReadOptions read,
                                           const asio::ReadRetryHandler& on_retry, const std::string& input_path,
                                           std::uint64_t max_record_bytes, std::uint64_t records,
                                           const std::vector<std::string>& produced) {
  const bool json_mode = read.json;
  std::ifstream again;
  std::optional<RecordReader> reread;
  if (!input_path.empty()) {
    again.open(input_path, std::ios::binary);
    if (!again) return VerifyProblem{"cannot open the input '" + input_path + "' again to compare it"};
    reread.emplace(again, json_mode ? RecordReader::Mode::json : RecordReader::Mode::bytes,
                   json_mode ? max_record_bytes - 1 : max_record_bytes);
  }
  std::uint64_t given = 0;
  std::optional<std::string> input_problem;
  StreamVerifier verifier(json_mode, [&]() -> std::optional<std::string> {
    if (given >= records) return std::nullopt;
    if (!reread) return produced.at(given++);
    auto next = reread->next();
    if (!next || !*next) {
      if (!input_problem) input_problem = "the input '" + input_path + "' changed while it was produced";
      return std::nullopt;
    }
    ++given;
    return std::string(**next);
  });
  auto session = asio::Session::create(io.get_executor(), url, session_options);  // the run's TLS and headers
  if (!session) return VerifyProblem{"reading the stream back failed: " + session.error(), true};
  // An interrupt that comes while it reads ends it (every record was acknowledged
  // already); one that came before, while acknowledgements were awaited, changed nothing
  // (announce_input_read's promise), so then only an abort does.
  CliReadResult r = run_cli_read(
      *session, url, std::move(read), [&verifier](const ds::ReadChunk& c) { return verifier.add(c); }, !interrupted(),
      on_retry);
  (*session)->close();
  const bool differed = verifier.differs();  // before finish(), which also reports a short stream
  auto problem = verifier.finish();
  if (input_problem) return VerifyProblem{*input_problem};
  if (differed) return VerifyProblem{*problem};
  if (r.interrupted)
    return VerifyProblem{"not verified: an interrupt stopped the reading of the stream back", true, true};
  // A read that failed says why it failed, not that the stream seemed short.
  if (!r.outcome) return VerifyProblem{"reading the stream back failed: " + r.outcome.error().describe(), true};
  if (problem) return VerifyProblem{*problem};
  return std::nullopt;
}

}  // namespace prodsm::tools
