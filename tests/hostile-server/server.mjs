#!/usr/bin/env node
// A hostile Durable Streams server for the CLI's hostile-server tests
// (tests/integration/test_cli_hostile_*.cpp). Test-only; node:http, no packages. The
// honest part (streams, offsets, pages, producer rules, the mirror) is in store.mjs.
//
// Usage: node tests/hostile-server/server.mjs --store-dir DIR [--ignore-stdin] [--exit-with-pid P]
//
// Prints one line, its base URL (http://127.0.0.1:PORT), and exits on SIGTERM, SIGINT
// or EOF on stdin (unless --ignore-stdin), and within a second of process P ending
// (--exit-with-pid: a server shared by one ctest run). It stores appends honestly (PUT creates, POST appends with the
// idempotent producer's epoch/seq rules: 200 accepted, 204 duplicate, 403 stale epoch,
// 409 gap; HEAD; catch-up GETs in pages of at most 4 KiB, Stream-Up-To-Date on the
// last) unless the stream's path asks otherwise: the first path segment names a
// misbehaviour (see MODES), e.g. <url>/append-dup/s1 or <url>/read-reset-once/s2;
// "honest" misbehaves in no way. "append-*" modes misbehave on POST only, "read-*"
// modes on GET only, so a test seeds a read-* stream with an honest produce.
//
// What it really stored is written before each answer to DIR/<path with "/" as "~">
// (bytes streams: the bytes; JSON streams: one array text), with DIR/<name>.stats
// ({"get": n, "post": n, "put": n, "head": n}), so tests read it back independently of
// the client under test. GET /_stored/<path> returns the same bytes.
import http from "node:http"
import fs from "node:fs"

import { parseWatchPid, whenProcessEnds } from "../../scripts/watch-pid.mjs"
import { append, isJson, offsetText, page, parseOffset, persist, producerCheck, storedBytes } from "./store.mjs"

const args = process.argv.slice(2)
let storeDir = null
let watchStdin = true
let watchPid = null
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--store-dir") storeDir = args[++i]
  else if (args[i] === "--ignore-stdin") watchStdin = false
  else if (args[i] === "--exit-with-pid") watchPid = parseWatchPid(args[++i], "hostile-server")
  else {
    console.error(`hostile-server: unknown argument ${args[i]}`)
    process.exit(2)
  }
}
if (!storeDir) {
  console.error("hostile-server: --store-dir DIR is required")
  process.exit(2)
}
fs.mkdirSync(storeDir, { recursive: true })

const PAGE = 4096 // honest GETs answer at most this many bytes (whole messages)
const TRICKLE_MS = 2 // read-trickle: one byte per TRICKLE_MS
const HUGE_HEADERS = 1 << 20 // *-bigheaders: bytes of header lines

const streams = new Map() // path -> {contentType, json, messages: [Buffer], size, closed, producers, stats}

const reply = (res, status, headers, body) => {
  res.writeHead(status, headers)
  res.end(body)
}
const text = (res, status, message, extra = {}) =>
  reply(res, status, { "content-type": "text/plain", ...extra }, message)

// ---- raw misbehaviour, written to the socket behind node:http's back -----------------------

/// Writes `bytes` and closes. A pipelined request's response gets its socket only once
/// the responses before it are finished: wait for it, so bytes never overtake them.
function raw(res, bytes) {
  res.persist()
  if (!res.socket) {
    if (res.req.socket.destroyed) return
    return setTimeout(() => raw(res, bytes), 1)
  }
  res.socket.write(bytes)
  res.socket.end()
}
const bigHeaders = () => `X-Filler: ${"f".repeat(HUGE_HEADERS)}\r\n`
const htmlPage = "<!doctype html><html><head><title>Sign in</title></head><body>Please sign in.</body></html>\n"

/// A 200 head of a read response as raw text (version, extra header lines).
const readHead = (version, s, end, upToDate, extra) =>
  `HTTP/${version} 200 OK\r\ncontent-type: ${s.contentType}\r\nStream-Next-Offset: ${offsetText(end)}\r\n` +
  (upToDate ? "Stream-Up-To-Date: true\r\n" : "") +
  extra

/// An endless body of `fill` bytes, written as fast as the client takes it.
function endless(res, fill) {
  const filler = Buffer.alloc(64 * 1024, fill)
  const pump = () => {
    while (!res.destroyed && res.write(filler));
    if (!res.destroyed) res.once("drain", pump)
  }
  pump()
}

