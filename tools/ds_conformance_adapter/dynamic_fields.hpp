// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal: the suite's dynamic headers and parameters (set-dynamic-header,
// set-dynamic-param, clear-dynamic) as prodsm's per-request header provider
// (prodsm/header_provider.hpp): every request the adapter's session sends — stream
// commands and the cached producers' batches alike — asks for their current values. What
// a command's requests carried is reported as its result's headersSent / paramsSent.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <tl/expected.hpp>

#include "prodsm/header_provider.hpp"

namespace prodsm::tools::dsconf {

/// Dynamic headers and parameters, shared by the command thread (which sets them) and the
/// session's I/O thread (which asks for them). Thread-safe.
class DynamicFields {
 public:
  /// How a value is made for each request (protocol.ts SetDynamicHeaderCommand.valueType).
  enum class Kind : std::uint8_t {
    counter,    ///< 1, 2, 3, ... (one per request)
    timestamp,  ///< milliseconds since the Unix epoch
    token,      ///< a fixed value, replaced by the next set-dynamic-header
  };
  /// Sets (or replaces) the header `name`.
  void set_header(const std::string& name, Kind kind, std::string token);
  /// Sets (or replaces) the query parameter `name`.
  void set_param(const std::string& name, Kind kind);
  /// Forgets every dynamic header and parameter.
  void clear();
  /// Starts a command: forgets what earlier commands sent.
  void begin_command();
  /// The last value of each dynamic header / parameter the current command's requests
  /// carried (empty when none).
  std::map<std::string, std::string> headers_sent() const;
  std::map<std::string, std::string> params_sent() const;
  /// The provider to install on the session.
  HeaderProvider provider();

 private:
  struct Value {
    Kind kind = Kind::counter;
    std::uint64_t counter = 0;
    std::string token;
  };
  tl::expected<http::RequestFields, std::string> fields();
  static std::string next(Value& v);

  mutable std::mutex mu_;
  std::map<std::string, Value> headers_;
  std::map<std::string, Value> params_;
  std::map<std::string, std::string> headers_sent_;
  std::map<std::string, std::string> params_sent_;
};

}  // namespace prodsm::tools::dsconf
