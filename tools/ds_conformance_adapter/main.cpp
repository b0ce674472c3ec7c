// SPDX-License-Identifier: Apache-2.0
// prodsm-ds-conformance-adapter: the client adapter of the Durable Streams client
// conformance suite (packages/client-conformance-tests). It reads one JSON command per
// line on stdin and writes exactly one JSON result per line on stdout; logs go to stderr
// only. Blank lines are skipped; a line that is not JSON, or is too long, is answered
// with a PARSE_ERROR result and the adapter carries on. It exits 0 after `shutdown` or
// at end of input.
//
// Usage: prodsm-ds-conformance-adapter [--verbose] [--max-line-bytes N] [--timeout-ms N]
//   --verbose           log every command and result on stderr
//   --max-line-bytes N  longest accepted command line (default 16 MiB)
//   --timeout-ms N      bound on one command unless init says timeoutMs (default 25000)
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "adapter.hpp"

namespace {

using prodsm::tools::dsconf::Adapter;
using prodsm::tools::dsconf::AdapterOptions;
using prodsm::tools::dsconf::error_result;
using prodsm::tools::dsconf::Json;
using prodsm::tools::dsconf::serialize_line;
namespace codes = prodsm::tools::dsconf::codes;

/// Writes one result line; false when stdout is gone.
bool write_line(const Json& result) {
  std::string line = serialize_line(result);
  line += '\n';
  return std::fwrite(line.data(), 1, line.size(), stdout) == line.size() && std::fflush(stdout) == 0;
}

bool parse_size(const char* text, std::size_t& out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v == 0) return false;
  out = static_cast<std::size_t>(v);
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "prodsm-ds-conformance-adapter: %s\n"
               "usage: prodsm-ds-conformance-adapter [--verbose] [--max-line-bytes N] [--timeout-ms N]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  AdapterOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::size_t value = 0;
    if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--max-line-bytes" && i + 1 < argc && parse_size(argv[i + 1], value)) {
      options.max_line_bytes = value;
      ++i;
    } else if (arg == "--timeout-ms" && i + 1 < argc && parse_size(argv[i + 1], value) && value <= 600'000) {
      options.command_timeout = std::chrono::milliseconds{value};
      ++i;
    } else {
      return usage(("bad argument '" + arg + "'").c_str());
    }
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error, not a signal

  Adapter adapter(options);
  std::string pending;      // the current line so far (at most max_line_bytes)
  bool discarding = false;  // the current line is too long: skip to its end
  char buffer[64 * 1024];
  while (!adapter.shutdown_requested()) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of input (or a read error): a last unterminated line, then exit
      if (!discarding && pending.find_first_not_of(" \t\r") != std::string::npos) {
        Json command = Json::parse(pending, nullptr, false);
        (void)write_line(command.is_discarded()
                             ? error_result("init", codes::kParseError, "Failed to parse command: not a JSON value")
                             : adapter.handle(command));
      }
      break;
    }
    std::size_t start = 0;
    const auto got = static_cast<std::size_t>(n);
    while (start < got && !adapter.shutdown_requested()) {
      const void* nl = std::memchr(buffer + start, '\n', got - start);
      const std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - buffer) : got;
      if (!discarding) {
        if (pending.size() + (end - start) > options.max_line_bytes) {
          discarding = true;
          pending.clear();
          pending.shrink_to_fit();
        } else {
          pending.append(buffer + start, end - start);
        }
      }
      if (!nl) break;  // the line continues in the next read
      start = end + 1;
      Json result;
      if (discarding) {
        result = error_result("init", codes::kParseError,
                              "command line longer than " + std::to_string(options.max_line_bytes) + " bytes: ignored");
        discarding = false;
      } else {
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (pending.find_first_not_of(" \t") == std::string::npos) {  // blank: no result
          pending.clear();
          continue;
        }
        Json command = Json::parse(pending, nullptr, false);
        pending.clear();
        if (command.is_discarded()) {
          result = error_result("init", codes::kParseError, "Failed to parse command: not a JSON value");
        } else {
          result = adapter.handle(command);
        }
      }
      if (!write_line(result)) {
        std::fprintf(stderr, "prodsm-ds-conformance-adapter: stdout closed: %s\n", std::strerror(errno));
        return 1;
      }
    }
  }
  return 0;
}
