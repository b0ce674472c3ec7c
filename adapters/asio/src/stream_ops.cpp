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

/// Appends the elements of the JSON array text `chunk` to the array being built in
/// `out` (which holds "[" plus elements so far). The server always answers a JSON read
/// with one array; its brackets are stripped, the elements kept verbatim.
bool append_json_elements(std::string& out, std::string_view chunk) {
  while (!chunk.empty() &&
         (chunk.front() == ' ' || chunk.front() == '\n' || chunk.front() == '\r' || chunk.front() == '\t')) {
    chunk.remove_prefix(1);
  }
  while (!chunk.empty() &&
         (chunk.back() == ' ' || chunk.back() == '\n' || chunk.back() == '\r' || chunk.back() == '\t')) {
    chunk.remove_suffix(1);
  }
  if (chunk.size() < 2 || chunk.front() != '[' || chunk.back() != ']') return false;
  std::string_view inner = chunk.substr(1, chunk.size() - 2);
  bool blank = true;
  for (char c : inner) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      blank = false;
      break;
    }
  }
  if (blank) return true;
  if (out.size() > 1) out += ',';
  out.append(inner);
  return true;
}

struct ReadLoop : std::enable_shared_from_this<ReadLoop> {
  std::shared_ptr<Session> session;
  ds::StreamUrl url;
  bool json = false;
  std::size_t max_bytes = 0;
  ds::RequestOptions options;
  std::function<void(ReadStreamResult)> done;
  StreamContents contents;
  std::string offset = "-1";

  void next() {
    ++contents.reads;
    session->exchange(ds::encode_read(url, offset, options), false,
                      [self = shared_from_this()](ExchangeResult r) { self->on_response(std::move(r)); });
  }

  void on_response(ExchangeResult r) {
    if (!r) return done(tl::unexpected(r.error()));
    auto read = ds::classify_read(*r);
    if (!read) return done(tl::unexpected(read.error()));
    const std::size_t size_before = contents.body.size();
    if (json) {
      if (!append_json_elements(contents.body, read->body)) {
        return done(tl::unexpected(make_error(ErrorCode::protocol_error, Certainty::definite, false,
                                              "JSON read did not return a JSON array")));
      }
    } else {
      contents.body += read->body;
    }
    if (contents.body.size() > max_bytes) {
      return done(
          tl::unexpected(make_error(ErrorCode::protocol_error, Certainty::definite, false,
                                    "stream larger than the read limit of " + std::to_string(max_bytes) + " bytes")));
    }
    const bool progressed = read->next_offset != offset;
    if (!progressed && contents.body.size() != size_before) {
      // Data that does not move the offset would be read twice: the stream's contents
      // would come out duplicated.
      return done(
          tl::unexpected(make_error(ErrorCode::protocol_error, Certainty::definite, false,
                                    "the server returned data without advancing Stream-Next-Offset (" + offset + ")")));
    }
    offset = read->next_offset;
    contents.next_offset = read->next_offset;
    contents.closed = read->closed;
    if (read->up_to_date || read->closed || !progressed || offset.empty()) {
      if (json) contents.body += ']';
      return done(std::move(contents));
    }
    next();
  }
};

}  // namespace

void read_stream_all(const std::shared_ptr<Session>& session, const ds::StreamUrl& url, bool json,
                     std::size_t max_bytes, ds::RequestOptions options, std::function<void(ReadStreamResult)> done) {
  auto loop = std::make_shared<ReadLoop>();
  loop->session = session;
  loop->url = url;
  loop->json = json;
  loop->max_bytes = max_bytes;
  loop->options = std::move(options);
  loop->done = std::move(done);
  if (json) loop->contents.body = "[";
  loop->next();
}

}  // namespace prodsm::asio
