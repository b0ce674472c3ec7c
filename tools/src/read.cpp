// SPDX-License-Identifier: Apache-2.0
// `prodsm read URL`: a catch-up read of the whole stream to stdout (or a file).
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "producer_flags.hpp"

namespace prodsm::tools {
namespace {

struct ReadOptions {
  std::string url;
  std::string output = "-";
  bool json = false;
  std::uint64_t max_bytes = 1ULL << 32;
  std::vector<std::string> headers;
  ConnectionFlags connection;
};

int run_read(const ReadOptions& o) {
  auto url = ds::StreamUrl::parse(o.url);
  if (!url) {
    std::fprintf(stderr, "prodsm read: url: %s\n", url.error().c_str());
    return kExitBadInput;
  }
  ds::RequestOptions request_options;
  for (const auto& h : o.headers) {
    auto header = parse_header_flag(h);
    if (!header) {
      std::fprintf(stderr, "prodsm read: --header: %s\n", header.error().c_str());
      return kExitBadInput;
    }
    request_options.extra_headers.push_back(std::move(*header));
  }
  asio::SessionOptions session_options;
  std::vector<std::string> fixed;
  for (const auto& h : request_options.extra_headers) fixed.push_back(h.name);
  if (auto why = apply_connection_flags(o.connection, session_options, session_options.header_provider, fixed)) {
    std::fprintf(stderr, "prodsm read: %s\n", why->c_str());
    return kExitBadInput;
  }
  ::asio::io_context io;
  auto guard = ::asio::make_work_guard(io);
  std::thread io_thread([&io] { io.run(); });
  auto session = asio::Session::create(io.get_executor(), *url, session_options);
  if (!session) {
    guard.reset();
    io_thread.join();
    std::fprintf(stderr, "prodsm read: %s\n", session.error().c_str());
    return kExitBadInput;
  }
  auto contents =
      asio::async_read_stream_all(*session, *url, o.json, o.max_bytes, request_options, ::asio::use_future).get();
  (*session)->close();
  guard.reset();
  io_thread.join();
  if (!contents) {
    std::fprintf(stderr, "prodsm read: %s\n", contents.error().describe().c_str());
    return kExitServerError;
  }
  // JSON mode prints one JSON text; end it with a newline like any text tool. Bytes
  // mode writes exactly the stream's bytes.
  if (o.json) contents->body.push_back('\n');
  if (o.output == "-") {
    const std::size_t written = std::fwrite(contents->body.data(), 1, contents->body.size(), stdout);
    if (written != contents->body.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "prodsm read: writing to stdout failed after %zu of %zu bytes\n", written,
                   contents->body.size());
      return kExitBadInput;
    }
  } else {
    std::ofstream out(o.output, std::ios::binary);
    out.write(contents->body.data(), static_cast<std::streamsize>(contents->body.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "prodsm read: cannot write '%s'\n", o.output.c_str());
      return kExitBadInput;
    }
  }
  std::fprintf(stderr, "read %zu bytes in %zu requests; next offset %s%s\n", contents->body.size(), contents->reads,
               contents->next_offset.c_str(), contents->closed ? " (stream closed)" : "");
  return kExitOk;
}

}  // namespace

void add_read_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ReadOptions>();
  CLI::App* cmd = app.add_subcommand("read", "Read a whole stream (catch-up read) to stdout or a file");
  cmd->add_option("url", o->url, "Stream URL")->required();
  cmd->add_option("-o,--output", o->output, "Output file ('-' = stdout)")->capture_default_str();
  cmd->add_flag("--json", o->json, "JSON stream: print one JSON array of every value (and a newline)");
  cmd->add_option("--max-bytes", o->max_bytes, "Fail past this many bytes")->capture_default_str();
  cmd->add_option("-H,--header", o->headers, "Extra request header 'Name: value' (repeatable)");
  add_connection_flags(*cmd, o->connection);
  cmd->callback([o, &run] { run = [o] { return run_read(*o); }; });
}

}  // namespace prodsm::tools
