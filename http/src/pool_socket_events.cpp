// SPDX-License-Identifier: Apache-2.0
// http::Pool's socket events (see pool.cpp): a connection opened or refused, bytes to
// write and written, bytes read, end of file, an error, and the TLS pump between a
// connection and its socket.
#include <algorithm>
#include <span>
#include <string_view>
#include <utility>

#include "prodsm/http/pool.hpp"

namespace prodsm::http {

template <class Event>
void Pool::on_slot_event(ConnectionId id, Instant now, Event&& event) {
  now = latest_now_.observe(now);
  Slot* s = find(id);
  if (s == nullptr) return;
  const auto before = s->connection.state();
  event(*s, now);
  after_event(*s, before);
  dispatch(now);  // an event that ended the connection may free the queue (see after_event)
  sweep();
}

void Pool::on_connected(ConnectionId id, Instant now) {
  now = latest_now_.observe(now);
  Slot* s = find(id);
  if (s == nullptr || s->connection.state() != Connection::State::connecting) return;
  if (options_.tls) {  // https://: the connection opens once the handshake is done
    s->tls = std::make_unique<TlsEngine>(options_.tls, options_.host);
    tls_pump(*s, now);
  } else {
    s->connection.on_connected(now);
    ++connections_opened_;
    connects_paused_ = false;
  }
  after_event(*s, Connection::State::connecting);
  dispatch(now);
  sweep();
}

void Pool::on_connect_failed(ConnectionId id, Instant now, std::string_view why) {
  on_slot_event(id, now, [why](Slot& s, Instant at) { s.connection.on_connect_failed(at, why); });
}

WriteView Pool::take_write(ConnectionId id, Instant now) {
  now = latest_now_.observe(now);
  Slot* s = find(id);
  if (s == nullptr) return {};
  s->write_pending = false;
  s->write_short = false;  // the caller is writing again
  if (!s->tls) {
    WriteView view = s->connection.take_write(now);
    if (!view.empty()) s->handed_bytes = view.bytes;
    return view;
  }
  if (s->cipher_handed > 0) return {};
  tls_pump(*s, now);  // the connection's plaintext, encrypted
  WriteView view;
  if (s->cipher.empty()) return view;
  s->cipher_handed = s->cipher.size();
  s->handed_bytes = s->cipher.size();
  view.parts[0] = std::span<const char>(s->cipher.data(), s->cipher.size());
  view.count = 1;
  view.bytes = s->cipher.size();
  return view;
}

/// Moves bytes through a connection's TLS session until nothing moves: the handshake,
/// plaintext from the connection into ciphertext for the socket, and ciphertext from
/// the socket into plaintext for the connection. A refused handshake fails the
/// connection's requests with tls_failed (definite: nothing was sent); the server's
/// close_notify ends the connection as an end of file does (E2).
void Pool::tls_pump(Slot& s, Instant now) {
  TlsEngine& t = *s.tls;
  Connection& c = s.connection;
  for (int round = 0; round < 64; ++round) {
    if (t.state() == TlsEngine::State::failed) {
      // During the handshake, or the server refusing it by an alert before its first
      // byte of data (TLS 1.3 sends its refusal of our certificate after our side
      // finished the handshake and wrote): no request was processed — definite. Any
      // other broken session (a record that does not decrypt) is a lost connection:
      // requests written are indefinite (E2), since the server may have processed them.
      if (c.state() == Connection::State::connecting ||
          (c.state() == Connection::State::open && !s.tls_data_seen && t.refused_by_peer())) {
        c.on_connect_failed(now, t.error());
      } else if (c.state() == Connection::State::open) {
        c.on_error(now, t.error().message);
      }
      return;
    }
    bool progress = false;
    if (t.state() == TlsEngine::State::open && c.state() == Connection::State::connecting) {
      c.on_connected(now);
      ++connections_opened_;
      connects_paused_ = false;
      progress = true;
    }
    if (t.state() == TlsEngine::State::open && c.state() == Connection::State::open) {
      if (c.wants_write()) {
        const WriteView plain = c.take_write(now);
        std::size_t taken = 0;
        for (const auto& part : plain.spans()) taken += t.write_plaintext(part);
        c.on_written(now, taken);
        progress = true;
      }
      std::string decrypted;
      t.read_plaintext(decrypted);
      if (!decrypted.empty()) {
        s.tls_data_seen = true;
        c.on_bytes(now, decrypted);
        progress = true;
      }
      if (t.peer_closed() && c.state() != Connection::State::closed) {
        c.on_eof(now);  // close_notify: a close-delimited body is complete; an idle connection ends
        progress = true;
      }
    }
    const std::size_t before = s.cipher.size();
    t.take_ciphertext(s.cipher);
    progress = progress || s.cipher.size() != before;
    if (!progress) return;
  }
}

void Pool::on_written(ConnectionId id, Instant now, std::size_t bytes) {
  on_slot_event(id, now, [this, bytes](Slot& s, Instant at) {
    if (s.handed_bytes > 0) {                  // a write was in progress (a spurious report changes nothing)
      s.write_short = bytes < s.handed_bytes;  // the rest when the socket is writable (see Write)
      s.handed_bytes = 0;
    }
    if (s.tls) {
      s.cipher.erase(0, std::min(bytes, s.cipher_handed));
      s.cipher_handed = 0;
      if (s.connection.state() != Connection::State::closed) tls_pump(s, at);
    } else {
      s.connection.on_written(at, bytes);
    }
  });
}

void Pool::on_bytes(ConnectionId id, Instant now, std::span<const char> bytes) {
  on_slot_event(id, now, [this, bytes](Slot& s, Instant at) {
    if (!s.tls) {
      s.connection.on_bytes(at, bytes);
    } else if (s.connection.state() != Connection::State::closed) {
      s.tls->feed_ciphertext(bytes);
      tls_pump(s, at);
    }
  });
}

void Pool::on_eof(ConnectionId id, Instant now) {
  on_slot_event(id, now, [this](Slot& s, Instant at) {
    if (s.tls && s.connection.state() != Connection::State::closed) {
      s.tls->on_eof();
      tls_pump(s, at);  // what was decrypted before the end, then the end
      // E2: a TCP close without the server's close_notify while a response is awaited
      // may cut it short (RFC 8446 section 6.1): a body delimited by the end of the
      // connection is not complete, the request's outcome is unknown.
      if (s.connection.state() == Connection::State::open && s.tls->state() == TlsEngine::State::open &&
          !s.tls->peer_closed() && s.connection.awaiting_response()) {
        s.connection.on_error(at,
                              "the server closed the connection before a complete response, without TLS "
                              "close_notify (a response it ends may be cut short)");
        return;
      }
    }
    s.connection.on_eof(at);
  });
}

void Pool::on_error(ConnectionId id, Instant now, std::string_view why) {
  on_slot_event(id, now, [why](Slot& s, Instant at) { s.connection.on_error(at, why); });
}

}  // namespace prodsm::http
