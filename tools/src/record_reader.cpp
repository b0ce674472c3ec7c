// SPDX-License-Identifier: Apache-2.0
#include "record_reader.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "json_values.hpp"
#include "prodsm/ds/detail/json_validity.hpp"

namespace prodsm::tools {

struct JsonLineValidator::State {
  ds::detail::JsonValidity validity;
};

JsonLineValidator::JsonLineValidator() : state_{std::make_unique<State>()} {}
JsonLineValidator::~JsonLineValidator() = default;
JsonLineValidator::JsonLineValidator(JsonLineValidator&&) noexcept = default;
JsonLineValidator& JsonLineValidator::operator=(JsonLineValidator&&) noexcept = default;

std::optional<std::string> JsonLineValidator::check(std::string_view text) {
  const auto refusal = state_->validity.check(text);
  if (!refusal) {
    // Valid; would a server holding numbers as doubles store this value? Checked exactly
    // only when a number could carry more than a double holds (json_values.hpp).
    if (may_lose_precision(text)) return double_loss(text);
    return std::nullopt;
  }
  // Invalid: ask nlohmann/json for a message with the position (slow path only).
  try {
    const auto parsed = nlohmann::json::parse(text);
    (void)parsed;
  } catch (const nlohmann::json::exception& e) {
    return std::string(e.what());
  }
  // nlohmann accepted what simdjson refused: nesting deeper than 1024 levels, or invalid
  // UTF-8 (an integer beyond 64 bits was taken above, and nlohmann refuses a number
  // beyond the double range). prodsm refuses those (the core's own check is simdjson's);
  // say exactly which.
  return std::string("not accepted by prodsm's JSON check: ") + std::string(refusal->reason);
}

RecordReader::RecordReader(std::istream& in, Mode mode, std::size_t max_record_bytes, std::function<bool()> interrupted,
                           std::function<InputEnd()> at_end)
    : in_{in},
      mode_{mode},
      max_record_bytes_{max_record_bytes},
      interrupted_{std::move(interrupted)},
      at_end_{std::move(at_end)} {}

tl::expected<RecordReader::Line, LineError> RecordReader::read_line() {
  // Bounded: reads at most max_record_bytes + 1 bytes of a line before giving up on it,
  // so an endless line costs no more memory than the largest acceptable record.
  constexpr std::size_t kChunkBytes = 64 * 1024;
  std::size_t length = 0;
  while (true) {
    const std::size_t room = std::min(kChunkBytes, max_record_bytes_ + 2 - length);
    buffer_.resize(length + room + 1);  // getline stores up to `room` bytes and a NUL
    in_.getline(buffer_.data() + length, static_cast<std::streamsize>(room + 1));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) return tl::unexpected(LineError{line_ + 1, "read error"});
    if (in_.eof()) {  // the input ended: a last line without '\n', or nothing at all
      length += got;
      if (at_end_) {
        if (auto what = at_end_(); what.kind == InputEnd::Kind::failed) {
          return tl::unexpected(LineError{line_ + 1, "cannot read the input: " + what.error});
        }
      }
      if (length == 0) return Line{{}, false, true};
      if (interrupted_ && interrupted_()) {  // not the end: a signal cut the line short
        dropped_partial_ = length;
        return Line{{}, false, true};
      }
      return Line{{buffer_.data(), length}, false, false};
    }
    if (!in_.fail()) {  // the '\n' was extracted (counted by gcount, not stored)
      length += got - 1;
      return Line{{buffer_.data(), length}, true, false};
    }
    length += got;  // `room` bytes stored and no '\n' yet
    in_.clear();
    if (length > max_record_bytes_) {
      return tl::unexpected(LineError{line_ + 1, "line is longer than max batch bytes allows" + largest_record()});
    }
  }
}

std::string RecordReader::largest_record() const {
  const std::size_t largest = mode_ == Mode::json ? max_record_bytes_ - 1 : max_record_bytes_;
  return " (the largest record it takes is " + std::to_string(largest) + " bytes" +
         (mode_ == Mode::json ? ": a JSON batch's body adds 2 bytes of [ ] around its records)" : ")");
}

tl::expected<std::optional<std::string_view>, LineError> RecordReader::next() {
  while (true) {
    auto line = read_line();
    if (!line) return tl::unexpected(std::move(line.error()));
    if (line->end) return std::optional<std::string_view>{};
    ++line_;
    if (!line->had_newline) unterminated_line_ = line_;  // the true end of the input (read_line)
    std::size_t length = line->text.size();
    bytes_ += length + (line->had_newline ? 1 : 0);
    if (mode_ != Mode::json) {
      if (mode_ == Mode::bytes && line->had_newline) buffer_[length++] = '\n';  // getline left room: its NUL sat there
      if (length > max_record_bytes_) {
        return tl::unexpected(LineError{line_, "line is " + std::to_string(length) +
                                                   " bytes, longer than max batch bytes allows" + largest_record()});
      }
      return std::optional<std::string_view>{std::string_view{buffer_.data(), length}};
    }
    std::string_view text = line->text;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find_first_not_of(" \t") == std::string_view::npos) {
      ++blank_;
      continue;
    }
    if (text.size() + 1 > max_record_bytes_) {
      return tl::unexpected(LineError{line_, "line is " + std::to_string(text.size()) +
                                                 " bytes, longer than max batch bytes allows" + largest_record()});
    }
    if (auto why = validator_.check(text)) {
      return tl::unexpected(LineError{line_, "invalid JSON: " + *why});
    }
    return std::optional<std::string_view>{text};
  }
}

}  // namespace prodsm::tools
