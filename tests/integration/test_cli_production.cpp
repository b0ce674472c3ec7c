// SPDX-License-Identifier: Apache-2.0
// `prodsm produce`, `read` and `bench` against production-shaped endpoints: https:// with
// curl's TLS flags (--cacert, --capath, --cert, --key, --insecure, SSL_CERT_FILE), and
// credentials that change during a run (--bearer-token-file re-read when it changes,
// --header-command), with a TLS endpoint that checks the Authorization header of every
// request. Issue "Production endpoints".
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_support.hpp"
#include "reference_server.hpp"
#include "test_client.hpp"
#include "tls_endpoint.hpp"

namespace prodsm::test {
namespace {

class CliProduction : public CliServerTest {
 protected:
  CliProduction() : CliServerTest("clip") {}
  std::string ca() { return "--cacert " + tls_certs() + "/ca.pem"; }
};

/// Replaces `path`'s contents atomically (a reader sees the old or the new file).
void replace_file(const std::string& path, const std::string& text) {
  write_file(path + ".new", text);
  std::filesystem::rename(path + ".new", path);
}

// https:// verified against --cacert: produce (with --verify reading back over TLS) and
// read work; connections are reused (one handshake, not one per batch).
TEST_F(CliProduction, ProducesAndReadsOverHttpsWithCacert) {
  const std::string p_https = url("https");
  TlsEndpoint endpoint;
  const std::string u = endpoint.secure(p_https);
  std::string input;
  for (int i = 0; i < 2000; ++i) input += "line " + std::to_string(i) + "\n";
  const CliRun r = prodsm("produce " + u + " " + ca() + " --create --verify --max-batch-bytes 1024", input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  // One connection, plus one for each response the stall detector gave up on (a late
  // answer on a loaded machine replaces the connection): never one per batch.
  unsigned long long connections = 0, failures = 0, stalls = 0;
  const auto at = r.out.find("transport    ");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "transport %llu connections, %llu transport failures, %llu stalled",
                        &connections, &failures, &stalls),
            3)
      << r.out;
  EXPECT_EQ(connections, 1 + stalls) << r.out;
  EXPECT_EQ(client.read_all(p_https, false), input);
  const CliRun read = prodsm("read " + u + " " + ca());
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.out, input);
}

