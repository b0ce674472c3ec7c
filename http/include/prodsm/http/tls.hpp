// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tls.hpp
/// TLS for the HTTP client on OpenSSL, in two parts:
///  - TlsContext: the trust store, a client certificate, TLS 1.2 at least. Creating it
///    reads files (the CA bundle or directory, the certificate and key) — configuration
///    time, once per session; with a CA *directory* OpenSSL reads the matching
///    certificate during verification too.
///  - TlsEngine: one client TLS session over memory buffers (sans-IO): ciphertext in and
///    out for the socket, plaintext in and out for the HTTP connection. The Pool puts one
///    under every connection of an https:// session, so every adapter only moves bytes.
/// Verification is on by default: the server's chain against the trust store, its name
/// (the URL's host) against the certificate (RFC 6125), SNI sent. Every failure is an
/// Error with code tls_failed, definite (nothing was sent), not retryable, naming the
/// cause. Source: RFC 8446 / RFC 5246 (TLS 1.3 / 1.2), RFC 6125; OpenSSL 3 SSL(7).

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "prodsm/error.hpp"

namespace prodsm::http {

/// Trust and identity settings of https:// connections, under curl's names.
struct TlsOptions {
  /// PEM file of trusted CA certificates (curl --cacert). Empty with ca_dir empty: the
  /// system trust store, with SSL_CERT_FILE / SSL_CERT_DIR honoured as OpenSSL does.
  std::string ca_file;
  /// Directory of trusted CA certificates in OpenSSL's hashed layout (curl --capath).
  std::string ca_dir;
  /// PEM client certificate (chain) for mutual TLS (curl --cert); empty: none.
  std::string cert_file;
  /// PEM private key of cert_file (curl --key); empty: read from cert_file.
  std::string key_file;
  /// No verification of the server's certificate or name at all (curl --insecure): for a
  /// test endpoint with a self-signed certificate only; anyone in the path can read and
  /// change the traffic.
  bool insecure = false;

  /// Why these options cannot work ("tls.key_file: needs tls.cert_file"), or nullopt.
  /// Files are checked when the context is created.
  [[nodiscard]] std::optional<std::string> validate() const;
  friend bool operator==(const TlsOptions&, const TlsOptions&) = default;
};

/// An OpenSSL client context (see the file comment). Shared by the connections of one or
/// more pools; immutable once created, so it may be used from any thread.
class TlsContext {
 public:
  /// Loads the trust store and the client certificate. Errors name the option and the
  /// cause: "tls.ca_file: cannot load '/x.pem': No such file or directory",
  /// "tls.key_file: the key does not match the certificate", ...
  static tl::expected<std::shared_ptr<const TlsContext>, std::string> create(const TlsOptions& options);
  /// Frees the OpenSSL context (engines made from it keep it alive: shared_ptr).
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// The options it was made from.
  [[nodiscard]] const TlsOptions& options() const noexcept { return options_; }

  struct Native;  ///< OpenSSL's SSL_CTX (defined in tls.cpp; not for users)

 private:
  TlsContext(TlsOptions options, std::unique_ptr<Native> native) noexcept;
  friend class TlsEngine;
  TlsOptions options_;
  std::unique_ptr<Native> native_;
};

/// One client TLS session over memory buffers (see the file comment). Not thread-safe.
class TlsEngine {
 public:
  /// Where the session is.
  enum class State : std::uint8_t {
    handshaking,  ///< ciphertext goes back and forth until the server is verified
    open,         ///< plaintext flows
    failed,       ///< error() says why; nothing more flows
  };

  /// A session to `server_name` (SNI, and the name the certificate must carry unless
  /// insecure). The first flight (ClientHello) is ready in take_ciphertext() at once.
  TlsEngine(std::shared_ptr<const TlsContext> context, std::string_view server_name);
  /// Frees the OpenSSL session and its memory BIOs.
  ~TlsEngine();
  TlsEngine(const TlsEngine&) = delete;
  TlsEngine& operator=(const TlsEngine&) = delete;

  /// Ciphertext read from the socket; advances the handshake.
  void feed_ciphertext(std::span<const char> bytes);
  /// Encrypts `bytes` (only when open); returns how many were taken (all of them, or 0
  /// once failed).
  std::size_t write_plaintext(std::span<const char> bytes);
  /// Appends the plaintext decrypted so far to `out`; notes the server's close_notify
  /// (peer_closed).
  void read_plaintext(std::string& out);
  /// Appends the ciphertext to send to `out` (handshake flights, encrypted records).
  void take_ciphertext(std::string& out);
  /// The peer closed the TCP stream: no more ciphertext will come.
  void on_eof();

  /// Lifecycle state.
  [[nodiscard]] State state() const noexcept { return state_; }
  /// Why it failed (code tls_failed, definite, not retryable); meaningful when failed.
  [[nodiscard]] const Error& error() const noexcept { return error_; }
  /// The negotiated protocol version ("TLSv1.3"), once open.
  [[nodiscard]] std::string_view version() const noexcept;
  /// True once the server's close_notify arrived: everything it sent is complete (RFC
  /// 8446 section 6.1). A TCP close without it may be a truncation.
  [[nodiscard]] bool peer_closed() const noexcept { return peer_closed_; }
  /// True when it failed on an alert the server sent refusing the handshake (our
  /// certificate, e.g. TLS 1.3's certificate_required after our side finished): the server
  /// processed nothing, so the failure is definite even after a request was written.
  [[nodiscard]] bool refused_by_peer() const noexcept { return refused_by_peer_; }

  struct Native;  ///< OpenSSL's SSL and BIOs (defined in tls.cpp; not for users)

 private:
  void advance();
  void fail(std::string message);
  std::shared_ptr<const TlsContext> context_;
  std::string server_name_;
  std::unique_ptr<Native> native_;
  State state_ = State::handshaking;
  Error error_;
  bool peer_closed_ = false;
  bool refused_by_peer_ = false;
};

}  // namespace prodsm::http
