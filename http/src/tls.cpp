// SPDX-License-Identifier: Apache-2.0
// TLS on OpenSSL: a client context (trust store, client certificate) and a client session
// over two memory BIOs, so the socket stays the adapter's (see tls.hpp).
#include "prodsm/http/tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

namespace prodsm::http {
namespace {

/// True when OpenSSL's first queued error is an alert the server sent refusing the
/// handshake (our certificate, or the session itself): it processed no request. Peeks:
/// the queue is left for openssl_errors().
bool peer_refused_handshake() {
  const int reason = ERR_GET_REASON(ERR_peek_error()) - SSL_AD_REASON_OFFSET;
  switch (reason) {
    case SSL_AD_HANDSHAKE_FAILURE:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_CERTIFICATE_REQUIRED: return true;
    default: return false;
  }
}

/// The passphrase callback of an encrypted private key: none is given (OpenSSL would
/// otherwise prompt on the terminal or read stdin, which holds a CLI's records).
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) {
  return -1;
}

/// OpenSSL's error queue of this thread as one line (emptied).
std::string openssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    if (!out.empty()) out += "; ";
    out += buf.data();
  }
  return out.empty() ? std::string("unknown OpenSSL error") : out;
}

bool is_ip_literal(const std::string& name) {
  std::array<unsigned char, 16> addr{};
  return ::inet_pton(AF_INET, name.c_str(), addr.data()) == 1 || ::inet_pton(AF_INET6, name.c_str(), addr.data()) == 1;
}

}  // namespace

std::optional<std::string> TlsOptions::validate() const {
  if (!key_file.empty() && cert_file.empty()) return "tls.key_file: needs tls.cert_file";
  if (insecure && (!ca_file.empty() || !ca_dir.empty())) {
    return "tls.insecure: verifies nothing, so tls.ca_file and tls.ca_dir would be ignored; give one or the other";
  }
  return std::nullopt;
}

// ---- TlsContext ------------------------------------------------------------------------------

struct TlsContext::Native {
  SSL_CTX* ctx = nullptr;
  ~Native() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

TlsContext::TlsContext(TlsOptions options, std::unique_ptr<Native> native) noexcept
    : options_{std::move(options)}, native_{std::move(native)} {}

TlsContext::~TlsContext() = default;

tl::expected<std::shared_ptr<const TlsContext>, std::string> TlsContext::create(const TlsOptions& o) {
  if (auto why = o.validate()) return tl::unexpected(std::move(*why));
  ERR_clear_error();
  auto native = std::make_unique<Native>();
  native->ctx = SSL_CTX_new(TLS_client_method());
  if (native->ctx == nullptr) return tl::unexpected("tls: cannot create a context: " + openssl_errors());
  SSL_CTX* ctx = native->ctx;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (o.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (o.ca_file.empty() && o.ca_dir.empty()) {
      if (SSL_CTX_set_default_verify_paths(ctx) != 1) {  // SSL_CERT_FILE / SSL_CERT_DIR, else the system's
        return tl::unexpected("tls: cannot load the system trust store: " + openssl_errors());
      }
    }
    if (!o.ca_file.empty() && SSL_CTX_load_verify_file(ctx, o.ca_file.c_str()) != 1) {
      return tl::unexpected("tls.ca_file: cannot load '" + o.ca_file + "': " + openssl_errors());
    }
    if (!o.ca_dir.empty()) {
      // OpenSSL looks in it only at the handshake: a typo would fail there.
      std::error_code ec;
      if (!std::filesystem::is_directory(o.ca_dir, ec)) {
        return tl::unexpected("tls.ca_dir: cannot use '" + o.ca_dir + "': " +
                              (std::filesystem::exists(o.ca_dir, ec) ? "not a directory" : "no such directory"));
      }
      if (SSL_CTX_load_verify_dir(ctx, o.ca_dir.c_str()) != 1) {
        return tl::unexpected("tls.ca_dir: cannot use '" + o.ca_dir + "': " + openssl_errors());
      }
    }
  }
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1) {
      return tl::unexpected("tls.cert_file: cannot load '" + o.cert_file + "': " + openssl_errors());
    }
    const std::string& key = o.key_file.empty() ? o.cert_file : o.key_file;
    if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      const std::string why = openssl_errors();
      if (why.find("bad decrypt") != std::string::npos || why.find("bad password read") != std::string::npos ||
          why.find("interrupted or cancelled") != std::string::npos) {
        return tl::unexpected("tls.key_file: '" + key +
                              "' is encrypted, and encrypted keys are not supported (no passphrase is asked "
                              "for): decrypt it first, e.g. openssl pkey -in KEY -out PLAIN.key (" +
                              why + ")");
      }
      return tl::unexpected("tls.key_file: cannot load '" + key + "': " + why);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return tl::unexpected("tls.key_file: the key does not match the certificate: " + openssl_errors());
    }
  }
  return std::shared_ptr<const TlsContext>(new TlsContext(o, std::move(native)));
}

// ---- TlsEngine -------------------------------------------------------------------------------