// Without a way to trust the server, nothing is sent: exit 3 with the cause named; the
// same run trusts it through SSL_CERT_FILE (as OpenSSL does), or --insecure for a
// self-signed endpoint; --capath is a directory in OpenSSL's hashed layout.
TEST_F(CliProduction, TlsTrustComesFromTheFlagsOrTheEnvironment) {
  const std::string p_trust = url("trust");
  TlsEndpoint endpoint;
  const std::string u = endpoint.secure(p_trust);
  client.create(p_trust, "application/octet-stream");
  const CliRun refused = prodsm("produce " + u + " -q", "never\n");
  EXPECT_EQ(refused.status, 3) << refused.err;
  EXPECT_NE(refused.err.find("tls_failed"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("certificate"), std::string::npos) << refused.err;
  EXPECT_EQ(client.read_all(p_trust, false), "");

  const int status = std::system(
      ("SSL_CERT_FILE=" + tls_certs() + "/ca.pem " + PRODSM_CLI + " produce " + u + " -q </dev/null >/dev/null 2>&1")
          .c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);

  const std::string hashed = temp_path("capath");
  std::filesystem::create_directories(hashed);
  ASSERT_EQ(std::system(("cp " + tls_certs() + "/ca.pem " + hashed + "/ && openssl rehash " + hashed).c_str()), 0);
  const CliRun capath = prodsm("produce " + u + " -q --capath " + hashed, "capath\n");
  EXPECT_EQ(capath.status, 0) << capath.err;
  const CliRun no_dir = prodsm("produce " + u + " -q --capath " + hashed + "-missing", "never\n");
  EXPECT_EQ(no_dir.status, 2) << "a missing --capath is bad input, found at start\n" << no_dir.err;
  EXPECT_NE(no_dir.err.find("no such directory"), std::string::npos) << no_dir.err;
  std::filesystem::remove_all(hashed);

  TlsEndpoint self_signed("self-signed");
  const std::string v = self_signed.secure(p_trust);
  EXPECT_EQ(prodsm("produce " + v + " -q " + ca(), "x\n").status, 3) << "not signed by the CA";
  const CliRun insecure = prodsm("produce " + v + " -q --insecure", "insecure\n");
  EXPECT_EQ(insecure.status, 0) << insecure.err;
  EXPECT_EQ(client.read_all(p_trust, false), "capath\ninsecure\n");
}

// Mutual TLS: --cert and --key are presented; without them the endpoint refuses the
// handshake (exit 3, nothing appended); --key without --cert is bad input.
TEST_F(CliProduction, ClientCertificateForMutualTls) {
  const std::string p_mtls = url("mtls");
  TlsEndpoint endpoint("server", {"--client-ca", tls_certs() + "/ca.pem"});
  const std::string u = endpoint.secure(p_mtls);
  client.create(p_mtls, "application/octet-stream");
  EXPECT_EQ(prodsm("produce " + u + " -q " + ca(), "no\n").status, 3);
  const std::string identity = " --cert " + tls_certs() + "/client.pem --key " + tls_certs() + "/client.key";
  const CliRun r = prodsm("produce " + u + " -q " + ca() + identity, "yes\n");
  EXPECT_EQ(r.status, 0) << r.err;
  const CliRun key_only = prodsm("produce " + u + " -q " + ca() + " --key " + tls_certs() + "/client.key", "k\n");
  EXPECT_EQ(key_only.status, 2);
  EXPECT_NE(key_only.err.find("--key: needs --cert"), std::string::npos) << key_only.err;
  EXPECT_EQ(client.read_all(p_mtls, false), "yes\n");
}

// The TLS flags are errors in the terms the user gave: a file that is not what the flag
// needs is named by the flag (--cacert, --cert), not by the library's option
// (session.tls.ca_file), for produce and read alike, exit 2 before anything is sent. A TLS
// flag with a plain http:// URL (or S2 --endpoint) is refused: the run would send in
// clear text what the user meant to protect.
TEST_F(CliProduction, TlsFlagsAreNamedAsGivenAndNeedHttps) {
  const std::string p_named = url("named");
  TlsEndpoint endpoint;
  const std::string u = endpoint.secure(p_named);
  client.create(p_named, "application/octet-stream");
  const std::string junk = temp_path("junk.pem");
  write_file(junk, "not a certificate\n");
  struct Case {
    std::string args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"--cacert " + junk, "--cacert: cannot load '" + junk + "'"},
      {"--cert " + junk, "--cert: cannot load '" + junk + "'"},
      {"--insecure " + ca(), "--insecure: verifies nothing, so --cacert and --capath would be ignored"},
  };
  for (const auto& c : cases) {
    for (const auto& command : std::vector<std::string>{"produce " + u + " -q ", "read " + u + " "}) {
      const CliRun bad = prodsm(command + c.args, "never\n");
      EXPECT_EQ(bad.status, 2) << command << c.args << ": " << bad.err;
      EXPECT_NE(bad.err.find(c.expected), std::string::npos) << bad.err;
      EXPECT_EQ(bad.err.find("tls."), std::string::npos) << "the library's option name: " << bad.err;
    }
  }
  const std::string plain = p_named;  // the same stream over http://
  for (const auto& flag : std::vector<std::string>{ca(), "--capath /tmp", "--cert " + junk, "--insecure"}) {
    for (const auto& command :
         std::vector<std::string>{"produce " + plain + " -q ", "read " + plain + " ",
                                  "produce s2://my-basin/stream --endpoint http://127.0.0.1:9 -q "}) {
      const CliRun bad = prodsm(command + flag, "never\n");
      EXPECT_EQ(bad.status, 2) << command << flag << ": " << bad.err;
      EXPECT_NE(bad.err.find(": is for https:// URLs, and this one is http://"), std::string::npos) << bad.err;
    }
  }
  EXPECT_EQ(client.read_all(p_named, false), "") << "nothing was sent";
  EXPECT_EQ(prodsm("produce " + u + " -q " + ca(), "over tls\n").status, 0) << "the check is real: the flags work";
  EXPECT_EQ(client.read_all(p_named, false), "over tls\n");
}

