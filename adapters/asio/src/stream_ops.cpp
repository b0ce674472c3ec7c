// SPDX-License-Identifier: Apache-2.0
// Stream administration requests over a Session: one request each (read: a loop).
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
                      done(ds::classify_close(*r, false));
                    });
}

namespace {

/// The catch-up read loop (ds::CatchUpReader) over exchanges.
struct ReadLoop : std::enable_shared_from_this<ReadLoop> {
  ReadLoop(std::shared_ptr<Session> s, ds::CatchUpReader r, std::function<void(ReadStreamResult)> d)
      : session{std::move(s)}, reader{std::move(r)}, done{std::move(d)} {}
  std::shared_ptr<Session> session;
  ds::CatchUpReader reader;
  std::function<void(ReadStreamResult)> done;

  void next() {
    session->exchange(reader.next_request(), [self = shared_from_this()](ExchangeResult r) {
      if (auto result = self->reader.handle(std::move(r))) return self->done(std::move(*result));
      self->next();
    });
  }
};

}  // namespace

void read_stream_all(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, bool json,
                     std::size_t max_bytes, ds::RequestOptions options, std::function<void(ReadStreamResult)> done) {
  std::make_shared<ReadLoop>(session, ds::CatchUpReader(url, json, max_bytes, std::move(options)), std::move(done))
      ->next();
}

}  // namespace prodsm::asio
