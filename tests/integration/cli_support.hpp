// SPDX-License-Identifier: Apache-2.0
#pragma once
// Running the `prodsm` CLI in tests (test_cli*.cpp): through the shell, stdin from a file
// or a pipe, stdout and stderr captured.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {

/// A CLI test against the process's reference server (started on first use): fails at
/// SetUp when the server did not start. `url(name)` is a fresh stream named
/// "<prefix>-<name>-<n>"; `client` sets streams up and reads them back.
class CliServerTest : public ::testing::Test {
 protected:
  explicit CliServerTest(std::string prefix) : prefix_{std::move(prefix)} {}
  void SetUp() override { ASSERT_FALSE(ReferenceServer::shared().url().empty()) << ReferenceServer::shared().error(); }
  std::string url(const std::string& name) { return ReferenceServer::shared().stream_url(prefix_ + "-" + name); }
  TestClient client;

 private:
  std::string prefix_;
};

/// One CLI run: its exit status (-1 when it did not exit normally) and output.
struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

/// A per-process temporary path for `name`.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "prodsm-cli-" + name + "-" + std::to_string(::getpid());
}

/// The contents of `path` (empty when unreadable).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `text` to `path` (truncating).
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// How prodsm() gives the CLI its stdin.
enum class Stdin { file, pipe };

/// Runs `prodsm <args>` through the shell with `stdin_text` on stdin (a regular file, or
/// a pipe from `cat`); captures stdout and stderr.
inline CliRun prodsm(const std::string& args, const std::string& stdin_text = {}, Stdin how = Stdin::file) {
  const std::string in = temp_path("stdin");
  const std::string out = temp_path("stdout");
  const std::string err = temp_path("stderr");
  write_file(in, stdin_text);
  const std::string command = (how == Stdin::pipe ? "cat " + in + " | " : std::string()) + PRODSM_CLI + " " + args +
                              (how == Stdin::file ? " <" + in : std::string()) + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  CliRun r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace prodsm::test
