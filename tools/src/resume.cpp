// SPDX-License-Identifier: Apache-2.0
#include "resume.hpp"

#include <simdjson.h>

namespace prodsm::tools {
namespace {

/// `text` parsed and minified by simdjson (so the stream's and the input's forms of one
/// value compare equal), or nullopt when it is not one JSON value.
std::optional<std::string> minified(simdjson::dom::parser& parser, std::string_view text) {
  simdjson::dom::element value;
  if (parser.parse(text.data(), text.size(), true).get(value) != simdjson::SUCCESS) return std::nullopt;
  return simdjson::minify(value);
}

}  // namespace

StreamPrefix::StreamPrefix(std::string body, std::vector<std::string> elements, bool json)
    : body_{std::move(body)}, elements_{std::move(elements)}, json_{json} {}

tl::expected<StreamPrefix, std::string> StreamPrefix::create(std::string body, bool json) {
  if (!json) return StreamPrefix(std::move(body), {}, false);
  simdjson::dom::parser parser;  // its default depth limit (1024) bounds the nesting
  simdjson::dom::array array;
  if (parser.parse(body).get(array) != simdjson::SUCCESS) {
    return tl::unexpected(std::string("the stream's contents are not one JSON array (or nest deeper than 1024)"));
  }
  std::vector<std::string> elements;
  for (simdjson::dom::element e : array) elements.push_back(simdjson::minify(e));
  return StreamPrefix({}, std::move(elements), true);
}

tl::expected<bool, std::string> StreamPrefix::holds(std::string_view record, std::uint64_t line) {
  if (done_) return false;
  if (json_) {
    if (position_ == elements_.size()) {
      done_ = true;
      return false;
    }
    simdjson::dom::parser parser;
    const auto mine = minified(parser, record);
    if (!mine || *mine != elements_[position_]) {
      return tl::unexpected("input line " + std::to_string(line) + " differs from the stream's JSON value " +
                            std::to_string(position_ + 1) + ": the stream does not hold a prefix of this input");
    }
    ++position_;
    ++skipped_;
    return true;
  }
  if (position_ == body_.size()) {
    done_ = true;
    return false;
  }
  const std::string_view rest = std::string_view(body_).substr(position_);
  if (rest.size() < record.size() && record.substr(0, rest.size()) == rest) {
    return tl::unexpected("the stream ends inside input line " + std::to_string(line) +
                          ": it does not hold a whole number of this input's records");
  }
  if (rest.substr(0, record.size()) != record) {
    return tl::unexpected("input line " + std::to_string(line) + " differs from the stream at byte " +
                          std::to_string(position_) + ": the stream does not hold a prefix of this input");
  }
  position_ += record.size();
  ++skipped_;
  return true;
}

std::optional<std::string> StreamPrefix::at_end() const {
  if (done_) return std::nullopt;
  if (json_ && position_ < elements_.size()) {
    return "the stream holds " + std::to_string(elements_.size() - position_) +
           " JSON values more than the input: it is not a prefix of this input";
  }
  if (!json_ && position_ < body_.size()) {
    return "the stream holds " + std::to_string(body_.size() - position_) +
           " bytes more than the input: it is not a prefix of this input";
  }
  return std::nullopt;
}

}  // namespace prodsm::tools
