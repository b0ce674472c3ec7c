// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the blocking adapter's clause tests share: producer options for a URL, a liveness
// poll, and the scripted in-process HTTP/1.1 server (fake_server.hpp).

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "fake_server.hpp"
#include "liveness.hpp"
#include "prodsm/blocking/producer.hpp"

namespace prodsm::test {

inline blocking::ProducerOptions options_for(const std::string& url, const std::string& producer_id = "blocking-test") {
  blocking::ProducerOptions o;
  o.url = url;
  if (!producer_id.empty()) {
    o.producer.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{producer_id, 0, false};
  }
  return o;
}

}  // namespace prodsm::test
