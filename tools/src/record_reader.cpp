// SPDX-License-Identifier: Apache-2.0
#include "record_reader.hpp"

#include <simdjson.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace prodsm::tools {

struct JsonLineValidator::State {
  simdjson::dom::parser parser;
  std::vector<char> padded;
};

JsonLineValidator::JsonLineValidator() : state_{std::make_unique<State>()} {}
JsonLineValidator::~JsonLineValidator() = default;
JsonLineValidator::JsonLineValidator(JsonLineValidator&&) noexcept = default;
JsonLineValidator& JsonLineValidator::operator=(JsonLineValidator&&) noexcept = default;

std::optional<std::string> JsonLineValidator::check(std::string_view text) {
  const std::size_t needed = text.size() + simdjson::SIMDJSON_PADDING;
  if (state_->padded.size() < needed) state_->padded.resize(needed);
  std::memcpy(state_->padded.data(), text.data(), text.size());
  std::memset(state_->padded.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  if (state_->parser.parse(state_->padded.data(), text.size(), false).error() == simdjson::SUCCESS) {
    return std::nullopt;
  }
  // Invalid: ask nlohmann/json for a message with the position (slow path only).
  try {
    const auto parsed = nlohmann::json::parse(text);
    (void)parsed;
  } catch (const nlohmann::json::exception& e) {
    return std::string(e.what());
  }
  return std::string("not a single JSON value (number out of range or invalid UTF-8)");
}

RecordReader::RecordReader(std::istream& in, Mode mode, std::size_t max_record_bytes)
    : in_{in}, mode_{mode}, max_record_bytes_{max_record_bytes} {}

tl::expected<std::optional<std::string_view>, LineError> RecordReader::next() {
  while (true) {
    buffer_.clear();
    if (!std::getline(in_, buffer_)) {
      if (in_.bad()) return tl::unexpected(LineError{line_ + 1, "read error"});
      return std::optional<std::string_view>{};
    }
    ++line_;
    const bool had_newline = !in_.eof();
    bytes_ += buffer_.size() + (had_newline ? 1 : 0);
    if (mode_ == Mode::bytes) {
      if (had_newline) buffer_.push_back('\n');
      if (buffer_.size() > max_record_bytes_) {
        return tl::unexpected(LineError{line_, "line is " + std::to_string(buffer_.size()) +
                                                   " bytes, more than max batch bytes (" +
                                                   std::to_string(max_record_bytes_) + ")"});
      }
      if (buffer_.empty()) continue;  // a final empty "line" after the last '\n'
      return std::optional<std::string_view>{buffer_};
    }
    if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
    if (buffer_.find_first_not_of(" \t") == std::string::npos) {
      ++blank_;
      continue;
    }
    if (buffer_.size() + 1 > max_record_bytes_) {
      return tl::unexpected(
          LineError{line_, "line is " + std::to_string(buffer_.size()) + " bytes, more than max batch bytes allows"});
    }
    if (auto why = validator_.check(buffer_)) {
      return tl::unexpected(LineError{line_, "invalid JSON: " + *why});
    }
    return std::optional<std::string_view>{buffer_};
  }
}

}  // namespace prodsm::tools
