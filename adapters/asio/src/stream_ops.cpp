// SPDX-License-Identifier: Apache-2.0
// Stream administration requests over a Session: one request each (reads: read_stream.cpp).
#include "prodsm/asio/stream_ops.hpp"

namespace prodsm::asio {

void create_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                   ds::CreateOptions create, ds::RequestOptions options, std::function<void(CreateStreamResult)> done) {
  session->exchange(ds::encode_create(url, content_type, create, options), false,
                    [done = std::move(done)](ExchangeResult r) {
                      if (!r) return done(tl::unexpected(r.error()));
                      done(ds::classify_create(*r));
                    });
}

void head_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                 std::function<void(HeadStreamResult)> done) {
  session->exchange(ds::encode_head(url, options), true, [done = std::move(done)](ExchangeResult r) {
    if (!r) return done(tl::unexpected(r.error()));
    done(ds::classify_head(*r));
  });
}

void delete_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, ds::RequestOptions options,
                   std::function<void(DeleteStreamResult)> done) {
  session->exchange(ds::encode_delete(url, options), false, [done = std::move(done)](ExchangeResult r) {
    if (!r) return done(tl::unexpected(r.error()));
    done(ds::classify_delete(*r));
  });
}

void close_stream(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, std::string content_type,
                  ds::RequestOptions options, std::function<void(CloseStreamResult)> done) {
  session->exchange(ds::encode_close(url, content_type, std::nullopt, options), false,
                    [done = std::move(done)](ExchangeResult r) {
                      if (!r) return done(tl::unexpected(r.error()));
                      done(ds::classify_close(*r, std::nullopt));
                    });
}

}  // namespace prodsm::asio