/// Raw `bytes`, one per TRICKLE_MS, on a connection kept open afterwards.
function trickle(res, bytes) {
  res.persist()
  if (!res.socket) return setTimeout(() => trickle(res, bytes), 1)
  let i = 0
  const timer = setInterval(() => {
    if (res.socket.destroyed || i >= bytes.length) return clearInterval(timer)
    res.socket.write(bytes.subarray(i, ++i))
  }, TRICKLE_MS)
}

// ---- modes -----------------------------------------------------------------------------------

const MODES = new Set([
  "honest",
  // POST: every producer append answered 204 (a duplicate) with correct echoes; nothing stored.
  "append-dup",
  // POST: stored, but the 200 echoes a wrong Producer-Epoch / Producer-Seq.
  "append-bad-epoch",
  "append-bad-seq",
  // POST: answered with raw garbage / an HTML page (200) / 1 MiB of headers; not stored.
  "append-garbage",
  "append-html",
  "append-bigheaders",
  // POST: the first one is stored and its connection reset before any response.
  "append-reset-once",
  // POST: the first one is stored, half its acknowledgement's head sent, then reset.
  "append-reset-mid-once",
  // POST: the first one is stored and never answered (the connection stays open).
  "append-stall-once",
  // POST: Connection: close after every response / every response in HTTP/1.0.
  "append-close",
  "append-http10",
  // POST: stored; the connection is closed right after every response (a FIN, as a proxy
  // closing an idle keep-alive connection does), without Connection: close.
  "append-close-quietly",
  // POST: acknowledged as appended (200, honest headers) but not stored.
  "append-lost",
  // POST: stored; the acknowledgement's head trickled one byte per TRICKLE_MS.
  "append-trickle",
  // POST: stored; an honest acknowledgement head, then a body that never ends.
  "append-endless",
  // GET: raw garbage / an HTML page (200) / 1 MiB of headers.
  "read-garbage",
  "read-html",
  "read-bigheaders",
  // GET: an endless (chunked) body / a body trickled one byte per TRICKLE_MS / forever.
  "read-endless",
  "read-trickle",
  "read-trickle-forever",
  // GET: half the body, then the connection reset: on the first GET / on every GET.
  "read-reset-once",
  "read-reset",
  // GET: the first response stops after half its body (the connection stays open).
  "read-stall-once",
  // GET: the first Content-Length claims twice the body, and the connection closes.
  "read-long-length-once",
  // GET: Content-Length one byte short of the body (the last byte dropped), offset past it.
  "read-short-length",
  // GET: Connection: close after every response / HTTP/1.0, the body ended by the close.
  "read-close",
  "read-http10",
  // GET: empty bodies with an advancing offset, never up to date.
  "read-empty-forever",
  // GET: data, with Stream-Next-Offset equal to the offset asked for.
  "read-stuck",
  // GET: honest pages without Stream-Up-To-Date (a proxy that drops it); at the end an
  // empty page that does not advance.
  "read-no-up-to-date",
  // GET: the whole rest of the stream in one response (as the reference server does).
  "read-one-response",
])

function onRequest(req, res) {
  const url = new URL(req.url ?? "/", "http://localhost")
  const p = url.pathname
  if (p.startsWith("/_stored/")) {
    const s = streams.get(p.slice("/_stored".length))
    return s ? reply(res, 200, { "content-type": s.contentType }, storedBytes(s)) : text(res, 404, "no such stream")
  }
  const mode = p.split("/")[1] ?? ""
  if (!MODES.has(mode)) return text(res, 400, `unknown mode '${mode}' (the first path segment)`)
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const body = Buffer.concat(chunks)
    const s = streams.get(p)
    if (s) s.stats[req.method.toLowerCase()] = (s.stats[req.method.toLowerCase()] ?? 0) + 1
    // The store's mirror is written before any byte of the answer, so a client that has
    // its answer finds the mirror up to date.
    res.persist = () => {
      const now = streams.get(p)
      if (now) persist(storeDir, p, now)
    }
    const writeHead = res.writeHead.bind(res)
    res.writeHead = (...a) => {
      res.persist()
      return writeHead(...a)
    }
    if (req.method === "PUT") handlePut(req, res, p, s, body)
    else if (req.method === "HEAD") handleHead(res, s)
    else if (req.method === "POST") handlePost(req, res, mode, s, body)
    else if (req.method === "GET") handleGet(req, res, mode, s, url)
    else text(res, 405, "method not allowed")
  })
}

