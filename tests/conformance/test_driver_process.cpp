// SPDX-License-Identifier: Apache-2.0
// The driver process (conformance/src/driver_process.hpp, docs/conformance.md "Driver
// protocol"): a driver that stops reading its stdin fails within the reply timeout. The
// harness's writes used to block: a request larger than the pipe's buffer (a vector
// with a 1 MB record) to such a driver hung `prodsm conform` for ever.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "driver_process.hpp"

namespace {

using prodsm::conformance::detail::DriverProcess;

TEST(DriverProtocol, ADriverThatStopsReadingFailsWithinTheReplyTimeout) {
  // `sleep` never reads its stdin and never answers: the request fills the pipe.
  DriverProcess driver({"sleep", "60"}, std::chrono::milliseconds{300}, false);
  ASSERT_TRUE(driver.alive()) << driver.error();
  const nlohmann::json request = {{"op", "submit"}, {"record", std::string(1 << 20, 'x')}};
  const nlohmann::json reply = driver.request(request);
  EXPECT_EQ(reply.value("ok", true), false) << reply.dump().substr(0, 200);
  EXPECT_FALSE(driver.alive());
  EXPECT_NE(driver.error().find("the driver did not read its request within the reply timeout (300 ms;"),
            std::string::npos)
      << driver.error();
}

TEST(DriverProtocol, ARequestLargerThanThePipeReachesADriverThatReads) {
  // A driver that reads each whole line, then echoes it back as its reply: the 1 MiB line
  // went through the pipe while the driver read it.
  DriverProcess driver({"node", "-e",
                        "require('readline').createInterface({input: process.stdin})"
                        ".on('line', (l) => process.stdout.write(l + '\\n'))"},
                       std::chrono::seconds{10}, false);
  ASSERT_TRUE(driver.alive()) << driver.error();
  const nlohmann::json reply = driver.request({{"ok", true}, {"record", std::string(1 << 20, 'y')}});
  EXPECT_EQ(reply.value("ok", false), true) << driver.error();
  EXPECT_EQ(reply.value("record", std::string{}).size(), std::size_t{1} << 20);
}

}  // namespace
