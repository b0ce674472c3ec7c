// SPDX-License-Identifier: Apache-2.0
// `prodsm read URL`: a catch-up read of a stream to stdout (or a file), written as it
// arrives (ds::StreamReader through asio::read_stream), in bounded memory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "commands.hpp"
#include "interrupt.hpp"
#include "io_runner.hpp"
#include "numeric_flags.hpp"
#include "producer_flags.hpp"
#include "retry_notices.hpp"
#include "stream_read.hpp"

namespace prodsm::tools {
namespace {

struct ReadOptions {
  std::string url;
  std::string output = "-";
  bool json = false;
  std::string offset = "-1";
  std::uint64_t max_bytes = 1ULL << 40;
  std::uint64_t timeout_ms = 600'000;
  std::uint64_t request_timeout_ms = 30'000;
  std::uint32_t max_attempts = 10;
  std::vector<std::string> headers;
  ConnectionFlags connection;
};

/// The output: stdout or a file, written through stdio's buffer; the first failure is
/// kept (errno text) and ends the read. A regular file is opened (created if need be) at
/// once, so an output that cannot be written fails before the read, but emptied only
/// when the first data arrives or the read completes: a read that fails before any data
/// (a mistyped URL, a server down) leaves what the file held.
class Output {
 public:
  explicit Output(const std::string& path) : path_{path} {
    const bool names_stdout = path == "-" || path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1";
    if (names_stdout && stdout_closed_at_start()) {
      error_ = "stdout is closed (>&-): the stream's data would be lost; name a file with -o";
    } else if (path == "-") {
      file_ = stdout;
    } else {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
      struct stat st {};
      if (fd < 0) {
        error_ = std::strerror(errno);
      } else if (::fstat(fd, &st) != 0 || (file_ = ::fdopen(fd, "wb")) == nullptr) {
        error_ = std::strerror(errno);
        ::close(fd);
      } else {
        pending_truncate_ = S_ISREG(st.st_mode) && st.st_size > 0;
      }
    }
    if (file_ != nullptr) std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  }
  ~Output() {
    if (file_ != nullptr && file_ != stdout) std::fclose(file_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  bool write(std::string_view bytes) {
    if (!error_.empty() || !empty_file()) return false;
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
      error_ = std::strerror(errno);
      return false;
    }
    written_ += bytes.size();
    return true;
  }
  /// Flushes (and closes a file); false when anything failed. `complete`: the read
  /// ended with the whole stream, so a file still holding an earlier output is emptied.
  bool finish(bool complete) {
    if (complete) (void)empty_file();
    if (!error_.empty()) return false;
    const bool flushed = std::fflush(file_) == 0;
    if (!flushed) error_ = std::strerror(errno);
    if (file_ != stdout) {
      const bool closed = std::fclose(file_) == 0;
      file_ = nullptr;
      if (!closed && error_.empty()) error_ = std::strerror(errno);
    }
    return error_.empty();
  }
  [[nodiscard]] bool failed() const { return !error_.empty(); }
  /// Empties a file that held an earlier output, once; false when that failed.
  bool empty_file() {
    if (!pending_truncate_) return true;
    pending_truncate_ = false;
    if (::ftruncate(::fileno(file_), 0) != 0) {
      error_ = std::strerror(errno);
      return false;
    }
    return true;
  }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] std::string name() const { return path_ == "-" ? "stdout" : "'" + path_ + "'"; }
  [[nodiscard]] std::uint64_t written() const { return written_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string error_;
  std::uint64_t written_ = 0;
  bool pending_truncate_ = false;  ///< a regular file with earlier contents, not yet emptied
};

int run_read(const ReadOptions& o) {
  auto url = ds::StreamUrl::parse(o.url);
  if (!url) {
    std::fprintf(stderr, "prodsm read: url: %s\n", url.error().c_str());
    return kExitBadInput;
  }
  ds::ReadOptions read;
  read.offset = o.offset;
  read.json = o.json;
  read.max_bytes = o.max_bytes;
  read.timeout_ns = std::chrono::milliseconds{o.timeout_ms};
  read.retry.max_attempts = o.max_attempts;
  for (const auto& h : o.headers) {
    auto header = parse_header_flag(h);
    if (!header) {
      std::fprintf(stderr, "prodsm read: --header: %s\n", header.error().c_str());
      return kExitBadInput;
    }
    read.request.extra_headers.push_back(std::move(*header));
  }
  // The read's options are the caller's: a bad one (an empty --offset) is bad input,
  // refused before anything is opened, not a failed read.
  if (auto why = read.validate()) {
    std::fprintf(stderr, "prodsm read: %s\n", why->c_str());
    return kExitBadInput;
  }
  asio::SessionOptions session_options;
  std::vector<FixedHeader> fixed;
  for (const auto& h : read.request.extra_headers) fixed.push_back({h.name, "-H"});
  if (auto why =
          apply_connection_flags(o.connection, url->tls, session_options, session_options.header_provider, fixed)) {
    std::fprintf(stderr, "prodsm read: %s\n", why->c_str());
    return kExitBadInput;
  }
  Output out(o.output);
  if (out.failed()) {
    std::fprintf(stderr, "prodsm read: cannot open %s for writing: %s\n", out.name().c_str(), out.error().c_str());
    return kExitOutputFailed;
  }

  set_interrupt_message(
      "prodsm read: interrupted: stopping the read and flushing what arrived; interrupt again to abort at once\n");
  IoRunner runner;
  ::asio::io_context& io = runner.io;
  session_options.request_timeout_ns = std::chrono::milliseconds{o.request_timeout_ms};
  auto session = asio::Session::create(io.get_executor(), *url, session_options);
  if (!session) {
    runner.join();
    std::fprintf(stderr, "prodsm read: %s\n", in_flag_terms(session.error()).c_str());
    return kExitBadInput;
  }
  // JSON streams (--json, or a stream whose Content-Type is JSON: ReadChunk::json) print
  // one JSON array, written element by element as they arrive, each element exactly as
  // the server sent it, and a newline at the end like any text tool. Bytes streams write
  // exactly the stream's bytes.
  bool first = true;
  // The last complete page's end: where a later read continues, and the output's bytes
  // up to it (a failed bytes read can be continued from there without doubling anything).
  // Before any page completes: the read's own start ("now" names no position to go back to).
  std::optional<std::string> checkpoint_offset;
  if (o.offset != "now") checkpoint_offset = o.offset;
  std::uint64_t checkpoint_bytes = 0;
  bool json_seen = false;
  auto on_data = [&](const ds::ReadChunk& chunk) {
    if (chunk.next_offset) {
      checkpoint_offset = std::string(*chunk.next_offset);
      checkpoint_bytes = out.written();
      return true;
    }
    json_seen = json_seen || chunk.json;
    if (chunk.json && !out.write(first ? "[" : ",")) return false;
    first = false;
    return out.write(chunk.data);
  };
  CliReadResult r =
      run_cli_read(*session, *url, std::move(read), on_data, true, read_retry_notices("prodsm read", "reading", false));
  (*session)->close();
  runner.join();
  // Only a complete read closes the JSON array: a cut-off one must not look complete.
  if (r.outcome && r.outcome->json && !r.interrupted) out.write(first ? "[]\n" : "]\n");
  const bool output_ok = out.finish(r.outcome.has_value() && !r.interrupted);
  if (!output_ok) {
    std::fprintf(stderr, "prodsm read: writing to %s failed after %llu bytes: %s\n", out.name().c_str(),
                 static_cast<unsigned long long>(out.written()), out.error().c_str());
    return kExitOutputFailed;
  }
  if (r.interrupted) {
    std::fprintf(stderr, "prodsm read: interrupted after %llu bytes (written and flushed)\n",
                 static_cast<unsigned long long>(out.written()));
    return kExitInterrupted;
  }
  if (!r.outcome) {
    const ds::ReadError& e = r.outcome.error();
    std::fprintf(stderr, "prodsm read: %s\n", e.describe().c_str());
    if (const auto hint = plain_http_at_tls_port_hint(o.url, e); !hint.empty() && out.written() == 0) {
      std::fprintf(stderr, "prodsm read: %s\n", hint.c_str());
    }
    if (e.failure == ds::ReadFailure::timeout) {
      std::fprintf(stderr, "prodsm read: the read did not finish within --timeout-ms (%llu ms)\n",
                   static_cast<unsigned long long>(o.timeout_ms));
    } else if (e.failure == ds::ReadFailure::max_bytes) {
      std::fprintf(stderr, "prodsm read: the server sent more than --max-bytes (%llu bytes)\n",
                   static_cast<unsigned long long>(o.max_bytes));
    }
    if (out.written() > 0) {
      std::fprintf(stderr,
                   "prodsm read: the %llu bytes written before the failure are what the server sent, in order\n",
                   static_cast<unsigned long long>(out.written()));
    }
    if (checkpoint_offset && !json_seen && out.written() > 0) {  // a JSON output is one array, rebuilt: not cut so
      std::fprintf(
          stderr, "prodsm read: its first %llu bytes end at offset %s: keep those and continue with --offset %s\n",
          static_cast<unsigned long long>(checkpoint_bytes), checkpoint_offset->c_str(), checkpoint_offset->c_str());
    }
    if (e.failure == ds::ReadFailure::not_json) {
      // --json asked a stream the server does not keep as JSON (its pages are not arrays):
      // the flag does not fit the stream, which is the caller's to fix.
      std::fprintf(stderr,
                   "prodsm read: --json reads a JSON stream (Content-Type application/json), and this one is not: "
                   "read it without --json\n");
      return kExitBadInput;
    }
    return kExitServerError;
  }
  const ds::ReadSummary& s = *r.outcome;
  std::fprintf(stderr, "read %llu bytes%s in %llu requests (%llu retries); next offset %s%s\n",
               static_cast<unsigned long long>(s.bytes),
               s.json ? (" (" + std::to_string(s.elements) + " JSON values)").c_str() : "",
               static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.retries),
               s.next_offset.c_str(), s.closed ? " (stream closed)" : "");
  return kExitOk;
}

}  // namespace

void add_read_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ReadOptions>();
  CLI::App* cmd = app.add_subcommand("read", "Read a stream (catch-up read) to stdout or a file, as it arrives");
  cmd->add_option("url", o->url, "Stream URL")->required();
  cmd->add_option("-o,--output", o->output, "Output file ('-' = stdout)")->capture_default_str();
  cmd->add_flag("--json", o->json,
                "Print one JSON array of every value, written value by value (and a newline); the default "
                "for a stream whose Content-Type is JSON");
  cmd->add_option("--offset", o->offset, "Start at this offset (as a read returned it; -1 = the beginning)")
      ->capture_default_str();
  add_decimal_option(*cmd, "--max-bytes", o->max_bytes, 0, 1ULL << 62, "Fail past this many bytes of data");
  add_decimal_option(*cmd, "--timeout-ms", o->timeout_ms, 1, 86'400'000,
                     "Fail when the whole read takes longer, 1..86400000");
  add_decimal_option(*cmd, "--request-timeout-ms", o->request_timeout_ms, 1, 600'000,
                     "Per request: no response, or a body that stops arriving, for this long, 1..600000");
  add_decimal_option(*cmd, "--max-attempts", o->max_attempts, 1, Bounds::kMaxAttemptsCap,
                     "GETs at one offset, the first included, 1..1000: a lost connection, 429 and 5xx are "
                     "retried with backoff (the default 10 rides out about 2.5 s of outage; more ride out a "
                     "longer one, up to --timeout-ms)");
  cmd->add_option("-H,--header", o->headers, "Extra request header 'Name: value' (repeatable)");
  add_connection_flags(*cmd, o->connection);
  cmd->footer(
      "Exit status: 0 success; 2 bad input (usage, bad flag value); 3 server or network failure (what was "
      "written before it is the stream's, in order); 4 writing the output failed; 130 interrupted (SIGINT or "
      "SIGTERM: what arrived is flushed; a second signal kills at once). 429, 5xx and lost connections are "
      "retried; 4xx are not.");
  cmd->callback([o, &run] { run = [o] { return run_read(*o); }; });
}

}  // namespace prodsm::tools
