// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file protobuf.hpp
/// The protobuf wire format as far as S2's messages need it, hand-written (internal: not
/// a stable API; messages.hpp is the public face): varints, tags, length-delimited
/// fields, and a bounded reader that skips unknown fields of every wire type.
/// Source: https://protobuf.dev/programming-guides/encoding/ (varints, wire types 0-5,
/// "last one wins" for repeated scalars, groups).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace prodsm::s2::detail {

/// Protobuf wire types (the low 3 bits of a tag). 6 and 7 are invalid.
enum class WireType : std::uint8_t {
  varint = 0,       ///< int32, int64, uint32, uint64, sint*, bool, enum
  fixed64 = 1,      ///< fixed64, sfixed64, double: 8 bytes little-endian
  length = 2,       ///< string, bytes, embedded messages, packed repeated: varint length + bytes
  start_group = 3,  ///< deprecated groups: fields up to the matching end_group
  end_group = 4,    ///< ends a group
  fixed32 = 5,      ///< fixed32, sfixed32, float: 4 bytes little-endian
};

/// Largest field number protobuf allows (2^29 - 1).
inline constexpr std::uint32_t kMaxFieldNumber = (1U << 29U) - 1;
/// Longest varint encoding of a 64-bit value, in bytes.
inline constexpr std::size_t kMaxVarintBytes = 10;

/// Bytes of the varint encoding of `value` (1..10).
constexpr std::size_t varint_size(std::uint64_t value) noexcept {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7U;
    ++n;
  }
  return n;
}

/// Bytes of a field's tag (field number and wire type as one varint).
constexpr std::size_t tag_size(std::uint32_t field) noexcept {
  return varint_size(std::uint64_t{field} << 3U);
}

/// Bytes of a varint field: tag + value.
constexpr std::size_t varint_field_size(std::uint32_t field, std::uint64_t value) noexcept {
  return tag_size(field) + varint_size(value);
}

/// Bytes of a length-delimited field with a `length`-byte payload: tag + length + payload.
constexpr std::size_t length_field_size(std::uint32_t field, std::size_t length) noexcept {
  return tag_size(field) + varint_size(length) + length;
}

/// Appends the varint encoding of `value` (little-endian base 128).
void append_varint(std::string& out, std::uint64_t value);
/// Appends the tag of field `field` (1..kMaxFieldNumber) with wire type `type`.
void append_tag(std::string& out, std::uint32_t field, WireType type);
/// Appends a varint field: tag, then the value.
void append_varint_field(std::string& out, std::uint32_t field, std::uint64_t value);
/// Appends a length-delimited field: tag, length, then `payload` (bytes or UTF-8).
void append_length_field(std::string& out, std::uint32_t field, std::string_view payload);
/// Appends the tag and length of a length-delimited field whose `length` payload bytes the
/// caller appends next (an embedded message).
void append_length_prefix(std::string& out, std::uint32_t field, std::size_t length);

/// One field as read from the wire.
struct Field {
  std::uint32_t number = 0;          ///< field number, 1..kMaxFieldNumber
  WireType type = WireType::varint;  ///< wire type as sent
  std::uint64_t value = 0;           ///< varint, fixed64 and fixed32 fields: the value
  std::string_view payload;          ///< length fields: the payload; groups: their contents
};

/// A bounded reader over one message's bytes: no allocation, no exception, errors as
/// static text. Unknown fields of every wire type are returned like known ones (the
/// caller skips them); groups are skipped to their matching end tag, nested at most
/// `max_group_depth` deep.
class Reader {
 public:
  /// Reads `bytes`; groups may nest at most `max_group_depth` levels.
  Reader(std::string_view bytes, std::uint32_t max_group_depth) noexcept
      : bytes_{bytes}, max_group_depth_{max_group_depth} {}

  /// Reads the next field into `field`. False at the end of the message and on an error
  /// (error() is then set): a truncated varint, tag or payload; a varint longer than 10
  /// bytes or above 2^64 - 1; field number 0 or above 2^29 - 1; wire type 6 or 7; an
  /// end-group tag without its start group, or groups nested too deep or not closed.
  bool next(Field& field) noexcept;
  /// Why reading stopped, or nullptr at a clean end.
  [[nodiscard]] const char* error() const noexcept { return error_; }
  /// Byte offset (in the reader's bytes) where the error was found.
  [[nodiscard]] std::size_t error_offset() const noexcept { return error_offset_; }
  /// Byte offset (in the reader's bytes) of the next field.
  [[nodiscard]] std::size_t position() const noexcept { return pos_; }

 private:
  bool fail(const char* why, std::size_t at) noexcept {
    error_ = why;
    error_offset_ = at;
    return false;
  }
  bool read_varint(std::uint64_t& value) noexcept;
  bool read_tag(std::uint32_t& number, WireType& type) noexcept;
  bool skip_value(WireType type) noexcept;

  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::uint32_t max_group_depth_;
  const char* error_ = nullptr;
  std::size_t error_offset_ = 0;
};

/// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
/// nothing above U+10FFFF), as protobuf `string` fields and S2 fencing tokens require.
[[nodiscard]] bool is_valid_utf8(std::string_view text) noexcept;

}  // namespace prodsm::s2::detail
