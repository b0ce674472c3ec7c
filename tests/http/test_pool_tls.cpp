// SPDX-License-Identifier: Apache-2.0
// The pool's TLS layer (http/src/pool_socket_events.cpp, tls.cpp) against an in-memory
// OpenSSL server: how a TLS session ends decides whether a response is complete (E2).
// A body delimited by the end of the connection is complete only after the server's
// close_notify: a TCP close without it may be a truncation (RFC 8446 section 6.1), the
// request's outcome unknown. Virtual time, no sockets: the test carries the ciphertext
// between the pool and the server.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>
#include <string>

#include "prodsm/http/tls.hpp"
#include "script.hpp"

namespace prodsm::http::test {
namespace {

/// A TLS server over memory BIOs with a self-signed certificate made in memory.
class MemoryTlsServer {
 public:
  MemoryTlsServer() {
    ctx_ = SSL_CTX_new(TLS_server_method());
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1,
                               0);
    X509_set_issuer_name(cert, name);
    X509_sign(cert, key, EVP_sha256());
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    ssl_ = SSL_new(ctx_);
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_, in_, out_);  // the SSL owns the BIOs
    SSL_set_accept_state(ssl_);
  }
  ~MemoryTlsServer() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  MemoryTlsServer(const MemoryTlsServer&) = delete;
  MemoryTlsServer& operator=(const MemoryTlsServer&) = delete;

