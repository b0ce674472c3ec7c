#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// A faithful S2 test server (test-only, node:http, HTTP/1.1): the unary data plane of
// s2-lite (s2-streamstore/s2, lite/), in memory, with scripted faults.
//
// Usage: node tests/s2-server/server.mjs [--port N] [--host H] [--ignore-stdin]
//                                        [--access-token T] [--basin NAME]...
//                                        [--create-stream-on-append]
//   --port N          listen port (default 0 = a free port)
//   --host H          listen host (default 127.0.0.1)
//   --ignore-stdin    do not exit when stdin closes (stop it with SIGTERM)
//   --access-token T  require `Authorization: Bearer T` (401 authn otherwise); without it
//                     any token or none is accepted, as s2-lite does
//   --basin NAME      create basin NAME at start (like s2-lite's --init-file); repeatable
//   --create-stream-on-append
//                     those basins create a stream on its first append (basin config
//                     create_stream_on_append; s2-lite's default is false)
//
// Prints exactly one line to stdout, the endpoint (e.g. http://127.0.0.1:40123); the API
// is under /v1 and basin-scoped requests name the basin in an `s2-basin` header, as on
// s2-lite. Exits 0 on SIGTERM, SIGINT or EOF on stdin.
//
// What it implements, following s2-lite (sources in docs/s2-protocol.md):
//  - POST /v1/basins, PUT|DELETE /v1/basins/{basin}, GET /v1/basins
//  - POST /v1/streams, PUT|DELETE /v1/streams/{stream}, GET /v1/streams
//  - POST /v1/streams/{stream}/records: unary append, protobuf AppendInput
//    (Content-Type application/protobuf or application/x-protobuf) or JSON (any other
//    type falls back to JSON; `s2-format: raw|base64`); the answer is a protobuf or JSON
//    AppendAck by Accept (default JSON). Checks as s2-lite: 1..1000 records, 1 MiB metered
//    per batch and per record, header rules and command records (fence: UTF-8 token <= 36
//    bytes; trim: 8-byte big-endian seq_num), fencing token <= 36 bytes; then the fencing
//    token before match_seq_num (412 {"fencing_token_mismatch": current} /
//    {"seq_num_mismatch": tail}); timestamps client-preferred, capped at now, monotonic;
//    fence and trim commands applied after the batch is sequenced.
//  - GET /v1/streams/{stream}/records?seq_num|timestamp|tail_offset&count&bytes&clamp:
//    unary read (protobuf ReadBatch or JSON by Accept); beyond the tail 416 {"tail": ...}
//    unless clamp; records below the trim point are gone. No long poll, SSE or s2s.
//  - GET /v1/streams/{stream}/records/tail: {"tail": {"seq_num", "timestamp"}}.
//  - Errors are JSON {"code", "message"} with the status of the code (s2
//    api/src/v1/error.rs), as s2-lite's handlers/v1/error.rs writes them.
//
// Scripted faults for appends (test control, not S2):
//   POST /_test/faults {"faults": [F, ...]} queues faults; each append (optionally only to
//     F.stream) takes the next one: F = {"kind": K, "stream"?: name, "count"?: n,
//     "status"?: s, "code"?: c, "message"?: m, "retry_after_ms"?: ms, "delay_ms"?: ms}
//     with K one of
//       "error_before_commit"  answer the error, append nothing (default 503 unavailable)
//       "error_after_commit"   append, then answer the error (default 500 other)
//       "drop_before_commit"   close the connection, append nothing
//       "drop_after_commit"    append, then close the connection without answering
//       "delay"                wait delay_ms, then append and answer normally
//   POST /_test/faults {"mix": {"probability": p, "faults": [F, ...], "seed": s}} makes each
//     append fail with probability p, as a fault chosen at random (seeded generator).
//   GET /_test/faults -> {"pending": n, "injected": {kind: count}}; DELETE clears everything.
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// ---- arguments ----------------------------------------------------------------------
const args = process.argv.slice(2);
let port = 0;
let host = "127.0.0.1";
let watchStdin = true;
let requiredToken = null;
let createOnAppend = false;
const initialBasins = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--port") port = Number(args[++i]);
  else if (a === "--host") host = args[++i];
  else if (a === "--ignore-stdin") watchStdin = false;
  else if (a === "--access-token") requiredToken = args[++i];
  else if (a === "--basin") initialBasins.push(args[++i]);
  else if (a === "--create-stream-on-append") createOnAppend = true;
  else {
    console.error(`s2-server: unknown argument ${a}`);
    process.exit(2);
  }
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("s2-server: --port needs an integer 0..65535");
  process.exit(2);
}

