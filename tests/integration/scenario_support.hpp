// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the adapter-neutral scenario files (scenarios.cpp,
// fault_scenarios.cpp): the reference server, configs, and the P2/P3 check.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "liveness.hpp"
#include "producer_under_test.hpp"
#include "reference_server.hpp"

namespace prodsm::test {

using namespace std::chrono_literals;

/// The shared reference server (started on first use).
inline ReferenceServer& server() {
  ReferenceServer& s = ReferenceServer::shared();
  if (s.url().empty()) ADD_FAILURE() << "reference server: " << s.error();
  return s;
}

/// A config with the idempotent producer `id` at `epoch`.
inline DurableStreamsConfig idempotent(const std::string& id, std::uint64_t epoch = 0, bool auto_claim = false) {
  DurableStreamsConfig c;
  c.protocol.idempotent = DurableStreamsPolicy::IdempotentOptions{id, epoch, auto_claim};
  return c;
}

/// Checks P2/P3 on a completion log: every ticket 0..n-1 exactly once, in ticket order.
inline void expect_each_ticket_once_in_order(const std::vector<Completion>& log, std::size_t n) {
  ASSERT_EQ(log.size(), n) << "P2: one completion per accepted record";
  std::uint64_t expected = 0;
  for (const auto& c : log) {
    if (c.ok) {
      EXPECT_EQ(c.ticket, expected) << "P3: completions in ticket order";
      expected = c.ticket + 1;
    } else {
      ++expected;
    }
  }
}

}  // namespace prodsm::test
