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

// A driver that writes two lines for one request: the second used to be read as the reply
// to the next request, and every later reply answered the request before it, unnoticed.
TEST(DriverProtocol, TwoLinesForOneRequestAreTheDriversFailure) {
  DriverProcess driver({"node", "-e",
                        "require('readline').createInterface({input: process.stdin})"
                        ".on('line', (l) => process.stdout.write('{\"ok\": true}\\n{\"ok\": true, \"extra\": 1}\\n'))"},
                       std::chrono::seconds{10}, false);
  ASSERT_TRUE(driver.alive()) << driver.error();
  EXPECT_EQ(driver.request({{"op", "hello"}}).value("ok", false), true) << driver.error();
  // The extra line may still be on its way: give it the time a reply would take.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  nlohmann::json reply;
  do {
    reply = driver.request({{"op", "poll"}});
  } while (driver.alive() && !reply.contains("extra") && std::chrono::steady_clock::now() < give_up);
  EXPECT_FALSE(reply.contains("extra")) << "the extra line was taken as a reply: " << reply.dump();
  EXPECT_FALSE(driver.alive());
  EXPECT_NE(driver.error().find("the driver wrote more than one line for one request"), std::string::npos)
      << driver.error();
  EXPECT_NE(driver.error().find("\"extra\""), std::string::npos) << "shows what it wrote: " << driver.error();
  EXPECT_NE(driver.error().find("after its reply to \""), std::string::npos) << "names the request: " << driver.error();
}

// A stray line break read as a reply is named as such: it was "not a JSON object".
TEST(DriverProtocol, AnEmptyLineForAReplyIsNamed) {
  DriverProcess driver({"node", "-e",
                        "let n = 0; require('readline').createInterface({input: process.stdin})"
                        ".on('line', (l) => process.stdout.write((++n === 2 ? '\\n' : '') + '{\"ok\": true}\\n'))"},
                       std::chrono::seconds{10}, false);
  ASSERT_TRUE(driver.alive()) << driver.error();
  EXPECT_EQ(driver.request({{"op", "hello"}}).value("ok", false), true) << driver.error();
  EXPECT_EQ(driver.request({{"op", "start"}}).value("ok", true), false);
  EXPECT_NE(driver.error().find("the driver answered \"start\" with an empty line"), std::string::npos)
      << driver.error();
}

// A driver that logs without end keeps at most about kMaxLogBytes of log on disk, and its
// failure still shows the log's last lines.
TEST(DriverProtocol, AnEndlessLogIsCutBackToItsTail) {
  // 4 MiB of log for every request, then the reply; the last request's log ends "last".
  DriverProcess driver(
      {"node", "-e",
       "const big = 'x'.repeat(1 << 22) + '\\n'; let n = 0;"
       "require('readline').createInterface({input: process.stdin}).on('line', (l) => {"
       "  process.stderr.write(big); if (++n === 3) { process.stderr.write('last\\n'); process.exit(1); }"
       "  else process.stdout.write('{\"ok\": true}\\n'); })"},
      std::chrono::seconds{20}, false);
  ASSERT_TRUE(driver.alive()) << driver.error();
  EXPECT_EQ(driver.request({{"op", "a"}}).value("ok", false), true) << driver.error();
  EXPECT_EQ(driver.request({{"op", "b"}}).value("ok", false), true) << driver.error();
  // Cut back before "b" was sent: b's 4 MiB and the tail, not both requests' 8 MiB.
  EXPECT_LT(driver.log_bytes(), (std::size_t{1} << 22) + DriverProcess::kLogTailBytes + 1024);
  EXPECT_EQ(driver.request({{"op", "c"}}).value("ok", true), false);
  EXPECT_NE(driver.error().find("the driver exited"), std::string::npos) << driver.error().substr(0, 300);
  EXPECT_NE(driver.error().find("last\n"), std::string::npos) << "the log's tail is kept";
  EXPECT_LT(driver.error().size(), DriverProcess::kLogTailBytes + 1024) << "only the tail is shown";
}

}  // namespace
