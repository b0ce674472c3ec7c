// SPDX-License-Identifier: Apache-2.0
#pragma once
// The connection flags every subcommand that talks to a server shares (produce, bench,
// read): TLS under curl's names (--cacert, --capath, --cert, --key, --insecure) and
// credentials that may change while a run goes on (--bearer-token-file re-read when the
// file changes; --header-command run again when its output is older than --header-ttl).
// Both are a per-request header provider (prodsm/http/request_fields.hpp): every request
// attempt carries the current value.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prodsm/ds/http_codec.hpp"
#include "prodsm/header_provider.hpp"
#include "prodsm/http/pool.hpp"

namespace prodsm::tools {

/// Connection flags as given on the command line.
struct ConnectionFlags {
  std::string cacert;               ///< --cacert FILE: trusted CA certificates (PEM)
  std::string capath;               ///< --capath DIR: trusted CA directory (OpenSSL hashed layout)
  std::string cert;                 ///< --cert FILE: client certificate (mutual TLS)
  std::string key;                  ///< --key FILE: the client certificate's key
  bool insecure = false;            ///< --insecure: no verification of the server at all
  std::string bearer_token_file;    ///< --bearer-token-file FILE: `Authorization: Bearer <contents>`
  std::string header_command;       ///< --header-command CMD: prints `Name: value` lines
  std::uint64_t header_ttl_s = 60;  ///< --header-ttl SECONDS: how long a command's output is used, 1..86400
};

/// A header every request carries, and what sets it, as the messages name it ("-H",
/// "S2_ACCESS_TOKEN").
struct FixedHeader {
  std::string name;    ///< the header's name
  std::string source;  ///< the flag or variable that sets it
};

/// Registers the flags above on `cmd`.
void add_connection_flags(CLI::App& cmd, ConnectionFlags& flags);

/// Fills `transport.tls` and `provider` from `flags`. `https`: the connections go to an
/// https:// URL; TLS flags (--cacert, --capath, --cert, --key, --insecure) with a plain
/// http:// one are refused, since the run would send in clear text what the user meant to
/// protect. `fixed` are the headers every
/// request carries already (-H, a token from the environment): a name both fixed and
/// provided is refused here, naming both sources (it would fail every request). The token file is read, the header
/// command run, once here, so a broken one fails before anything is sent; its headers are checked with `rule`, the
/// target protocol's rule on provided headers. Returns the message naming the bad flag, or nullopt.
std::optional<std::string> apply_connection_flags(const ConnectionFlags& flags, bool https,
                                                  http::TransportOptions& transport, HeaderProvider& provider,
                                                  const std::vector<FixedHeader>& fixed,
                                                  http::HeaderRule rule = &ds::check_extra_header);

/// `message` — an error of a session or producer made with these flags — with the
/// library's TLS option names put as the flags that set them ("session.tls.ca_file: cannot
/// load ..." -> "--cacert: cannot load ..."), so the user reads the flag they gave.
std::string in_flag_terms(std::string message);

/// "the server closed the connection without answering: if it speaks TLS at this port,
/// use https://" when `error` — the last of a run that had no response at all — is a
/// connection the server closed before answering (or a delivery timeout whose last retried
/// failure was) and `url` is a plain http:// one (a TLS
/// server closes a connection that starts with a plain HTTP request; Node's answers
/// nothing, where nginx and Go answer 400); otherwise empty.
std::string plain_http_at_tls_port_hint(std::string_view url, const Error& error);

}  // namespace prodsm::tools