// The official SDK's generated protobuf codec (s2.proto): the reference encoding.
const sdkDir = dirname(fileURLToPath(import.meta.resolve("@s2-dev/streamstore")));
const Proto = await import(pathToFileURL(join(sdkDir, "generated/proto/s2.js")).href);

// ---- limits and names (s2 common/src/caps.rs, basin.rs, stream.rs, record/) --------------
const MAX_BATCH_RECORDS = 1000;
const MAX_BATCH_BYTES = 1024 * 1024;
const MAX_FENCING_TOKEN_BYTES = 36;
const MAX_BODY_BYTES = 2 * 1024 * 1024; // axum's default body limit (s2-lite sets none)
const BASIN_RE = /^[a-z0-9][a-z0-9-]{6,46}[a-z0-9]$/;

// The status of every error code (s2 api/src/v1/error.rs ErrorCode::status).
const STATUS = {
  access_token_not_found: 404, authn: 401, bad_frame: 400, bad_header: 400, bad_json: 400, bad_path: 400,
  bad_proto: 400, bad_query: 400, basin_deletion_pending: 409, basin_not_found: 404, client_hangup: 499,
  decryption_failed: 400, hot_server: 502, invalid: 422, not_implemented: 501, other: 500,
  permission_denied: 403, quota_exhausted: 403, rate_limited: 429, request_timeout: 408,
  resource_already_exists: 409, server_draining: 503, storage: 500, stream_deletion_pending: 409,
  stream_not_found: 404, transaction_conflict: 409, unavailable: 503, upstream_timeout: 504,
};

class S2Fail extends Error {
  constructor(code, message, status = STATUS[code] ?? 500, body = undefined) {
    super(message);
    this.code = code;
    this.status = status;
    this.body = body; // a non-standard JSON body (412, 416)
  }
}
const fail = (code, message) => new S2Fail(code, message);

// JSON with u64 values (BigInt) written as plain numbers.
function json(value) {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `__u64__${v}` : v)).replace(
    /"__u64__(\d+)"/g,
    "$1",
  );
}

const now = () => BigInt(Date.now());
const rfc3339 = (ms) => new Date(Number(ms)).toISOString().replace(/\.\d{3}Z$/, "Z");
const utf8 = new TextDecoder("utf-8", { fatal: true });
const isUtf8 = (bytes) => {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
};

// ---- state --------------------------------------------------------------------------
// basin name -> { config: {create_stream_on_append, create_stream_on_read}, created_at, streams }
// stream: { created_at, records: [{seq_num, timestamp, headers: [[Buffer, Buffer]], body: Buffer, metered}],
//           next: BigInt (tail seq_num), last_ts: BigInt, fencing_token: "", trim_point: BigInt }
const basins = new Map();
function newBasin(config) {
  return {
    config: { create_stream_on_append: !!config?.create_stream_on_append, create_stream_on_read: !!config?.create_stream_on_read },
    created_at: now(),
    streams: new Map(),
  };
}
function newStream() {
  return { created_at: now(), records: [], next: 0n, last_ts: 0n, fencing_token: "", trim_point: 0n };
}
for (const b of initialBasins) {
  if (!BASIN_RE.test(b)) {
    console.error(`s2-server: invalid basin name ${b}`);
    process.exit(2);
  }
  basins.set(b, newBasin({ create_stream_on_append: createOnAppend }));
}
const basinInfo = (name, b) => ({ name, location: null, created_at: rfc3339(b.created_at), deleted_at: null, state: "active" });
const streamInfo = (name, s) => ({ name, created_at: rfc3339(s.created_at), deleted_at: null, cipher: null });

