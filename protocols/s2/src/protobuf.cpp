// SPDX-License-Identifier: Apache-2.0
// The protobuf wire format: varint writing, the bounded field reader, UTF-8 checking.
#include "prodsm/s2/detail/protobuf.hpp"

#include <array>

namespace prodsm::s2::detail {

void append_varint(std::string& out, std::uint64_t value) {
  char buffer[kMaxVarintBytes];
  std::size_t n = 0;
  while (value >= 0x80) {
    buffer[n++] = static_cast<char>((value & 0x7FU) | 0x80U);
    value >>= 7U;
  }
  buffer[n++] = static_cast<char>(value);
  out.append(buffer, n);
}

void append_tag(std::string& out, std::uint32_t field, WireType type) {
  append_varint(out, (std::uint64_t{field} << 3U) | static_cast<std::uint64_t>(type));
}

void append_varint_field(std::string& out, std::uint32_t field, std::uint64_t value) {
  append_tag(out, field, WireType::varint);
  append_varint(out, value);
}

void append_length_prefix(std::string& out, std::uint32_t field, std::size_t length) {
  append_tag(out, field, WireType::length);
  append_varint(out, length);
}

void append_length_field(std::string& out, std::uint32_t field, std::string_view payload) {
  append_length_prefix(out, field, payload.size());
  out.append(payload);
}

bool Reader::read_varint(std::uint64_t& value) noexcept {
  const std::size_t start = pos_;
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos_ >= bytes_.size()) return fail("truncated varint", start);
    const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
    // The tenth byte holds bit 63 only: anything more is above 2^64 - 1 or too long.
    if (i == kMaxVarintBytes - 1 && byte > 1) return fail("varint longer than 10 bytes or above 2^64 - 1", start);
    result |= std::uint64_t{byte & 0x7FU} << (7U * i);
    if ((byte & 0x80U) == 0) {
      value = result;
      return true;
    }
  }
  return fail("varint longer than 10 bytes", start);  // unreachable: the tenth byte is checked above
}

bool Reader::read_tag(std::uint32_t& number, WireType& type) noexcept {
  const std::size_t start = pos_;
  std::uint64_t tag = 0;
  if (!read_varint(tag)) return false;
  if (tag > 0xFFFF'FFFFULL) return fail("tag above 2^32 - 1", start);
  const auto wire = static_cast<std::uint8_t>(tag & 7U);
  number = static_cast<std::uint32_t>(tag >> 3U);
  if (number == 0) return fail("field number 0", start);
  if (wire > 5) return fail("wire type 6 or 7 (invalid)", start);
  type = static_cast<WireType>(wire);
  return true;
}

bool Reader::skip_value(WireType type) noexcept {
  const std::size_t start = pos_;
  switch (type) {
    case WireType::varint: {
      std::uint64_t ignored = 0;
      return read_varint(ignored);
    }
    case WireType::fixed64:
      if (bytes_.size() - pos_ < 8) return fail("truncated fixed64 value", start);
      pos_ += 8;
      return true;
    case WireType::fixed32:
      if (bytes_.size() - pos_ < 4) return fail("truncated fixed32 value", start);
      pos_ += 4;
      return true;
    case WireType::length: {
      std::uint64_t length = 0;
      if (!read_varint(length)) return false;
      if (length > bytes_.size() - pos_) return fail("length-delimited field longer than the bytes left", start);
      pos_ += static_cast<std::size_t>(length);
      return true;
    }
    case WireType::start_group:
    case WireType::end_group: break;  // handled by next()
  }
  return fail("unexpected wire type", start);
}

bool Reader::next(Field& field) noexcept {
  if (error_ != nullptr || pos_ >= bytes_.size()) return false;
  const std::size_t start = pos_;
  std::uint32_t number = 0;
  WireType type = WireType::varint;
  if (!read_tag(number, type)) return false;
  field = Field{number, type, 0, {}};
  switch (type) {
    case WireType::varint: return read_varint(field.value);
    case WireType::fixed64:
    case WireType::fixed32: {
      const std::size_t width = type == WireType::fixed64 ? 8 : 4;
      if (bytes_.size() - pos_ < width) {
        return fail(width == 8 ? "truncated fixed64 value" : "truncated fixed32 value", pos_);
      }
      std::uint64_t value = 0;
      for (std::size_t i = 0; i < width; ++i) {
        value |= std::uint64_t{static_cast<std::uint8_t>(bytes_[pos_ + i])} << (8U * i);
      }
      pos_ += width;
      field.value = value;
      return true;
    }
    case WireType::length: {
      const std::size_t at = pos_;
      std::uint64_t length = 0;
      if (!read_varint(length)) return false;
      if (length > bytes_.size() - pos_) return fail("length-delimited field longer than the bytes left", at);
      field.payload = bytes_.substr(pos_, static_cast<std::size_t>(length));
      pos_ += static_cast<std::size_t>(length);
      return true;
    }
    case WireType::end_group: return fail("end-group tag without its start-group tag", start);
    case WireType::start_group: {
      // Skip to the matching end-group tag; inner groups are tracked on a bounded stack.
      constexpr std::size_t kStack = 64;
      std::array<std::uint32_t, kStack> open{};
      const std::uint32_t limit = max_group_depth_ < kStack ? max_group_depth_ : static_cast<std::uint32_t>(kStack);
      if (limit == 0) return fail("groups nested deeper than the limit", start);
      std::size_t depth = 1;
      open[0] = number;
      const std::size_t contents = pos_;
      while (true) {
        const std::size_t tag_at = pos_;
        if (pos_ >= bytes_.size()) return fail("group not closed by its end-group tag", start);
        std::uint32_t inner = 0;
        WireType inner_type = WireType::varint;
        if (!read_tag(inner, inner_type)) return false;
        if (inner_type == WireType::end_group) {
          if (inner != open[depth - 1]) return fail("end-group tag does not match its start-group tag", tag_at);
          if (--depth == 0) {
            field.payload = bytes_.substr(contents, tag_at - contents);
            return true;
          }
          continue;
        }
        if (inner_type == WireType::start_group) {
          if (depth >= limit) return fail("groups nested deeper than the limit", tag_at);
          open[depth++] = inner;
          continue;
        }
        if (!skip_value(inner_type)) return false;
      }
    }
  }
  return fail("unexpected wire type", start);
}

bool is_valid_utf8(std::string_view text) noexcept {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<std::uint8_t>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if ((c & 0xE0U) == 0xC0U) {
      extra = 1;
      cp = c & 0x1FU;
      min = 0x80;
    } else if ((c & 0xF0U) == 0xE0U) {
      extra = 2;
      cp = c & 0x0FU;
      min = 0x800;
    } else if ((c & 0xF8U) == 0xF0U) {
      extra = 3;
      cp = c & 0x07U;
      min = 0x10000;
    } else {
      return false;  // a continuation byte first, or 0xF8..0xFF
    }
    if (n - i <= extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<std::uint8_t>(text[i + k]);
      if ((cc & 0xC0U) != 0x80U) return false;
      cp = (cp << 6U) | (cc & 0x3FU);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace prodsm::s2::detail
