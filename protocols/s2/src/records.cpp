// SPDX-License-Identifier: Apache-2.0
// S2 records: metering, the framed record format, the fence and trim commands.
#include "prodsm/s2/records.hpp"

#include "prodsm/s2/detail/protobuf.hpp"

namespace prodsm::s2 {

std::uint64_t metered_size(const AppendRecordView& record) noexcept {
  std::uint64_t n = 8 + record.body.size();
  for (const HeaderView& h : record.headers) n += 2 + h.name.size() + h.value.size();
  return n;
}

std::optional<FramedRecord> FramedRecord::parse(std::string_view bytes) noexcept {
  if (bytes.empty()) return std::nullopt;
  FramedRecord r;
  r.count_ = static_cast<std::uint8_t>(bytes[0]);
  std::size_t pos = 1;
  for (std::size_t i = 0; i < r.count_; ++i) {
    for (int part = 0; part < 2; ++part) {  // name, then value
      if (pos >= bytes.size()) return std::nullopt;
      const std::size_t n = static_cast<std::uint8_t>(bytes[pos]);
      if (n > bytes.size() - pos - 1) return std::nullopt;
      pos += 1 + n;
    }
  }
  r.headers_ = bytes.substr(1, pos - 1);
  r.body_ = bytes.substr(pos);
  return r;
}

HeaderView FramedRecord::header(std::size_t i) const noexcept {
  HeaderView found;
  std::size_t k = 0;
  for_each_header([&](HeaderView h) {
    if (k++ == i) found = h;
  });
  return found;
}

std::optional<std::string_view> check_framed_record(std::string_view bytes) noexcept {
  const auto record = FramedRecord::parse(bytes);
  if (!record) return "incomplete framed record: a header count or length runs past its end";
  if (record->header_count() == 1 && record->header(0).name.empty()) {
    const std::string_view op = record->header(0).value;
    if (op == kFenceCommand) {
      if (record->body().size() > kMaxFencingTokenBytes) return "fence command: token longer than 36 bytes";
      if (!detail::is_valid_utf8(record->body())) return "fence command: token is not valid UTF-8";
      return std::nullopt;
    }
    if (op == kTrimCommand) {
      if (record->body().size() != 8) return "trim command: body must be the 8-byte big-endian trim point";
      return std::nullopt;
    }
    return "unknown command record: one header with an empty name must have the value fence or trim";
  }
  bool empty_name = false;
  record->for_each_header([&](HeaderView h) { empty_name = empty_name || h.name.empty(); });
  if (empty_name) return "empty header name (allowed only as the single header of a command record)";
  return std::nullopt;
}

tl::expected<std::string, std::string> frame_record(std::span<const HeaderView> headers, std::string_view body) {
  if (headers.size() > kMaxFramedHeaders) {
    return tl::unexpected("framed record: " + std::to_string(headers.size()) + " headers, at most 255");
  }
  std::size_t size = 1 + body.size();
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const HeaderView& h = headers[i];
    if (h.name.size() > kMaxFramedHeaderBytes || h.value.size() > kMaxFramedHeaderBytes) {
      return tl::unexpected("framed record: header " + std::to_string(i) +
                            " has a name or value longer than 255 bytes");
    }
    size += 2 + h.name.size() + h.value.size();
  }
  std::string out;
  out.reserve(size);
  out += static_cast<char>(headers.size());
  for (const HeaderView& h : headers) {
    out += static_cast<char>(h.name.size());
    out += h.name;
    out += static_cast<char>(h.value.size());
    out += h.value;
  }
  out += body;
  if (const auto why = check_framed_record(out)) return tl::unexpected(std::string{*why});
  return out;
}

std::string frame_body(std::string_view body) {
  std::string out;
  out.reserve(1 + body.size());
  out += '\0';
  out += body;
  return out;
}

namespace {
std::string trim_point_bytes(std::uint64_t trim_point) {
  std::string b(8, '\0');
  for (std::size_t i = 0; i < 8; ++i) b[i] = static_cast<char>((trim_point >> (8U * (7 - i))) & 0xFFU);
  return b;
}
}  // namespace

tl::expected<std::string, std::string> fence_record(std::string_view token) {
  const HeaderView header{{}, kFenceCommand};
  return frame_record({&header, 1}, token);
}

std::string trim_record(std::uint64_t trim_point) {
  const HeaderView header{{}, kTrimCommand};
  return frame_record({&header, 1}, trim_point_bytes(trim_point)).value();  // always valid
}

tl::expected<CommandRecord, std::string> fence_command(std::string_view token) {
  if (token.size() > kMaxFencingTokenBytes)
    return tl::unexpected(std::string{"fence command: token longer than 36 bytes"});
  if (!detail::is_valid_utf8(token)) return tl::unexpected(std::string{"fence command: token is not valid UTF-8"});
  return CommandRecord{{{}, kFenceCommand}, std::string{token}};
}

CommandRecord trim_command(std::uint64_t trim_point) {
  return CommandRecord{{{}, kTrimCommand}, trim_point_bytes(trim_point)};
}

}  // namespace prodsm::s2
