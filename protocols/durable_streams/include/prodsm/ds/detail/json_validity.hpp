// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_validity.hpp
/// Internal: the one rule by which prodsm judges whether a text is exactly one JSON value
/// — a record at submit (DurableStreamsPolicy, B5), an element of a JSON read body
/// (JsonArraySplitter), a line of `prodsm produce --json`. Not part of the public API.
///
/// simdjson's DOM parser judges syntax, UTF-8 and nesting depth (up to 1024 levels). It
/// refuses an integer literal beyond 64 bits (NUMBER_ERROR), which is valid JSON
/// (RFC 8259 section 6 sets no range) and what a JSON-mode server writes back for a large
/// double (1e20 comes back as 100000000000000000000): only then is the text judged again
/// with each such literal replaced by 0 (long_integers_as_zero in json_elements.hpp).

#include <memory>
#include <optional>
#include <string_view>

namespace prodsm::ds::detail {

/// Why a text is not accepted as one JSON value.
struct JsonRefusal {
  bool out_of_memory = false;  ///< the parser could not allocate: the text was not judged
  bool number = false;         ///< a number is malformed or beyond the double range (1e400)
  std::string_view reason;     ///< simdjson's message (static storage), e.g. "The JSON
                               ///< document has an improper structure: ..."
};

/// Judges texts; keeps the parser's buffers and a padded copy buffer between calls, so
/// a long run of records costs no allocation per record once the largest was seen.
/// Memory: about 8 times the largest text judged so far (simdjson's DOM tape).
class JsonValidity {
 public:
  JsonValidity();
  ~JsonValidity();
  JsonValidity(JsonValidity&&) noexcept;             ///< movable
  JsonValidity& operator=(JsonValidity&&) noexcept;  ///< movable
  JsonValidity(const JsonValidity&) = delete;
  JsonValidity& operator=(const JsonValidity&) = delete;

  /// nullopt when `text` is exactly one JSON value (surrounding whitespace allowed);
  /// else why not. `text` is only read, during the call.
  std::optional<JsonRefusal> check(std::string_view text);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace prodsm::ds::detail