// ---- faults -------------------------------------------------------------------------
const faults = { queue: [], mix: null, injected: {} };
function generator(seed) {
  let a = seed >>> 0; // mulberry32
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function takeFault(stream) {
  const i = faults.queue.findIndex((f) => f.stream === undefined || f.stream === stream);
  if (i >= 0) {
    const f = faults.queue[i];
    if (!(f.remaining > 1)) faults.queue.splice(i, 1);
    else f.remaining--;
    return f;
  }
  const m = faults.mix;
  if (m && m.random() < m.probability) return m.faults[Math.floor(m.random() * m.faults.length)];
  return null;
}
const KINDS = ["error_before_commit", "error_after_commit", "drop_before_commit", "drop_after_commit", "delay"];
function validFault(f) {
  return f && typeof f === "object" && KINDS.includes(f.kind) && (f.count === undefined || Number.isInteger(f.count));
}

// ---- records ------------------------------------------------------------------------
// One record as s2 common/src/record/mod.rs Record::try_from_parts sees it; returns the
// metered size and the command, or throws `invalid`.
function checkRecord(headers, body) {
  if (headers.length === 1 && headers[0][0].length === 0) {
    const op = headers[0][1].toString("latin1");
    if (op === "fence") {
      if (!isUtf8(body)) throw fail("invalid", "invalid `fence` command: invalid UTF-8");
      if (body.length > MAX_FENCING_TOKEN_BYTES) {
        throw fail("invalid", "invalid `fence` command: fencing token must not exceed 36 bytes in length");
      }
      return { metered: 8 + 2 + 5 + body.length, command: { fence: utf8.decode(body) } };
    }
    if (op === "trim") {
      if (body.length !== 8) {
        throw fail("invalid", `invalid \`trim\` command: earliest sequence number to trim to was ${body.length} bytes, must be 8`);
      }
      return { metered: 8 + 2 + 4 + 8, command: { trim: body.readBigUInt64BE(0) } };
    }
    throw fail("invalid", "unknown command");
  }
  let metered = 8 + body.length;
  for (const [name, value] of headers) {
    if (name.length === 0) throw fail("invalid", "invalid header: empty name");
    metered += 2 + name.length + value.length;
  }
  return { metered, command: null };
}

// AppendInput (decoded) -> validated batch, as s2 api/src/v1/stream/proto/mod.rs and
// common/src/stream.rs check it.
function validateInput(records, matchSeqNum, fencingToken) {
  const checked = records.map((r) => {
    const c = checkRecord(r.headers, r.body);
    if (c.metered > MAX_BATCH_BYTES) throw fail("invalid", "record must have metered size less than 1 MiB");
    return { ...r, ...c };
  });
  if (checked.length === 0) throw fail("invalid", "record batch must not be empty");
  if (checked.length > MAX_BATCH_RECORDS) throw fail("invalid", "record batch must not exceed 1000 records");
  if (checked.reduce((n, r) => n + r.metered, 0) > MAX_BATCH_BYTES) {
    throw fail("invalid", "record batch must not exceed a metered size of 1 MiB");
  }
  if (fencingToken !== undefined && fencingToken !== null && Buffer.byteLength(fencingToken, "utf8") > MAX_FENCING_TOKEN_BYTES) {
    throw fail("invalid", "fencing token must not exceed 36 bytes in length");
  }
  return { records: checked, matchSeqNum, fencingToken: fencingToken ?? undefined };
}

function decodeProtoInput(body) {
  let input;
  try {
    input = Proto.AppendInput.fromBinary(body);
  } catch (err) {
    throw fail("bad_proto", `Invalid protobuf body: ${err.message}`);
  }
  return validateInput(
    input.records.map((r) => ({
      timestamp: r.timestamp,
      headers: r.headers.map((h) => [Buffer.from(h.name), Buffer.from(h.value)]),
      body: Buffer.from(r.body),
    })),
    input.matchSeqNum,
    input.fencingToken,
  );
}

function formatOf(req) {
  const f = req.headers["s2-format"];
  if (f === undefined) return "raw";
  const v = String(f).trim();
  if (v === "raw" || v === "json") return "raw";
  if (v === "base64" || v === "json-binsafe") return "base64";
  throw fail("bad_header", `Invalid header \`s2-format\`: ${f}`);
}
function fromFormat(format, s) {
  if (typeof s !== "string") throw fail("bad_json", "invalid type: expected a string");
  if (format === "raw") return Buffer.from(s, "utf8");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw fail("invalid", "invalid Base64 encoding");
  return Buffer.from(s, "base64");
}
const toFormat = (format, bytes) => (format === "raw" ? bytes.toString("utf8") : bytes.toString("base64"));

// A JSON number as u64 (JSON.parse has already rounded values above 2^53).
function u64(v) {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw fail("bad_json", `invalid value: ${v}, expected u64`);
  return BigInt(v);
}

function decodeJsonInput(req, body) {
  if (!isJsonMime(req.headers["content-type"])) {
    throw fail("bad_json", "Expected request with `Content-Type: application/json`");
  }
  const format = formatOf(req);
  let input;
  try {
    input = JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw fail("bad_json", err.message);
  }
  if (!input || typeof input !== "object" || !Array.isArray(input.records)) {
    throw fail("bad_json", "missing field `records`");
  }
  const records = input.records.map((r) => {
    if (!r || typeof r !== "object") throw fail("bad_json", "invalid type: expected a record object");
    const headers = (r.headers ?? []).map((h) => {
      if (!Array.isArray(h) || h.length !== 2) throw fail("bad_json", "invalid type: expected a [name, value] pair");
      return [fromFormat(format, h[0]), fromFormat(format, h[1])];
    });
    return {
      timestamp: r.timestamp === undefined || r.timestamp === null ? undefined : u64(r.timestamp),
      headers,
      body: r.body === undefined ? Buffer.alloc(0) : fromFormat(format, r.body),
    };
  });
  const match = input.match_seq_num === undefined || input.match_seq_num === null ? undefined : u64(input.match_seq_num);
  const token = input.fencing_token ?? undefined;
  if (token !== undefined && typeof token !== "string") throw fail("bad_json", "invalid type: fencing_token, expected a string");
  return validateInput(records, match, token);
}

// ---- media types (s2 api/src/mime.rs) -----------------------------------------------
function firstMime(value) {
  if (value === undefined) return null;
  const first = String(value).split(",")[0].trim().toLowerCase();
  const m = first.match(/^([a-z0-9!#$&^_.+-]+)\/([a-z0-9!#$&^_.+-]+)\s*(;.*)?$/);
  return m ? { type: m[1], subtype: m[2] } : null;
}
function isJsonMime(value) {
  const m = firstMime(value);
  return !!m && m.type === "application" && (m.subtype === "json" || m.subtype.endsWith("+json"));
}
function isProtoMime(value) {
  const m = firstMime(value);
  return !!m && m.type === "application" && (m.subtype === "protobuf" || m.subtype === "x-protobuf");
}
const mimeKind = (value) => (isJsonMime(value) ? "json" : isProtoMime(value) ? "proto" : null);

// ---- the append ---------------------------------------------------------------------
function sequence(stream, input) {
  // s2 lite/src/backend/streamer.rs sequence_records: the fencing token first, then match_seq_num.
  if (input.fencingToken !== undefined && input.fencingToken !== stream.fencing_token) {
    throw new S2Fail("condition", "fencing token mismatch", 412, { fencing_token_mismatch: stream.fencing_token });
  }
  if (input.matchSeqNum !== undefined && BigInt(input.matchSeqNum) !== stream.next) {
    throw new S2Fail("condition", "sequence number mismatch", 412, { seq_num_mismatch: stream.next });
  }
}

function commit(stream, input) {
  const arrival = now();
  let maxTs = stream.last_ts;
  const first = stream.next;
  const positions = [];
  input.records.forEach((r, i) => {
    let ts = r.timestamp === undefined ? arrival : BigInt(r.timestamp); // ClientPrefer
    if (ts > arrival) ts = arrival; // capped (uncapped = false)
    if (ts < maxTs) ts = maxTs;
    else maxTs = ts;
    const seq = first + BigInt(i);
    stream.records.push({ seq_num: seq, timestamp: ts, headers: r.headers, body: r.body, metered: r.metered });
    positions.push({ seqNum: seq, timestamp: ts });
    if (r.command?.fence !== undefined) stream.fencing_token = r.command.fence;
    if (r.command?.trim !== undefined) {
      const point = r.command.trim < seq + 1n ? r.command.trim : seq + 1n;
      if (point > stream.trim_point) stream.trim_point = point;
    }
  });
  stream.next = first + BigInt(input.records.length);
  stream.last_ts = maxTs;
  const start = positions[0];
  const end = { seqNum: stream.next, timestamp: positions[positions.length - 1].timestamp };
  return { start, end, tail: { seqNum: stream.next, timestamp: stream.last_ts } };
}

function ackBody(ack, kind) {
  if (kind === "proto") {
    return { type: "application/protobuf", body: Buffer.from(Proto.AppendAck.toBinary(Proto.AppendAck.create(ack))) };
  }
  const p = (x) => ({ seq_num: x.seqNum, timestamp: x.timestamp });
  return { type: "application/json", body: json({ start: p(ack.start), end: p(ack.end), tail: p(ack.tail) }) };
}

// ---- HTTP ---------------------------------------------------------------------------
function send(res, status, type, body, extra = {}) {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { "content-type": type, ...extra });
  res.end(body);
}
function sendError(res, e, extra = {}) {
  if (e instanceof S2Fail) {
    const body = e.body !== undefined ? json(e.body) : json({ code: e.code, message: e.message });
    send(res, e.status, "application/json", body, extra);
  } else {
    console.error("s2-server: internal error:", e);
    send(res, 500, "application/json", json({ code: "other", message: String(e?.message ?? e) }));
  }
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  let tooLarge = false;
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    else chunks.push(c);
  }
  return { body: Buffer.concat(chunks), tooLarge };
}

function checkAuth(req) {
  if (requiredToken === null) return;
  const auth = req.headers.authorization;
  if (auth !== `Bearer ${requiredToken}`) throw fail("authn", auth ? "invalid access token" : "missing access token");
}

// The s2-basin header, checked (s2-lite extracts it first: before the path and the body).
function basinHeader(req) {
  const name = req.headers["s2-basin"];
  if (name === undefined) throw fail("bad_header", "Missing header `s2-basin`");
  if (!BASIN_RE.test(name)) throw fail("bad_header", `Invalid header \`s2-basin\`: invalid basin name ${name}`);
  return name;
}

function basinOf(req) {
  const name = basinHeader(req);
  const basin = basins.get(name);
  if (!basin) throw fail("basin_not_found", `basin \`${name}\` not found`);
  return { name, basin };
}

function streamName(raw) {
  let name;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw fail("bad_path", "Invalid URL: cannot decode the stream name");
  }
  if (name.length === 0) throw fail("bad_path", "stream name must not be empty");
  if (name === "." || name === "..") throw fail("bad_path", 'stream name must not be "." or ".."');
  if (Buffer.byteLength(name, "utf8") > 512) throw fail("bad_path", "stream name must not exceed 512 bytes in length");
  return name;
}

function streamOf(req, raw, autoCreate) {
  const { name: basinName, basin } = basinOf(req);
  const name = streamName(raw);
  let stream = basin.streams.get(name);
  if (!stream && autoCreate(basin.config)) {
    stream = newStream();
    basin.streams.set(name, stream);
  }
  if (!stream) throw fail("stream_not_found", `stream \`${name}\` in basin \`${basinName}\` not found`);
  return { name, stream };
}

async function handleAppend(req, res, rawName) {
  basinHeader(req); // extraction order of s2-lite's AppendArgs: header, path, body
  streamName(rawName);
  const { body, tooLarge } = await readBody(req);
  const contentType = req.headers["content-type"];
  if (firstMime(contentType)?.type === "s2s") throw fail("not_implemented", "append sessions (s2s) are not supported here");
  const requestKind = mimeKind(contentType) ?? "json";
  const responseKind = mimeKind(req.headers.accept) ?? "json";
  if (tooLarge) {
    throw fail(requestKind === "proto" ? "bad_proto" : "bad_json", "Failed to buffer the request body: length limit exceeded");
  }
  const input = requestKind === "proto" ? decodeProtoInput(body) : decodeJsonInput(req, body);
  const { name, stream } = streamOf(req, rawName, (c) => c.create_stream_on_append);

  const fault = takeFault(name);
  if (fault) faults.injected[fault.kind] = (faults.injected[fault.kind] ?? 0) + 1;
  if (fault?.kind === "delay") await new Promise((r) => setTimeout(r, fault.delay_ms ?? 100));
  if (fault?.kind === "drop_before_commit") return req.socket.destroy();
  if (fault?.kind === "error_before_commit") return faultError(res, fault, 503, "unavailable");

  sequence(stream, input);
  const ack = commit(stream, input);

  if (fault?.kind === "drop_after_commit") return req.socket.destroy();
  if (fault?.kind === "error_after_commit") return faultError(res, fault, 500, "other");
  const out = ackBody(ack, responseKind);
  send(res, 200, out.type, out.body);
}

function faultError(res, fault, status, code) {
  const c = fault.code ?? code;
  const extra = fault.retry_after_ms !== undefined ? { "retry-after-ms": String(fault.retry_after_ms) } : {};
  sendError(res, new S2Fail(c, fault.message ?? `injected fault (${fault.kind})`, fault.status ?? STATUS[c] ?? status), extra);
}

function handleRead(req, res, url, rawName) {
  const accept = req.headers.accept;
  if (firstMime(accept)?.subtype === "event-stream" || firstMime(req.headers["content-type"])?.type === "s2s") {
    throw fail("not_implemented", "read sessions (SSE, s2s) are not supported here");
  }
  const format = formatOf(req);
  const { stream } = streamOf(req, rawName, (c) => c.create_stream_on_read);
  const q = url.searchParams;
  const num = (k) => {
    if (!q.has(k)) return undefined;
    const v = q.get(k);
    if (!/^\d+$/.test(v)) throw fail("bad_query", `Failed to deserialize query string: ${k}: invalid digit found in string`);
    return BigInt(v);
  };
  const seqNum = num("seq_num");
  const timestamp = num("timestamp");
  const tailOffset = num("tail_offset");
  const clamp = q.get("clamp") === "true";
  const count = Number(num("count") ?? 1000n);
  const bytes = Number(num("bytes") ?? BigInt(MAX_BATCH_BYTES));
  const given = [seqNum, timestamp, tailOffset].filter((v) => v !== undefined).length;
  if (given > 1) throw fail("invalid", "only one of seq_num, timestamp, or tail_offset can be provided");
  const tail = { seq_num: stream.next, timestamp: stream.last_ts };
  let start;
  if (seqNum !== undefined) {
    if (seqNum > stream.next) {
      if (!clamp) throw new S2Fail("unwritten", "unwritten", 416, { tail });
      start = stream.next;
    } else start = seqNum;
  } else if (timestamp !== undefined) {
    if (timestamp > stream.last_ts && stream.records.length > 0) {
      if (!clamp) throw new S2Fail("unwritten", "unwritten", 416, { tail });
      start = stream.next;
    } else {
      const r = stream.records.find((x) => x.timestamp >= timestamp);
      start = r ? r.seq_num : stream.next;
    }
  } else {
    const off = tailOffset ?? 0n;
    start = stream.next > off ? stream.next - off : 0n;
  }
  if (start < stream.trim_point) start = stream.trim_point;
  const out = [];
  let metered = 0;
  for (const r of stream.records) {
    if (r.seq_num < start) continue;
    if (out.length >= Math.min(count, MAX_BATCH_RECORDS) || metered + r.metered > Math.min(bytes, MAX_BATCH_BYTES)) break;
    out.push(r);
    metered += r.metered;
  }
  const reachedTail = (out.length ? out[out.length - 1].seq_num + 1n : start) === stream.next;
  if (mimeKind(accept) === "proto") {
    const batch = Proto.ReadBatch.create({
      records: out.map((r) => ({
        seqNum: r.seq_num,
        timestamp: r.timestamp,
        headers: r.headers.map(([n, v]) => ({ name: n, value: v })),
        body: r.body,
      })),
      ...(reachedTail ? { tail: { seqNum: tail.seq_num, timestamp: tail.timestamp } } : {}),
    });
    return send(res, 200, "application/protobuf", Buffer.from(Proto.ReadBatch.toBinary(batch)));
  }
  const records = out.map((r) => ({
    seq_num: r.seq_num,
    timestamp: r.timestamp,
    ...(r.headers.length ? { headers: r.headers.map(([n, v]) => [toFormat(format, n), toFormat(format, v)]) } : {}),
    ...(r.body.length ? { body: toFormat(format, r.body) } : {}),
  }));
  send(res, 200, "application/json", json({ records, ...(reachedTail ? { tail } : {}) }));
}

async function jsonBody(req) {
  const { body } = await readBody(req);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw fail("bad_json", err.message);
  }
}