// An http:// URL at a port that speaks TLS: the TLS server closes each connection without
// answering (Node's does), which alone reads as a flaky server retried until the delivery
// timeout. A run that had no answer at all says what to check. A refused connection (no
// server) gets no such hint.
TEST_F(CliProduction, PlainHttpAtATlsPortIsHinted) {
  const std::string p_hint = url("hint");
  TlsEndpoint endpoint;
  std::string plain = endpoint.secure(p_hint);
  plain.replace(0, 5, "http");  // https://... -> http://...
  const std::string hint = "the server closed the connection without answering: if it speaks TLS at this port";
  const std::string bounds = " --delivery-timeout-ms 2000 --max-attempts 3 ";
  for (const auto& command :
       std::vector<std::string>{"produce " + plain + " -q --create" + bounds, "produce " + plain + " -q" + bounds,
                                "read " + plain + " --max-attempts 3"}) {
    const CliRun r = prodsm(command, "x\n");
    EXPECT_EQ(r.status, 3) << command << ": " << r.err;
    EXPECT_NE(r.err.find(hint), std::string::npos) << command << ": " << r.err;
  }
  const CliRun refused = prodsm("produce http://127.0.0.1:9/none -q" + bounds, "x\n");
  EXPECT_EQ(refused.status, 3) << refused.err;
  EXPECT_NE(refused.err.find("unavailable"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find(hint), std::string::npos) << refused.err;
}

/// `prodsm produce URL <args>` reading a FIFO, driven line batch by line batch.
class FifoRun {
 public:
  FifoRun(const std::string& args, const std::string& name) : fifo_{temp_path(name)}, err_{temp_path(name + "-err")} {
    EXPECT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    const std::string command =
        std::string(PRODSM_CLI) + " produce " + args + " -q --linger-ms 0 <" + fifo_ + " >/dev/null 2>" + err_;
    child_ = ::fork();
    if (child_ == 0) {
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(98);
    }
    fd_ = ::open(fifo_.c_str(), O_WRONLY);  // waits for the CLI's shell to open it
  }
  ~FifoRun() {
    if (fd_ >= 0) ::close(fd_);
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    std::remove(fifo_.c_str());
    std::remove(err_.c_str());
  }
  /// Writes `text` to the CLI's stdin.
  void write(const std::string& text) {
    ASSERT_EQ(::write(fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  /// Ends the input and waits for the exit; returns the exit status (-1: did not exit).
  int finish() {
    ::close(fd_);
    fd_ = -1;
    int status = 0;
    ::waitpid(child_, &status, 0);
    child_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  [[nodiscard]] std::string err() const { return slurp(err_); }

 private:
  std::string fifo_;
  std::string err_;
  pid_t child_ = -1;
  int fd_ = -1;
};

/// Waits (bounded: 30 s) until `url` holds exactly `want`; a liveness bound, not a timing
/// assertion.
void await_contents(TestClient& client, const std::string& url, const std::string& want) {
  std::string held;
  for (int i = 0; i < 600 && held != want; ++i) {
    held = client.read_all(url, false);
    if (held != want) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  ASSERT_EQ(held, want);
}

// A bearer token rotated on disk during one run is picked up from the next request on:
// the endpoint accepts the old and new token while the rotation overlaps, then only the
// new one; every line arrives once, in order, exit 0. A token file that cannot be read at
// the start is bad input before anything is sent.
TEST_F(CliProduction, BearerTokenFileRotatesDuringARun) {
  const std::string p_rotate = url("rotate");
  const std::string accepted = temp_path("accepted");
  const std::string token = temp_path("token");
  write_file(accepted, "Bearer tok-1\n");
  write_file(token, "tok-1\n");
  TlsEndpoint endpoint{"server", {"--header-check", "Authorization:" + accepted}};
  const std::string u = endpoint.secure(p_rotate);
  client.create(p_rotate, "application/octet-stream");
  {
    FifoRun run(u + " " + ca() + " --bearer-token-file " + token, "rotate-fifo");
    run.write("first\n");
    await_contents(client, p_rotate, "first\n");
    replace_file(accepted, "Bearer tok-1\nBearer tok-2\n");
    replace_file(token, "tok-2\n");
    run.write("second\n");
    await_contents(client, p_rotate, "first\nsecond\n");
    replace_file(accepted, "Bearer tok-2\n");  // the old token is refused from now on
    run.write("third\n");
    EXPECT_EQ(run.finish(), 0) << run.err();
  }
  EXPECT_EQ(client.read_all(p_rotate, false), "first\nsecond\nthird\n");

  const CliRun stale = prodsm("produce " + u + " -q " + ca() + " -H 'Authorization: Bearer tok-1'", "stale\n");
  EXPECT_EQ(stale.status, 3) << "the check is real: the old token is refused";
  const CliRun missing = prodsm("produce " + u + " -q " + ca() + " --bearer-token-file /nonexistent/t", "m\n");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--bearer-token-file '/nonexistent/t': cannot read"), std::string::npos) << missing.err;
  // Checked before anything is sent, and read within its bound whatever the file is: a
  // token a header cannot carry was retried until the delivery timeout; /dev/zero was
  // read without end.
  const std::string crlf = temp_path("token-crlf");
  std::ofstream(crlf) << "tok\r\nX-Evil: 1\n";
  const std::string long_token = temp_path("token-9k");
  std::ofstream(long_token) << std::string(9000, 'a') << "\n";
  for (const auto& [file, gist] :
       {std::pair<std::string, std::string>{crlf, "the token contains a space or a control character"},
        {"/dev/zero", "larger than 65536 bytes"},
        {"/tmp", "is a directory"},
        {long_token, "the token is too long to send: more than 8192 bytes as written"}}) {
    const CliRun bad = prodsm("produce " + u + " -q " + ca() + " --bearer-token-file " + file, "b\n");
    EXPECT_EQ(bad.status, 2) << file << ": " << bad.err;
    EXPECT_NE(bad.err.find("--bearer-token-file '" + file + "': " + gist), std::string::npos) << bad.err;
  }
  std::remove(crlf.c_str());
  std::remove(long_token.c_str());
  const CliRun both =
      prodsm("produce " + u + " -q " + ca() + " --bearer-token-file " + token + " -H 'Authorization: Bearer x'", "b\n");
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("an Authorization header is also set on every request (by -H)"), std::string::npos)
      << both.err;
  EXPECT_EQ(client.read_all(p_rotate, false), "first\nsecond\nthird\n");
  std::remove(accepted.c_str());
  std::remove(token.c_str());
}

// --header-command: the headers it prints are sent on every request, the read-back of
// --verify included (the endpoint checks them); a command
// that fails, prints nothing or prints a header the codec manages is bad input, named,
// before anything is sent.
TEST_F(CliProduction, HeaderCommandSuppliesTheHeaders) {
  const std::string p_command = url("command");
  const std::string accepted = temp_path("accepted-cmd");
  write_file(accepted, "Bearer from-command\n");
  TlsEndpoint endpoint{"server", {"--header-check", "Authorization:" + accepted}};
  const std::string u = endpoint.secure(p_command);
  // --create --verify: the stream is created, and read back for the check, with the
  // command's headers too (every request of the run carries them).
  const CliRun r = prodsm("produce " + u + " -q --create --verify " + ca() +
                              " --header-command 'echo \"Authorization: Bearer from-command\"; echo \"X-Trace: 1\"'",
                          "via command\n");
  EXPECT_EQ(r.status, 0) << r.err;
  const CliRun read = prodsm("read " + u + " " + ca() + " --header-command 'echo Authorization: Bearer from-command'");
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.out, "via command\n");
  struct Case {
    std::string command;
    std::string gist;
  };
  for (const Case& c :
       {Case{"exit 7", "exited with status 7"}, Case{"true", "printed no 'Name: value' line"},
        Case{"echo Producer-Seq: 3", "managed by the codec"}, Case{"echo not a header", "cannot be used as a header"},
        Case{"seq -s a 3000 | sed s/^/X-Big:/", "printed too much to send: more than 8192 bytes"}}) {
    const CliRun bad = prodsm("produce " + u + " -q " + ca() + " --header-command '" + c.command + "'", "no\n");
    EXPECT_EQ(bad.status, 2) << c.command;
    EXPECT_NE(bad.err.find("--header-command: "), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find(c.gist), std::string::npos) << bad.err;
  }
  EXPECT_EQ(client.read_all(p_command, false), "via command\n");
  std::remove(accepted.c_str());
}

// R3: a header command over a limit is killed with what it started (its process group):
// killing the shell alone left its children running, one more at every refresh.
TEST_F(CliProduction, AHeaderCommandOverALimitIsKilledWithWhatItStarted) {
  const std::string pid_file = temp_path("header-child-pid");
  const CliRun bad = prodsm(
      "produce " + url("header-child") + " -q --header-command 'sleep 300 & echo $! > " + pid_file + "; yes X-A: 1'",
      "no\n");
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("printed more than 65536 bytes (killed)"), std::string::npos) << bad.err;
  std::ifstream in(pid_file);
  pid_t child = 0;
  ASSERT_TRUE(in >> child) << "the command started its child";
  ASSERT_GT(child, 0);
  // Bounded wait for the kernel to finish it and its new parent to reap it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(child, 0) != 0 && errno == ESRCH;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds{25});
  }
  if (!gone) ::kill(child, SIGKILL);  // leave nothing behind either way
  EXPECT_TRUE(gone) << "the command's child " << child << " still runs";
  std::remove(pid_file.c_str());
}

}  // namespace
}  // namespace prodsm::test
