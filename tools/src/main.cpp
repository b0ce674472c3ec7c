// SPDX-License-Identifier: Apache-2.0
// prodsm: produce records to a Durable Streams stream, read a stream back, load-test a
// stream, and check producers against the contract. (The core's micro-benchmarks live
// in bench/.)
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "commands.hpp"

namespace {
bool g_stdout_closed_at_start = false;

/// File descriptors 0-2 closed at start (`prodsm produce <&-`) are opened on /dev/null
/// before anything else opens a descriptor, so no later file (the event loop's eventfd,
/// a socket) can become "stdin" and be read as input or written as output.
void ensure_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) g_stdout_closed_at_start = true;
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}
}  // namespace

bool prodsm::tools::stdout_closed_at_start() noexcept {
  return g_stdout_closed_at_start;
}

int main(int argc, char** argv) {
  ensure_standard_descriptors();
  // A closed stdout pipe (`prodsm read URL | head -c1`) is an output failure with its own
  // exit status and message, not a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"prodsm: an exact producer for append-only durable streams"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "prodsm 0.1.0");
  std::function<int()> run;
  prodsm::tools::add_produce_command(app, run);
  prodsm::tools::add_read_command(app, run);
  prodsm::tools::add_bench_command(app, run);
  prodsm::tools::add_conform_command(app, run);
  // CLI11 reports an unknown command as "a subcommand is required": name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "prodsm: unknown command '%s' (commands: %s; see --help)\n", argv[1], names.c_str());
      return prodsm::tools::kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return prodsm::tools::kExitBadInput;
  }
  if (!run) return prodsm::tools::kExitBadInput;
  const int status = run();
  // Whatever a command printed to stdout (a summary, a table) must have reached it, also
  // when the command failed otherwise; a command that failed for its output (exit 4) said
  // so already (read: "Broken pipe"): no second line.
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;  // of the flush only: an earlier failure's errno is long gone
  if (status != prodsm::tools::kExitOutputFailed && (flush_failed || std::ferror(stdout) != 0)) {
    std::fprintf(stderr, "prodsm: writing to stdout failed: %s\n",
                 flush_failed && err != 0 ? std::strerror(err) : "an earlier write to it failed");
    if (status == prodsm::tools::kExitOk) return prodsm::tools::kExitOutputFailed;
  }
  return status;
}