async function handleControl(req, res) {
  if (req.method === "DELETE") {
    faults.queue = [];
    faults.mix = null;
    faults.injected = {};
    return send(res, 200, "application/json", json({ ok: true }));
  }
  if (req.method === "GET") {
    return send(res, 200, "application/json", json({ pending: faults.queue.reduce((n, f) => n + (f.remaining ?? 1), 0), injected: faults.injected }));
  }
  const config = await jsonBody(req).catch(() => null);
  const bad = () => send(res, 400, "application/json", json({ error: "need {faults: [F...]} or {mix: {probability, faults, seed}}" }));
  if (config?.faults) {
    if (!Array.isArray(config.faults) || !config.faults.every(validFault)) return bad();
    for (const f of config.faults) faults.queue.push({ ...f, remaining: f.count ?? 1 });
    return send(res, 200, "application/json", json({ ok: true }));
  }
  if (config?.mix) {
    const m = config.mix;
    if (typeof m.probability !== "number" || !Array.isArray(m.faults) || !m.faults.length || !m.faults.every(validFault)) {
      return bad();
    }
    faults.mix = { probability: m.probability, faults: m.faults, random: generator(Number.isInteger(m.seed) ? m.seed : 1) };
    return send(res, 200, "application/json", json({ ok: true }));
  }
  return bad();
}

