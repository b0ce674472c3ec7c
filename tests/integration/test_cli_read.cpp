// SPDX-License-Identifier: Apache-2.0
// `prodsm read` against the reference server: what it prints, and its output failures.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"

namespace prodsm::test {
namespace {

class CliRead : public CliServerTest {
 protected:
  CliRead() : CliServerTest("cli") {}
};

// `read --json` prints the stream as one JSON array, ended by a newline; bytes mode
// prints exactly the stream's bytes.
TEST_F(CliRead, PrintsJsonWithANewlineAndBytesExactly) {
  const std::string j = url("readjson");
  ASSERT_EQ(prodsm("produce " + j + " --create --json", "1\n{\"a\":2}\n").status, 0);
  CliRun r = prodsm("read " + j + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(R"([1,{"a":2}])"));
  const std::string b = url("readbytes");
  ASSERT_EQ(prodsm("produce " + b + " --create", "x\nno newline").status, 0);
  r = prodsm("read " + b);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "x\nno newline");
}

// `read --json` of a bytes stream: the flag does not fit the stream, exit 2 (bad input)
// saying to read it without --json — not exit 3, a server or network failure.
TEST_F(CliRead, JsonOnABytesStreamIsBadInputThatSaysWhy) {
  const std::string b = url("json-on-bytes");
  ASSERT_EQ(prodsm("produce " + b + " --create", "x\ny\n").status, 0);
  const CliRun r = prodsm("read " + b + " --json");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("read it without --json"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  // Lines that look like JSON arrays are still a bytes stream (its Content-Type says so):
  // "[1,2" was written and the read failed as the server's fault, exit 3.
  const std::string arrays = url("json-on-bytes-arrays");
  ASSERT_EQ(prodsm("produce " + arrays + " --create", "[1,2]\n[3]\n").status, 0);
  const CliRun a = prodsm("read " + arrays + " --json");
  EXPECT_EQ(a.status, 2) << a.err;
  EXPECT_NE(a.err.find("Content-Type application/octet-stream"), std::string::npos) << a.err;
  EXPECT_TRUE(a.out.empty()) << a.out;

  // A +json stream is stored as sent: its records are lines, not the values of arrays.
  const std::string plus = url("json-on-plus-json");
  ASSERT_EQ(prodsm("produce " + plus + " --create --content-type application/vnd.x+json", "[1,2]\n").status, 0);
  const CliRun p = prodsm("read " + plus + " --json");
  EXPECT_EQ(p.status, 2) << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
  EXPECT_EQ(prodsm("read " + plus).out, "[1,2]\n") << "read as bytes, as it is stored";
}

// -o FILE is emptied only when data arrives or the read completes: a read that fails
// before any data (a mistyped stream name: 404) leaves what the file held, instead of
// destroying an earlier output. A complete read replaces it, even with an empty stream.
TEST_F(CliRead, AReadThatFailsBeforeAnyDataLeavesTheOutputFileAsItWas) {
  const std::string file = temp_path("kept-output");
  write_file(file, "an earlier read's output\n");
  const CliRun missing = prodsm("read " + url("no-such-stream") + " -o " + file);
  EXPECT_EQ(missing.status, 3) << missing.err;
  EXPECT_EQ(slurp(file), "an earlier read's output\n");

  const std::string empty = url("kept-output-empty");
  ASSERT_EQ(prodsm("produce " + empty + " --create", "").status, 0);
  const CliRun whole = prodsm("read " + empty + " -o " + file);
  EXPECT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(slurp(file), "") << "a complete read of an empty stream leaves an empty file";

  const std::string some = url("kept-output-some");
  ASSERT_EQ(prodsm("produce " + some + " --create", "x\n").status, 0);
  write_file(file, "a longer earlier output than the stream\n");
  EXPECT_EQ(prodsm("read " + some + " -o " + file).status, 0);
  EXPECT_EQ(slurp(file), "x\n");
  std::remove(file.c_str());
}

// A value another producer wrote with a lone surrogate ("\ud800": an emoji cut in half in
// JavaScript) is stored and returned by the server. It is JSON by RFC 8259's grammar, so
// `read --json` passes it on as sent, and the values after it too, instead of stopping.
TEST_F(CliRead, AValueWithALoneSurrogateIsPassedOn) {
  const std::string j = url("lone-surrogate");
  client.create(j, "application/json");
  const ds::Response posted = client.post(j, "application/json", R"(["a","\ud800x",{"k":"\udc00"},"b"])", {});
  ASSERT_EQ(posted.status / 100, 2) << posted.status;
  const CliRun r = prodsm("read " + j + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[\"a\",\"\\ud800x\",{\"k\":\"\\udc00\"},\"b\"]\n") << r.out;
  EXPECT_NE(r.err.find("(4 JSON values)"), std::string::npos) << r.err;
}

// Issue 22 item 10: an output failure has its own exit status (4), not 2 "bad input".
TEST_F(CliRead, WritingToAFullDeviceFails) {
  const std::string u = url("readfull");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", "data\n").status, 0);
  const CliRun r = prodsm("read " + u + " -o /dev/full");
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("writing to '/dev/full' failed"), std::string::npos) << r.err;
  const int status = std::system((std::string(PRODSM_CLI) + " read " + u + " >/dev/full 2>/dev/null").c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 4);
}

// A reader that goes away (`| head -c 10`): exit 4 and one line naming the broken pipe,
// not a second one with a stale errno ("Resource temporarily unavailable").
TEST_F(CliRead, AReaderThatGoesAwayIsOneOutputFailure) {
  const std::string u = url("read-broken-pipe");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", std::string(300'000, 'x') + "\n").status, 0);
  const std::string err = temp_path("broken-pipe-stderr");
  const std::string status_file = temp_path("broken-pipe-status");
  const std::string command = "bash -c '" + std::string(PRODSM_CLI) + " read " + u + " 2>" + err +
                              " | head -c 10 >/dev/null; echo ${PIPESTATUS[0]} >" + status_file + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(slurp(status_file), "4\n");
  const std::string text = slurp(err);
  EXPECT_NE(text.find("Broken pipe"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one line:\n" << text;
  std::remove(err.c_str());
  std::remove(status_file.c_str());
}

// A closed stdout (`>&-`) is an output failure (exit 4), not a read whose data silently went to
// the /dev/null that stands in for the closed descriptor; an invalid read option (an
// empty --offset) is bad input (exit 2), not a failed read (3).
TEST_F(CliRead, ToAClosedStdoutOrWithAnEmptyOffsetFails) {
  const std::string u = url("read-closed-stdout");
  ASSERT_EQ(prodsm("produce " + u + " --create -q", "data\n").status, 0);
  for (const char* out : {"", "-o - ", "-o /dev/stdout ", "-o /dev/fd/1 "}) {
    const int status = std::system((std::string(PRODSM_CLI) + " read " + u + " " + out + ">&- 2>/dev/null").c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 4) << out;
  }
  const CliRun empty_offset = prodsm("read " + u + " --offset ''");
  EXPECT_EQ(empty_offset.status, 2) << "an invalid option is bad input: " << empty_offset.err;
  // produce too: its summary cannot be written (exit 4, the records appended all the
  // same); with -q there is none to write.
  const auto produce_status = [&](const std::string& flags) {
    const int status = std::system(
        ("printf 'x\\n' | " + std::string(PRODSM_CLI) + " produce " + u + " " + flags + " >&- 2>/dev/null").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(produce_status(""), 4);
  EXPECT_EQ(produce_status("-q"), 0);
  EXPECT_EQ(client.read_all(u, false), "data\nx\nx\n");
}

}  // namespace
}  // namespace prodsm::test