  /// Ciphertext from the client; returns the plaintext it carried.
  std::string receive(std::string_view ciphertext) {
    BIO_write(in_, ciphertext.data(), static_cast<int>(ciphertext.size()));
    if (!SSL_is_init_finished(ssl_)) SSL_do_handshake(ssl_);
    std::string plain;
    char buf[4096];
    std::size_t got = 0;
    while (SSL_is_init_finished(ssl_) && SSL_read_ex(ssl_, buf, sizeof buf, &got) == 1) plain.append(buf, got);
    ERR_clear_error();
    return plain;
  }
  /// Encrypts `plain` for the client.
  void send(std::string_view plain) {
    std::size_t written = 0;
    SSL_write_ex(ssl_, plain.data(), plain.size(), &written);
  }
  /// The server's close_notify.
  void close_notify() { SSL_shutdown(ssl_); }
  /// Ciphertext waiting for the client.
  std::string take() {
    std::string out;
    char buf[4096];
    int n = 0;
    while ((n = BIO_read(out_, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
};

/// A pool to localhost over TLS (verification off: the certificate is self-signed).
PoolOptions tls_pool_options() {
  PoolOptions o = pool_options();
  o.host = "localhost";
  o.port = 443;
  TlsOptions tls;
  tls.insecure = true;
  o.tls = TlsContext::create(tls).value();
  return o;
}

/// A pool and the server on connection 1, carried until the request was received.
struct TlsRun {
  PoolScript script{tls_pool_options()};
  MemoryTlsServer server;
  std::string received;  ///< plaintext the server got

  /// Moves ciphertext both ways until nothing moves.
  void carry() {
    for (int round = 0; round < 32; ++round) {
      bool moved = false;
      (void)script.commands();
      const std::string to_server = script.write_all(1);
      if (!to_server.empty()) {
        received += server.receive(to_server);
        moved = true;
      }
      const std::string to_client = server.take();
      if (!to_client.empty()) {
        script.feed(1, to_client);
        moved = true;
      }
      if (!moved) return;
    }
  }
  /// Enqueues GET 1, connects, and carries the handshake and the request.
  void request() {
    script.enqueue(get(1));
    ASSERT_EQ(script.commands().connects, std::vector<std::uint64_t>{1});
    script.connect(1);
    carry();
    ASSERT_NE(received.find("GET /r1 HTTP/1.1"), std::string::npos) << "the request reached the server";
  }
  /// The server answers with a body that only the end of the connection delimits.
  void answer_until_close(std::string_view body) {
    server.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
    server.send(body);
    script.feed(1, server.take());
  }
};

// E2: a close-delimited body cut by a TCP close without close_notify is not a complete
// response: the request failed indefinite (connection_lost), retryable. It was taken as
// complete: a read-back handed on half a stream and `--resume` appended the rest again.
TEST(PoolTls, E2_AnEofWithoutCloseNotifyCutsACloseDelimitedBody) {
  TlsRun run;
  run.request();
  run.answer_until_close("first half of the");
  run.script.eof(1);
  const auto outcomes = run.script.outcomes();
  ASSERT_EQ(outcomes.size(), 1U);
  ASSERT_TRUE(IsFailure(outcomes[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
  EXPECT_TRUE(outcomes[0].result.error().retryable);
  EXPECT_NE(outcomes[0].result.error().message.find("close_notify"), std::string::npos)
      << outcomes[0].result.error().message;
}

// E2: after the server's close_notify the same body is complete, whether the TCP close
// follows or not (a server that waits for ours: the body was not ended until a timeout).
TEST(PoolTls, E2_ACloseNotifyEndsACloseDelimitedBody) {
  for (const bool fin : {true, false}) {
    SCOPED_TRACE(fin ? "close_notify, then FIN" : "close_notify alone");
    TlsRun run;
    run.request();
    run.answer_until_close("the whole body");
    run.server.close_notify();
    run.script.feed(1, run.server.take());
    if (fin) run.script.eof(1);
    const auto outcomes = run.script.outcomes();
    ASSERT_EQ(outcomes.size(), 1U);
    EXPECT_TRUE(IsResponse(outcomes[0], 1, 200, "the whole body"));
  }
}

// E2: an idle TLS connection that the server ended (close_notify) is not written into:
// the next request goes out on a new connection, never failing as a lost one.
TEST(PoolTls, E2_AnIdleConnectionTheServerEndedIsNotWrittenInto) {
  TlsRun run;
  run.request();
  run.server.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  run.script.feed(1, run.server.take());
  ASSERT_TRUE(IsResponse(run.script.outcomes().at(0), 1, 200, "ok"));
  run.server.close_notify();
  run.script.feed(1, run.server.take());
  const Commands after = run.script.commands();
  EXPECT_EQ(after.closes, std::vector<std::uint64_t>{1}) << "the ended connection is closed";
  run.script.enqueue(get(2));
  const Commands next = run.script.commands();
  EXPECT_EQ(next.connects, std::vector<std::uint64_t>{2}) << "a new connection for the next request";
  EXPECT_TRUE(run.script.outcomes().empty()) << "nothing failed";
}

// E2: a record the client cannot decrypt (a corrupted or forged record) after the
// request was written is a lost connection, indefinite: the server may have processed the
// request. It was tls_failed, definite, when no plaintext had arrived yet.
TEST(PoolTls, E2_ACorruptRecordAfterTheRequestWasWrittenIsIndefinite) {
  TlsRun run;
  run.request();
  run.server.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  std::string record = run.server.take();
  ASSERT_GT(record.size(), 10U);
  record[record.size() - 5] = static_cast<char>(record[record.size() - 5] ^ 0x01);
  run.script.feed(1, record);
  const auto outcomes = run.script.outcomes();
  ASSERT_EQ(outcomes.size(), 1U);
  EXPECT_TRUE(IsFailure(outcomes[0], 1, ErrorCode::connection_lost, Certainty::indefinite));
}

// B3: an encrypted client key is refused when the context is made, saying so; OpenSSL
// would otherwise ask for its passphrase on the terminal or read it from stdin — a CLI's
// records (the first line taken as the passphrase, and 4 KiB of input swallowed).
TEST(TlsContextOptions, AnEncryptedKeyIsRefusedWithoutAskingForAPassphrase) {
  const std::string dir = ::testing::TempDir();
  const std::string cert_path = dir + "prodsm-enc-cert.pem";
  const std::string key_path = dir + "prodsm-enc-key.pem";
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_pubkey(cert, key);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_sign(cert, key, EVP_sha256());
  FILE* f = std::fopen(cert_path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_X509(f, cert);
  std::fclose(f);
  f = std::fopen(key_path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  const char pass[] = "secret";
  PEM_write_PrivateKey(f, key, EVP_aes_256_cbc(), reinterpret_cast<const unsigned char*>(pass), 6, nullptr, nullptr);
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
  TlsOptions o;
  o.insecure = true;
  o.cert_file = cert_path;
  o.key_file = key_path;
  auto made = TlsContext::create(o);
  ASSERT_FALSE(made.has_value());
  EXPECT_EQ(
      made.error().rfind("tls.key_file: '" + key_path + "' is encrypted, and encrypted keys are not supported", 0), 0U)
      << made.error();
  std::remove(cert_path.c_str());
  std::remove(key_path.c_str());
}

}  // namespace
}  // namespace prodsm::http::test