async function route(req, res) {
  const url = new URL(req.url ?? "/", "http://localhost");
  const path = url.pathname;
  if (path === "/_test/faults") return handleControl(req, res);
  checkAuth(req);
  const m = path.match(/^\/v1\/(basins|streams)(?:\/([^/]+))?(?:\/(records)(?:\/(tail))?)?\/?$/);
  if (!m) throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 404);
  const [, kind, name, records, tail] = m;
  if (kind === "basins") {
    if (records) throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 404);
    if (!name && req.method === "GET") {
      return send(res, 200, "application/json", json({ basins: [...basins].map(([n, b]) => basinInfo(n, b)), has_more: false }));
    }
    if (!name && req.method === "POST") {
      const body = await jsonBody(req);
      if (!body || typeof body.basin !== "string") throw fail("bad_json", "missing field `basin`");
      if (!BASIN_RE.test(body.basin)) throw fail("bad_json", `invalid basin name: ${body.basin}`);
      if (basins.has(body.basin)) throw fail("resource_already_exists", `basin \`${body.basin}\` already exists`);
      const b = newBasin(body.config);
      basins.set(body.basin, b);
      return send(res, 201, "application/json", json(basinInfo(body.basin, b)), { "s2-provision-result": "created" });
    }
    if (name && req.method === "PUT") {
      const body = await jsonBody(req);
      const existing = basins.get(name);
      if (existing) return send(res, 200, "application/json", json(basinInfo(name, existing)));
      if (!BASIN_RE.test(name)) throw fail("bad_path", `invalid basin name: ${name}`);
      const b = newBasin(body?.config);
      basins.set(name, b);
      return send(res, 201, "application/json", json(basinInfo(name, b)));
    }
    if (name && req.method === "DELETE") {
      if (!basins.delete(name)) throw fail("basin_not_found", `basin \`${name}\` not found`);
      res.writeHead(202);
      return res.end();
    }
    throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 405);
  }
  // streams
  if (!name) {
    const { name: basinName, basin } = basinOf(req);
    if (req.method === "GET") {
      const streams = [...basin.streams].map(([n, s]) => streamInfo(n, s)).sort((a, b) => (a.name < b.name ? -1 : 1));
      return send(res, 200, "application/json", json({ streams, has_more: false }));
    }
    if (req.method === "POST") {
      const body = await jsonBody(req);
      if (!body || typeof body.stream !== "string") throw fail("bad_json", "missing field `stream`");
      const s = streamName(encodeURIComponent(body.stream));
      // ProvisionMode::CreateOnly: the same s2-request-token again is a no-op (201 noop).
      const token = req.headers["s2-request-token"];
      const existing = basin.streams.get(s);
      if (existing && token !== undefined && existing.request_token === token) {
        return send(res, 201, "application/json", json(streamInfo(s, existing)), { "s2-provision-result": "noop" });
      }
      if (existing) {
        throw fail("resource_already_exists", `stream \`${s}\` in basin \`${basinName}\` already exists`);
      }
      const stream = newStream();
      stream.request_token = token;
      basin.streams.set(s, stream);
      return send(res, 201, "application/json", json(streamInfo(s, stream)), { "s2-provision-result": "created" });
    }
    throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 405);
  }
  if (records && tail) {
    if (req.method !== "GET") throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 405);
    const { stream } = streamOf(req, name, (c) => c.create_stream_on_read);
    return send(res, 200, "application/json", json({ tail: { seq_num: stream.next, timestamp: stream.last_ts } }));
  }
  if (records) {
    if (req.method === "POST") return handleAppend(req, res, name);
    if (req.method === "GET") return handleRead(req, res, url, name);
    throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 405);
  }
  const { name: basinName, basin } = basinOf(req);
  const s = streamName(name);
  if (req.method === "PUT") {
    await jsonBody(req);
    const existing = basin.streams.get(s);
    if (existing) return send(res, 200, "application/json", json(streamInfo(s, existing)), { "s2-provision-result": "noop" });
    const stream = newStream();
    basin.streams.set(s, stream);
    return send(res, 201, "application/json", json(streamInfo(s, stream)), { "s2-provision-result": "created" });
  }
  if (req.method === "GET") {
    if (!basin.streams.has(s)) throw fail("stream_not_found", `stream \`${s}\` in basin \`${basinName}\` not found`);
    return send(res, 200, "application/json", json({ storage_class: "express", retention_policy: { age: 604800 } }));
  }
  if (req.method === "DELETE") {
    if (!basin.streams.delete(s)) throw fail("stream_not_found", `stream \`${s}\` in basin \`${basinName}\` not found`);
    res.writeHead(202);
    return res.end();
  }
  throw new S2Fail("bad_path", `no route for ${req.method} ${path}`, 405);
}

