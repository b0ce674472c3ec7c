// SPDX-License-Identifier: Apache-2.0
// The --resume prefix: spool the stream, then match the input against it (resume.hpp).
#include "resume.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "json_values.hpp"

namespace prodsm::tools {

tl::expected<StreamPrefix, std::string> StreamPrefix::create(bool json) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/prodsm-resume-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return tl::unexpected("cannot create a spool file in " + path + ": " + std::strerror(errno));
  ::unlink(path.c_str());  // gone when closed, whatever ends the run
  std::FILE* f = ::fdopen(fd, "w+b");
  if (f == nullptr) {
    ::close(fd);
    return tl::unexpected(std::string("cannot open the spool file: ") + std::strerror(errno));
  }
  return StreamPrefix(std::unique_ptr<std::FILE, FileCloser>(f), json);
}

bool StreamPrefix::fail(std::string why) {
  if (!error_) error_ = std::move(why);
  return false;
}

bool StreamPrefix::write(std::string_view data) {
  if (error_) return false;
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), spool_.get()) != data.size()) {
    return fail(std::string("cannot write the stream to the spool file: ") + std::strerror(errno));
  }
  spooled_ += data.size();
  return true;
}

bool StreamPrefix::add_bytes(std::string_view data) {
  return !json_ && write(data);
}

bool StreamPrefix::add_value(std::string_view value) {
  if (!json_ || error_) return false;
  // Canonical (json_values.hpp), so the stream's and the input's forms of one value
  // compare equal; minified JSON has no raw newline: one value per spool line.
  const auto text = canonical_json(value);
  if (!text) return fail("the stream's JSON value " + std::to_string(values_ + 1) + " does not parse");
  ++values_;
  return write(*text) && write("\n");
}

tl::expected<void, std::string> StreamPrefix::finish_spool() {
  if (!error_ && (std::fflush(spool_.get()) != 0 || std::fseek(spool_.get(), 0, SEEK_SET) != 0)) {
    fail(std::string("cannot read the spool file back: ") + std::strerror(errno));
  }
  if (error_) return tl::unexpected(*error_);
  return {};
}

tl::expected<bool, std::string> StreamPrefix::holds(std::string_view record, std::uint64_t line) {
  held_part_ = 0;  // of this record only
  if (done_) return false;
  if (error_) return tl::unexpected(*error_);
  const auto read_back = [this](std::size_t n) -> bool {
    buffer_.resize(n);
    if (n > 0 && std::fread(buffer_.data(), 1, n, spool_.get()) != n) {
      return fail("cannot read the spool file back: " +
                  std::string(std::ferror(spool_.get()) ? std::strerror(errno) : "it ended early"));
    }
    return true;
  };
  if (json_) {
    if (position_ == values_) {
      done_ = true;
      return false;
    }
    buffer_.clear();
    for (int c = std::fgetc(spool_.get()); c != '\n'; c = std::fgetc(spool_.get())) {
      if (c == EOF) {
        fail("cannot read the spool file back: it ended early");
        return tl::unexpected(*error_);
      }
      buffer_.push_back(static_cast<char>(c));
    }
    const auto mine = canonical_json(record);
    if (!mine || *mine != buffer_) {
      return tl::unexpected("input line " + std::to_string(line) + " differs from the stream's JSON value " +
                            std::to_string(position_ + 1) + ": the stream does not hold a prefix of this input");
    }
    ++position_;
    ++skipped_;
    return true;
  }
  if (position_ == spooled_) {
    done_ = true;
    return false;
  }
  const std::uint64_t rest = spooled_ - position_;
  if (rest < record.size()) {
    if (!read_back(static_cast<std::size_t>(rest))) return tl::unexpected(*error_);
    if (record.substr(0, buffer_.size()) == buffer_) {
      // A run whose input ended inside this line (a writer cut off mid-line) appended its
      // first bytes as a record. The stream is bytes: appending the line's other bytes
      // makes it the input's bytes again, so it is sent from there (held_part).
      held_part_ = rest;
      position_ = spooled_;
      done_ = true;
      return false;
    }
  } else if (!read_back(record.size())) {
    return tl::unexpected(*error_);
  }
  if (buffer_ != record) {
    const auto mismatch = std::mismatch(buffer_.begin(), buffer_.end(), record.begin(), record.end());
    const auto at = position_ + static_cast<std::uint64_t>(mismatch.first - buffer_.begin());
    return tl::unexpected("input line " + std::to_string(line) + " differs from the stream at byte " +
                          std::to_string(at) + " (the line starts at byte " + std::to_string(position_) +
                          "): the stream does not hold a prefix of this input");
  }
  position_ += record.size();
  ++skipped_;
  return true;
}

std::optional<std::string> StreamPrefix::at_end() const {
  if (done_) return std::nullopt;
  if (json_ && position_ < values_) {
    return "the stream holds " + std::to_string(values_ - position_) +
           " JSON values more than the input: it is not a prefix of this input";
  }
  if (!json_ && position_ < spooled_) {
    return "the stream holds " + std::to_string(spooled_ - position_) +
           " bytes more than the input: it is not a prefix of this input";
  }
  return std::nullopt;
}

}  // namespace prodsm::tools
