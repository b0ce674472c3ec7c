// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file json_elements.hpp
/// Internal: the elements of a JSON array text that arrives in pieces — a JSON stream's
/// read response (PROTOCOL.md, JSON mode: a read returns one array of the messages) —
/// so a read can hand them on one by one in bounded memory. Not part of the public API.
///
/// Two jobs, kept apart: a byte scanner that only finds where each top-level element
/// ends (it tracks string/escape state and bracket depth, nothing else), and simdjson,
/// which parses every element it cut out. The scanner accepts nothing by itself: an
/// element is handed on only once simdjson validated it (syntax, UTF-8, nesting depth up
/// to 1024; an integer literal beyond 64 bits, which simdjson refuses, is valid JSON and
/// what a JSON-mode server writes for a large double, so it is accepted), and the array's
/// own framing (`[`, commas, `]`, nothing after it but
/// whitespace) is checked. An element with a lone surrogate's escape (`"\ud800"`), valid
/// by RFC 8259's grammar and stored by JSON-mode servers, is handed on too
/// (lone_surrogates_replaced).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prodsm::ds::detail {

class JsonValidity;  // json_validity.hpp

/// simdjson's DOM refuses an integer literal beyond 64 bits (NUMBER_ERROR), though it is
/// valid JSON (RFC 8259 sets no range) and what a JSON-mode server writes for a large
/// double: 1e20 comes back as 100000000000000000000. Returns `json` with each integer
/// literal of 19 digits or more outside strings replaced by 0, for simdjson to judge the
/// rest, or nullopt when it has none. A token is cut at whitespace or a structural
/// character, so "100000000000000000000x" or "0100000000000000000000" stays as it is
/// (and invalid). Used by JsonValidity, wherever prodsm validates JSON (records at submit, read
/// bodies, produce's lines).
std::optional<std::string> long_integers_as_zero(std::string_view json);

/// A `\uXXXX` escape of a lone UTF-16 surrogate (a high one not followed by a low one's
/// escape, or a low one not preceded by a high one's) is valid JSON by RFC 8259's grammar
/// (section 7; section 8.2 calls such strings unpredictable), and a JSON-mode server
/// written to in JavaScript stores and returns it: `"\ud800"`. simdjson refuses it.
/// Returns `json` with each such escape replaced by `\ufffd` (same length), for simdjson
/// to judge the rest, or nullopt when it has none. Used by the read splitter only: a read
/// passes on what a stream holds, while prodsm's own records (submit, produce) must not
/// hold strings that are not Unicode.
std::optional<std::string> lone_surrogates_replaced(std::string_view json);

/// Splits one streamed JSON array into validated elements (see the file comment).
class JsonArraySplitter {
 public:
  /// `max_element_bytes`: the largest element held (R3); a longer one is an error.
  explicit JsonArraySplitter(std::size_t max_element_bytes);
  ~JsonArraySplitter();
  JsonArraySplitter(JsonArraySplitter&&) noexcept;             ///< movable
  JsonArraySplitter& operator=(JsonArraySplitter&&) noexcept;  ///< movable
  JsonArraySplitter(const JsonArraySplitter&) = delete;
  JsonArraySplitter& operator=(const JsonArraySplitter&) = delete;

  /// Starts a new array (a new response body).
  void reset();
  /// Feeds the next bytes of the body. Every element they complete is validated and
  /// appended to elements(). Error (the text of a parse error, naming what is wrong and
  /// the element's index): the body is not a JSON array of valid elements; nothing of
  /// the failing element is in elements().
  std::optional<std::string> feed(std::span<const char> bytes);
  /// The body ended: error when the array is incomplete (truncated) — unless nothing
  /// but whitespace arrived at all (an empty body holds no elements).
  [[nodiscard]] std::optional<std::string> finish() const;

  /// The elements completed since the last clear_elements(), each exactly as the
  /// server sent it (surrounding whitespace removed). Views into the splitter: valid
  /// until the next feed() or clear_elements().
  [[nodiscard]] const std::vector<std::string_view>& elements() const noexcept { return views_; }
  /// Forgets elements() (the caller handed them on).
  void clear_elements() noexcept;
  /// Elements completed in this array so far.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  /// True when feed() failed because the body's first non-whitespace byte is not '[':
  /// the body is no JSON array at all (a bytes stream), not a malformed one. Until reset().
  [[nodiscard]] bool not_an_array() const noexcept { return not_an_array_; }

 private:
  enum class Where : std::uint8_t { before_array, first, next, inside, after_array };
  std::optional<std::string> complete_element();
  std::optional<std::string> validate(std::string_view element);

  std::unique_ptr<JsonValidity> validity_;  ///< judges each element (json_validity.hpp)
  std::size_t max_element_bytes_;
  Where where_ = Where::before_array;
  bool seen_bytes_ = false;    ///< a non-whitespace byte arrived
  bool not_an_array_ = false;  ///< the first non-whitespace byte was not '['
  bool in_string_ = false;
  bool escape_ = false;
  std::uint32_t depth_ = 0;  ///< brackets and braces open inside the current element
  std::string current_;      ///< the element being scanned
  std::string done_;         ///< completed elements, back to back
  std::vector<std::size_t> ends_;
  std::vector<std::string_view> views_;
  std::uint64_t count_ = 0;
};

}  // namespace prodsm::ds::detail