function handlePut(req, res, p, s, body) {
  const ct = req.headers["content-type"] || "application/octet-stream"
  if (s) {
    if (s.contentType.toLowerCase() !== ct.toLowerCase()) return text(res, 409, "different configuration")
    return reply(res, 200, { "content-type": s.contentType, "Stream-Next-Offset": offsetText(s.size) })
  }
  s = { contentType: ct, json: isJson(ct), messages: [], size: 0, closed: false, producers: new Map(), persisted: 0 }
  s.stats = { put: 1, head: 0, post: 0, get: 0, firstPost: true, firstGet: true }
  if (body.length > 0 && !append(s, body)) return text(res, 400, "Invalid JSON")
  streams.set(p, s)
  reply(res, 201, { "content-type": ct, "Stream-Next-Offset": offsetText(s.size) })
}

function handleHead(res, s) {
  if (!s) return text(res, 404, "")
  const h = { "content-type": s.contentType, "Stream-Next-Offset": offsetText(s.size), "cache-control": "no-store" }
  if (s.closed) h["Stream-Closed"] = "true"
  reply(res, 200, h)
}

function handlePost(req, res, mode, s, body) {
  if (!s) return text(res, 404, "Stream not found")
  const first = s.stats.firstPost
  s.stats.firstPost = false
  const id = req.headers["producer-id"]
  const epochText = req.headers["producer-epoch"]
  const seqText = req.headers["producer-seq"]
  const sequenced = id !== undefined
  const epoch = Number(epochText)
  const seq = Number(seqText)
  if (sequenced && !(/^\d+$/.test(epochText ?? "") && /^\d+$/.test(seqText ?? ""))) {
    return text(res, 400, "bad producer headers")
  }
  const closing = req.headers["stream-closed"] === "true"
  if (s.closed) return text(res, 409, "Stream is closed", { "Stream-Closed": "true", "Stream-Next-Offset": offsetText(s.size) })
  if (mode === "append-dup" && sequenced) {
    return reply(res, 204, { "Producer-Epoch": epochText, "Producer-Seq": seqText })
  }
  let check = { status: "accept", commit: () => {} }
  if (sequenced) check = producerCheck(s, id, epoch, seq)
  switch (check.status) {
    case "stale":
      return text(res, 403, "Stale producer epoch", { "Producer-Epoch": String(check.epoch) })
    case "bad-epoch-seq":
      return text(res, 400, "New epoch must start with sequence 0")
    case "duplicate":
      return reply(res, 204, { "Producer-Epoch": epochText, "Producer-Seq": String(check.lastSeq) })
    case "gap":
      return text(res, 409, "Producer sequence gap", {
        "Producer-Expected-Seq": String(check.expected),
        "Producer-Received-Seq": seqText,
      })
  }
  if (body.length === 0 && !closing) return text(res, 400, "Empty body")
  // Answers that are no acknowledgement, before anything is stored: every resend meets
  // the same answer.
  if (mode === "append-garbage") return raw(res, "\x16\x03\x01\x02\x00garbage, not HTTP\r\n\r\n")
  if (mode === "append-html") return reply(res, 200, { "content-type": "text/html" }, htmlPage)
  if (mode === "append-bigheaders") {
    const echo = sequenced ? `Producer-Epoch: ${epochText}\r\nProducer-Seq: ${seqText}\r\n` : ""
    return raw(res, `HTTP/1.1 200 OK\r\nStream-Next-Offset: ${offsetText(s.size)}\r\n${echo}${bigHeaders()}\r\n`)
  }
  if (mode !== "append-lost" && body.length > 0 && !append(s, body)) return text(res, 400, "Invalid JSON")
  check.commit()
  if (closing) s.closed = true
  const end = mode === "append-lost" ? s.size + body.length : s.size
  const h = { "Stream-Next-Offset": offsetText(end) }
  if (sequenced) Object.assign(h, { "Producer-Epoch": epochText, "Producer-Seq": seqText })
  if (closing) h["Stream-Closed"] = "true"
  const status = sequenced && body.length > 0 ? 200 : 204
  const headLines = Object.entries(h)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")
  switch (mode) {
    case "append-bad-epoch":
      h["Producer-Epoch"] = String(epoch + 1)
      break
    case "append-bad-seq":
      h["Producer-Seq"] = String(seq + 1)
      break
    case "append-reset-once":
      if (first) {
        res.persist()
        return res.req.socket.destroy()
      }
      break
    case "append-reset-mid-once":
      if (first) {
        const head = `HTTP/1.1 ${status} OK\r\n${headLines}`
        res.persist()
        res.req.socket.write(head.slice(0, Math.floor(head.length / 2)))
        return setTimeout(() => res.req.socket.destroy(), 20)
      }
      break
    case "append-stall-once":
      if (first) return res.persist() // never answered; the connection stays open
      break
    case "append-close":
      h.Connection = "close"
      break
    case "append-http10":
      return raw(res, `HTTP/1.0 ${status} OK\r\n${headLines}Content-Length: 0\r\n\r\n`)
    case "append-close-quietly":
      return raw(res, `HTTP/1.1 ${status} OK\r\n${headLines}Content-Length: 0\r\n\r\n`)
    case "append-trickle":
      return trickle(res, Buffer.from(`HTTP/1.1 ${status} OK\r\n${headLines}Content-Length: 0\r\n\r\n`))
    case "append-endless": {
      res.writeHead(status, h)
      return endless(res, "x")
    }
  }
  reply(res, status, h)
}

