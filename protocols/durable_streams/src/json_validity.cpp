// SPDX-License-Identifier: Apache-2.0
// detail::JsonValidity: simdjson's verdict, with integers beyond 64 bits taken as JSON.
#include "prodsm/ds/detail/json_validity.hpp"

#include <simdjson.h>

#include <cstring>
#include <string>
#include <vector>

#include "prodsm/ds/detail/json_elements.hpp"

namespace prodsm::ds::detail {

// simdjson reads SIMDJSON_PADDING bytes past the input: each text is copied into a
// padded buffer, reused between calls like the parser's own buffers.
struct JsonValidity::State {
  simdjson::dom::parser parser;
  std::vector<char> padded;

  simdjson::error_code parse(std::string_view text) {
    const std::size_t needed = text.size() + simdjson::SIMDJSON_PADDING;
    if (padded.size() < needed) padded.resize(needed);
    std::memcpy(padded.data(), text.data(), text.size());
    std::memset(padded.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    return parser.parse(padded.data(), text.size(), false).error();
  }
};

JsonValidity::JsonValidity() : state_{std::make_unique<State>()} {}
JsonValidity::~JsonValidity() = default;
JsonValidity::JsonValidity(JsonValidity&&) noexcept = default;
JsonValidity& JsonValidity::operator=(JsonValidity&&) noexcept = default;

std::optional<JsonRefusal> JsonValidity::check(std::string_view text) {
  auto error = state_->parse(text);
  if (error == simdjson::NUMBER_ERROR) {  // an integer literal beyond 64 bits is still JSON
    if (auto zeroed = long_integers_as_zero(text)) {
      if (state_->parse(*zeroed) == simdjson::SUCCESS) error = simdjson::SUCCESS;
    }
  }
  if (error == simdjson::SUCCESS) return std::nullopt;
  return JsonRefusal{error == simdjson::MEMALLOC, error == simdjson::NUMBER_ERROR, simdjson::error_message(error)};
}

}  // namespace prodsm::ds::detail