struct TlsEngine::Native {
  SSL* ssl = nullptr;
  BIO* in = nullptr;   ///< ciphertext from the socket (owned by ssl once set)
  BIO* out = nullptr;  ///< ciphertext for the socket (owned by ssl once set)
  ~Native() {
    if (ssl != nullptr) SSL_free(ssl);  // frees both BIOs
  }
};

TlsEngine::TlsEngine(std::shared_ptr<const TlsContext> context, std::string_view server_name)
    : context_{std::move(context)}, server_name_{server_name}, native_{std::make_unique<Native>()} {
  ERR_clear_error();
  native_->ssl = SSL_new(context_->native_->ctx);
  native_->in = BIO_new(BIO_s_mem());
  native_->out = BIO_new(BIO_s_mem());
  if (native_->ssl == nullptr || native_->in == nullptr || native_->out == nullptr) {
    if (native_->ssl == nullptr) {
      if (native_->in != nullptr) BIO_free(native_->in);
      if (native_->out != nullptr) BIO_free(native_->out);
    }
    fail("cannot create a TLS session: " + openssl_errors());
    return;
  }
  BIO_set_mem_eof_return(native_->in, -1);  // no data yet is "retry", not end of stream
  SSL_set_bio(native_->ssl, native_->in, native_->out);
  SSL_set_connect_state(native_->ssl);
  const bool ip = is_ip_literal(server_name_);
  if (!ip) SSL_set_tlsext_host_name(native_->ssl, server_name_.c_str());  // SNI carries host names only (RFC 6066)
  if (!context_->options().insecure) {
    X509_VERIFY_PARAM* param = SSL_get0_param(native_->ssl);
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name_.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, server_name_.c_str(), server_name_.size());
    if (set != 1) {
      fail("cannot check the server's name '" + server_name_ + "': " + openssl_errors());
      return;
    }
  }
  advance();  // the ClientHello
}

TlsEngine::~TlsEngine() = default;

void TlsEngine::fail(std::string message) {
  if (state_ == State::failed) return;
  state_ = State::failed;
  error_ = make_error(ErrorCode::tls_failed, Certainty::definite, false,
                      "TLS with " + server_name_ + " failed: " + std::move(message));
}

void TlsEngine::advance() {
  if (state_ != State::handshaking) return;
  ERR_clear_error();
  const int r = SSL_do_handshake(native_->ssl);
  if (r == 1) {
    state_ = State::open;
    return;
  }
  const int e = SSL_get_error(native_->ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
  const long verify = SSL_get_verify_result(native_->ssl);
  if (verify != X509_V_OK) {
    fail(std::string("the server's certificate was refused: ") + X509_verify_cert_error_string(verify));
    return;
  }
  const std::string why = openssl_errors();
  if (why.find("wrong version number") != std::string::npos ||
      why.find("packet length too long") != std::string::npos ||
      why.find("record layer failure") != std::string::npos) {
    fail("the server did not answer with TLS (a plaintext HTTP server?): " + why);
    return;
  }
  fail("the handshake failed: " + why);
}

void TlsEngine::feed_ciphertext(std::span<const char> bytes) {
  if (state_ == State::failed || bytes.empty()) return;
  if (BIO_write(native_->in, bytes.data(), static_cast<int>(bytes.size())) != static_cast<int>(bytes.size())) {
    fail("cannot buffer the server's bytes: " + openssl_errors());
    return;
  }
  advance();
}

std::size_t TlsEngine::write_plaintext(std::span<const char> bytes) {
  if (state_ != State::open) return 0;
  ERR_clear_error();
  std::size_t done = 0;
  while (done < bytes.size()) {
    std::size_t written = 0;
    if (SSL_write_ex(native_->ssl, bytes.data() + done, bytes.size() - done, &written) != 1) {
      fail("cannot encrypt: " + openssl_errors());
      return 0;
    }
    done += written;
  }
  return done;
}

void TlsEngine::read_plaintext(std::string& out) {
  if (state_ != State::open) return;
  ERR_clear_error();
  std::array<char, 16 * 1024> buf{};
  while (true) {
    std::size_t got = 0;
    if (SSL_read_ex(native_->ssl, buf.data(), buf.size(), &got) == 1) {
      out.append(buf.data(), got);
      continue;
    }
    const int e = SSL_get_error(native_->ssl, 0);
    if (e == SSL_ERROR_ZERO_RETURN) {  // the server's close_notify: its data is complete
      peer_closed_ = true;
      return;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    refused_by_peer_ = peer_refused_handshake();
    fail((refused_by_peer_ ? "the server refused the session: " : "cannot decrypt the server's bytes: ") +
         openssl_errors());
    return;
  }
}

void TlsEngine::take_ciphertext(std::string& out) {
  if (native_->out == nullptr) return;
  std::array<char, 16 * 1024> buf{};
  while (BIO_ctrl_pending(native_->out) > 0) {
    const int n = BIO_read(native_->out, buf.data(), static_cast<int>(buf.size()));
    if (n <= 0) return;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

void TlsEngine::on_eof() {
  if (state_ == State::handshaking) fail("the server closed the connection during the handshake");
}

std::string_view TlsEngine::version() const noexcept {
  if (state_ != State::open || native_->ssl == nullptr) return {};
  return SSL_get_version(native_->ssl);
}

}  // namespace prodsm::http
