// SPDX-License-Identifier: Apache-2.0
// Per-request headers and query parameters (prodsm/http/request_fields.hpp, and the
// adapters' provider call in prodsm/header_provider.hpp): what is added
// where, what is refused and why, and that a failing provider is an attempt's error,
// never an exception. Issue "Production endpoints" (per-request headers); S2 (the
// protocol's own headers and the body are not touched).
#include <gtest/gtest.h>

#include <stdexcept>

#include "prodsm/header_provider.hpp"
#include "prodsm/http/request_fields.hpp"

namespace prodsm::http {
namespace {

using prodsm::apply_header_provider;
using prodsm::HeaderProvider;

const std::string kPost = "POST /v1/stream HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nProducer-Seq: 7\r\n\r\nabc";
const std::string kGet = "GET /v1/stream?offset=-1 HTTP/1.1\r\nHost: h\r\n\r\n";

std::optional<std::string> refuse_producer(const Header& h) {
  if (h.name.rfind("Producer-", 0) == 0) return "header '" + h.name + "' is managed by the codec";
  return std::nullopt;
}

TEST(RequestFields, HeadersGoAtTheEndOfTheHeadAndTheBodyIsUntouched) {
  std::string bytes = kPost;
  RequestFields f;
  f.headers = {{"Authorization", "Bearer t1"}, {"X-Request-Id", "42"}};
  ASSERT_TRUE(add_request_fields(bytes, f));
  EXPECT_EQ(bytes,
            "POST /v1/stream HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nProducer-Seq: 7\r\n"
            "Authorization: Bearer t1\r\nX-Request-Id: 42\r\n\r\nabc");
}

TEST(RequestFields, QueryParametersArePercentEncodedAndJoinAnExistingQuery) {
  std::string get = kGet;
  RequestFields f;
  f.query_params = {{"request_id", "1"}, {"sig", "a b/c=&"}};
  ASSERT_TRUE(add_request_fields(get, f));
  EXPECT_EQ(get, "GET /v1/stream?offset=-1&request_id=1&sig=a%20b%2Fc%3D%26 HTTP/1.1\r\nHost: h\r\n\r\n");

  std::string post = kPost;
  RequestFields g;
  g.query_params = {{"token", "x"}};
  g.headers = {{"X-A", "1"}};
  ASSERT_TRUE(add_request_fields(post, g));
  EXPECT_EQ(post,
            "POST /v1/stream?token=x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nProducer-Seq: 7\r\nX-A: 1\r\n\r\nabc");
}

TEST(RequestFields, NothingToAddLeavesTheRequestAsItIs) {
  std::string bytes = kPost;
  ASSERT_TRUE(add_request_fields(bytes, RequestFields{}));
  EXPECT_EQ(bytes, kPost);
}

TEST(RequestFields, RefusedFieldsNameTheFieldAndLeaveTheRequestUnchanged) {
  struct Case {
    RequestFields fields;
    std::string gist;
  };
  std::vector<Case> cases;
  cases.push_back({{{{"Bad Name", "v"}}, {}}, "not an HTTP token"});
  cases.push_back({{{{"", "v"}}, {}}, "empty header name"});
  cases.push_back({{{{"X-Evil", "v\r\nInjected: 1"}}, {}}, "control character"});
  cases.push_back({{{{"X-Nul", std::string{"a\0b", 3}}}, {}}, "control character"});
  cases.push_back({{{{"content-length", "9"}}, {}}, "frames the message"});
  cases.push_back({{{{"Transfer-Encoding", "chunked"}}, {}}, "frames the message"});
  cases.push_back({{{{"Connection", "close"}}, {}}, "frames the message"});
  cases.push_back({{{{"host", "other"}}, {}}, "frames the message"});
  cases.push_back({{{{"producer-seq", "8"}}, {}}, "already set"});             // already in the head
  cases.push_back({{{{"Producer-Epoch", "1"}}, {}}, "managed by the codec"});  // the rule's
  cases.push_back({{{}, {{"", "v"}}}, "empty query parameter name"});
  RequestFields many;
  for (int i = 0; i < 65; ++i) many.headers.push_back({"X-" + std::to_string(i), "v"});
  cases.push_back({many, "more than 64 headers"});
  RequestFields big;
  big.headers.push_back({"X-Big", std::string(9000, 'a')});
  cases.push_back({big, "more than 8192 bytes"});
  for (const Case& c : cases) {
    std::string bytes = kPost;
    auto r = add_request_fields(bytes, c.fields, &refuse_producer);
    ASSERT_FALSE(r) << c.gist;
    EXPECT_NE(r.error().find(c.gist), std::string::npos) << r.error();
    EXPECT_EQ(bytes, kPost) << c.gist;
  }
}

TEST(RequestFields, HtabInAValueIsAllowed) {
  std::string bytes = kGet;
  RequestFields f;
  f.headers = {{"X-T", "a\tb"}};
  EXPECT_TRUE(add_request_fields(bytes, f));
}

TEST(RequestFields, BytesThatAreNotARequestHeadAreRefused) {
  std::string bytes = "garbage";
  RequestFields f;
  f.headers = {{"X-A", "1"}};
  auto r = add_request_fields(bytes, f);
  ASSERT_FALSE(r);
  EXPECT_EQ(bytes, "garbage");
}

TEST(HeaderProvider, IsAskedWithTheMethodAndTargetAndItsFieldsAreAdded) {
  std::string seen_method;
  std::string seen_target;
  HeaderProvider provider = [&](const RequestInfo& info) -> tl::expected<RequestFields, std::string> {
    seen_method = info.method;
    seen_target = info.target;
    RequestFields f;
    f.headers = {{"Authorization", "Bearer fresh"}};
    return f;
  };
  Request r;
  r.bytes = kGet;
  EXPECT_FALSE(apply_header_provider(provider, r, nullptr));
  EXPECT_EQ(seen_method, "GET");
  EXPECT_EQ(seen_target, "/v1/stream?offset=-1");
  EXPECT_NE(r.bytes.find("Authorization: Bearer fresh\r\n\r\n"), std::string::npos);
}

TEST(HeaderProvider, NoProviderChangesNothing) {
  Request r;
  r.bytes = kPost;
  EXPECT_FALSE(apply_header_provider(HeaderProvider{}, r, nullptr));
  EXPECT_EQ(r.bytes, kPost);
}

/// Checks that `provider` fails the attempt: header_provider_failed, definite (nothing was
/// sent), retryable, a message containing `gist`, the request unchanged.
void expect_attempt_fails(const HeaderProvider& provider, const std::string& gist) {
  Request r;
  r.bytes = kPost;
  auto e = apply_header_provider(provider, r, &refuse_producer);
  ASSERT_TRUE(e.has_value()) << gist;
  EXPECT_EQ(e->code, ErrorCode::header_provider_failed);
  EXPECT_EQ(e->certainty, Certainty::definite);
  EXPECT_TRUE(e->retryable);
  EXPECT_NE(e->message.find(gist), std::string::npos) << e->message;
  EXPECT_EQ(e->message.rfind("header provider: ", 0), 0U) << e->message;
  EXPECT_EQ(r.bytes, kPost);
}

TEST(HeaderProvider, AFailureThrowOrBadFieldFailsTheAttemptNotTheProcess) {
  expect_attempt_fails(
      [](const RequestInfo&) -> tl::expected<RequestFields, std::string> {
        return tl::unexpected(std::string{"token file missing"});
      },
      "token file missing");
  expect_attempt_fails(
      [](const RequestInfo&) -> tl::expected<RequestFields, std::string> { return tl::unexpected(std::string{}); },
      "no reason given");
  expect_attempt_fails(
      [](const RequestInfo&) -> tl::expected<RequestFields, std::string> {
        throw std::runtime_error("token service down");
      },
      "threw: token service down");
  expect_attempt_fails([](const RequestInfo&) -> tl::expected<RequestFields, std::string> { throw 42; },
                       "non-standard exception");
  expect_attempt_fails(
      [](const RequestInfo&) -> tl::expected<RequestFields, std::string> {
        RequestFields f;
        f.headers = {{"Producer-Id", "x"}};
        return f;
      },
      "managed by the codec");
}

}  // namespace
}  // namespace prodsm::http