// ---- server -------------------------------------------------------------------------
// One request at a time per connection, in arrival order, as s2-lite's HTTP/1.1 server
// (hyper) handles them: node:http would run the handlers of pipelined requests
// concurrently, so an append delayed by a fault (or by reading its body) would be
// sequenced after the one pipelined behind it, a 412 S2 never gives. A request behind one
// whose connection was dropped is not handled at all.
const chains = new WeakMap(); // socket -> the promise of its last request's handling
const server = createServer((req, res) => {
  const socket = req.socket;
  const handle = () => {
    if (socket.destroyed) return undefined;
    return route(req, res).catch((e) => {
      // Drain what the client still sends, so the error can be read on a kept-alive connection.
      req.resume();
      sendError(res, e);
    });
  };
  const chain = (chains.get(socket) ?? Promise.resolve()).then(handle);
  chains.set(socket, chain);
});
server.keepAliveTimeout = 60_000;

let stopping = false;
function shutdown(why) {
  if (stopping) return;
  stopping = true;
  console.error(`s2-server: stopping (${why})`);
  setTimeout(() => process.exit(0), 2000).unref();
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
process.stdout.on("error", () => {});
if (watchStdin) {
  process.stdin.on("data", () => {});
  process.stdin.on("end", () => shutdown("stdin closed"));
  process.stdin.on("error", () => shutdown("stdin error"));
  process.stdin.resume();
}
server.listen(port, host, () => {
  const a = server.address();
  const shown = a.family === "IPv6" ? `[${a.address}]` : a.address;
  process.stdout.write(`http://${shown}:${a.port}\n`);
});