function handleGet(req, res, mode, s, url) {
  if (!s) return text(res, 404, "Stream not found")
  const first = s.stats.firstGet
  s.stats.firstGet = false
  const at = parseOffset(url.searchParams.get("offset") ?? undefined)
  if (at === null) return text(res, 400, "Invalid offset format")
  if (mode === "read-empty-forever") {
    const next = offsetText(at + 1) // advances, past the end too, forever
    return reply(res, 200, { "content-type": s.contentType, "Stream-Next-Offset": next }, s.json ? "[]" : "")
  }
  if (at > s.size) return text(res, 400, "Offset beyond the stream")
  const limit = mode === "read-one-response" ? Infinity : PAGE
  const { data, end, upToDate } = page(s, at, limit)
  const h = { "content-type": s.contentType, "Stream-Next-Offset": offsetText(end), "cache-control": "no-store" }
  if (upToDate) h["Stream-Up-To-Date"] = "true"
  if (upToDate && s.closed) h["Stream-Closed"] = "true"
  const half = data.subarray(0, Math.floor(data.length / 2))
  switch (mode) {
    case "read-garbage":
      return raw(res, "SSH-2.0-OpenSSH_9.2\r\n\x00\x01\x02 garbage\r\n\r\n")
    case "read-html":
      return reply(res, 200, { "content-type": "text/html" }, htmlPage)
    case "read-bigheaders":
      return raw(res, readHead("1.1", s, end, upToDate, `${bigHeaders()}Content-Length: ${data.length}\r\n\r\n`))
    case "read-endless": {
      res.writeHead(200, { ...h, "Stream-Up-To-Date": "true" })
      if (s.json) res.write("[")
      return endless(res, s.json ? " " : "x")
    }
    case "read-trickle":
    case "read-trickle-forever": {
      res.writeHead(200, mode === "read-trickle" ? { ...h, "content-length": data.length } : h)
      let i = 0
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer)
        if (mode === "read-trickle" && i >= data.length) {
          clearInterval(timer)
          return res.end()
        }
        res.write(mode === "read-trickle" ? data.subarray(i, i + 1) : s.json ? " " : "x")
        i++
      }, TRICKLE_MS)
      return
    }
    case "read-reset-once":
    case "read-reset":
      if (mode === "read-reset" || first) {
        res.writeHead(200, { ...h, "content-length": data.length })
        res.write(half)
        return setTimeout(() => res.socket?.destroy(), 20)
      }
      break
    case "read-stall-once":
      if (first) {
        res.writeHead(200, { ...h, "content-length": data.length })
        return res.write(half) // never finished; the connection stays open
      }
      break
    case "read-long-length-once":
      if (first) {
        const head = readHead("1.1", s, end, upToDate, `Content-Length: ${data.length * 2}\r\n\r\n`)
        return raw(res, Buffer.concat([Buffer.from(head), data]))
      }
      break
    case "read-short-length":
      return raw(
        res,
        Buffer.concat([
          Buffer.from(readHead("1.1", s, end, upToDate, `Content-Length: ${Math.max(0, data.length - 1)}\r\n\r\n`)),
          data,
        ]),
      )
    case "read-close":
      h.Connection = "close"
      break
    case "read-http10":
      return raw(res, Buffer.concat([Buffer.from(readHead("1.0", s, end, upToDate, "\r\n")), data]))
    case "read-no-up-to-date":
      delete h["Stream-Up-To-Date"]
      break
    case "read-stuck":
      delete h["Stream-Up-To-Date"]
      h["Stream-Next-Offset"] = url.searchParams.get("offset") ?? "-1" // the offset asked for, as sent
      break
  }
  reply(res, 200, h, data)
}

const server = http.createServer({ maxHeaderSize: 64 * 1024 }, onRequest)
server.keepAliveTimeout = 60_000
const stop = () => {
  server.closeAllConnections?.()
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
if (watchStdin) {
  process.stdin.on("data", () => {})
  process.stdin.on("end", stop)
  process.stdin.on("error", stop)
  process.stdin.resume()
}
if (watchPid !== null) whenProcessEnds(watchPid, stop)
process.stdout.on("error", () => {})
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}\n`)
})
