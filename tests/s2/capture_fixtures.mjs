#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Captures golden fixtures from the official S2 TypeScript SDK (@s2-dev/streamstore, the
// version pinned in package.json) for prodsm's S2 codec tests (tests/s2/test_golden.cpp):
//
//  - append_<case>.bin: the exact request body the SDK sends for an append — captured on
//    the wire: the SDK's own S2Stream.append (protobuf path) against a local capturing
//    server — for batches of several records, empty bodies, binary bytes, headers,
//    timestamps, match_seq_num, fencing tokens, and the fence and trim commands;
//  - ack_<case>.bin: AppendAck messages encoded by the SDK's generated protobuf codec
//    (dist/esm/generated/proto/s2.js, AppendAck.toBinary), which the capturing server
//    also answered with (and the SDK decoded: its view is recorded too);
//  - fixtures.json: every case's input (hex), the request line and headers the SDK sent,
//    and each ack's fields (decimal strings: they may exceed 2^53).
//
// Run once (the output is committed): node tests/s2/capture_fixtures.mjs [outdir]
// (default tests/s2/data). Listens on 127.0.0.1 only; exits when done.
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { AppendInput, AppendRecord, S2 } from "@s2-dev/streamstore";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] ?? join(here, "data");
const sdkDir = dirname(fileURLToPath(import.meta.resolve("@s2-dev/streamstore")));
const Proto = await import(pathToFileURL(join(sdkDir, "generated/proto/s2.js")).href);
const sdkVersion = (await import(pathToFileURL(join(sdkDir, "../../package.json")).href, { with: { type: "json" } }))
  .default.version;

const hex = (u8) => Buffer.from(u8).toString("hex");
const bytes = (s) => new TextEncoder().encode(s);
const range = (n, f) => Array.from({ length: n }, (_, i) => f(i));

// ---- the cases: what a producer may send -------------------------------------------
// Each record: { body: Uint8Array, headers?: [[Uint8Array, Uint8Array]], timestamp?: number }
// or a command record made by the SDK's own helpers (fence/trim).
const allBytes = Uint8Array.from(range(256, (i) => i));
const cases = [
  { name: "one_record_match2", records: [{ body: Uint8Array.from([0, 1, 2, 0xff]) }], matchSeqNum: 2 },
  { name: "three_records", records: ["a", "bc", "def"].map((s) => ({ body: bytes(s) })) },
  { name: "empty_body", records: [{ body: new Uint8Array() }] },
  { name: "empty_and_nonempty", records: ["", "x", ""].map((s) => ({ body: bytes(s) })) },
  { name: "binary_bytes", records: [{ body: allBytes }, { body: allBytes.slice().reverse() }] },
  { name: "long_record", records: [{ body: Uint8Array.from(range(20000, (i) => (i * 7) & 0xff)) }] },
  { name: "match_seq_num_zero", records: [{ body: bytes("r") }], matchSeqNum: 0 },
  { name: "match_seq_num_large", records: [{ body: bytes("r") }], matchSeqNum: Number.MAX_SAFE_INTEGER },
  { name: "fencing_token", records: [{ body: bytes("r") }], fencingToken: "tok-1" },
  { name: "fencing_token_empty", records: [{ body: bytes("r") }], fencingToken: "" },
  { name: "fencing_token_utf8_36", records: [{ body: bytes("r") }], fencingToken: "ü".repeat(18) },
  {
    name: "match_and_token",
    records: range(5, (i) => ({ body: bytes(`record-${i}`) })),
    matchSeqNum: 1234567,
    fencingToken: "writer-7",
  },
  {
    name: "headers",
    records: [
      { body: bytes("{}"), headers: [[bytes("content-type"), bytes("application/json")], [bytes("x"), bytes("y")]] },
      { body: bytes("plain") },
      { body: new Uint8Array(), headers: [[bytes("k"), new Uint8Array()]] },
      { body: Uint8Array.from([0, 255]), headers: [[Uint8Array.from([1, 0, 2]), Uint8Array.from(range(255, (i) => i))]] },
    ],
    matchSeqNum: 9,
  },
  { name: "timestamps", records: [{ body: bytes("a"), timestamp: 1700000000123 }, { body: bytes("b"), timestamp: 0 }] },
  { name: "fence_command", records: ["fence:new-token"] },
  { name: "fence_clear", records: ["fence:"], fencingToken: "old-token" },
  { name: "trim_command", records: ["trim:5"], matchSeqNum: 3 },
  { name: "many_records", records: range(1000, (i) => ({ body: Uint8Array.of(i & 0xff) })), matchSeqNum: 100 },
];

function sdkRecord(r) {
  if (typeof r === "string" && r.startsWith("fence:")) return AppendRecord.fence(r.slice(6));
  if (typeof r === "string" && r.startsWith("trim:")) return AppendRecord.trim(Number(r.slice(5)));
  return AppendRecord.bytes({ body: r.body, headers: r.headers, timestamp: r.timestamp });
}

// The record as the fixture describes it (what prodsm must encode), from the SDK's record.
function describe(record) {
  const toBytes = (v) => (typeof v === "string" ? bytes(v) : (v ?? new Uint8Array()));
  return {
    body_hex: hex(toBytes(record.body)),
    headers: (record.headers ?? []).map(([n, v]) => [hex(toBytes(n)), hex(toBytes(v))]),
    ...(record.timestamp !== undefined ? { timestamp: String(record.timestamp) } : {}),
  };
}

// ---- acks ---------------------------------------------------------------------------
const pos = (seqNum, timestamp) => ({ seqNum: BigInt(seqNum), timestamp: BigInt(timestamp) });
const acks = [
  { name: "simple", ack: { start: pos(0, 1700000000000), end: pos(3, 1700000000005), tail: pos(3, 1700000000005) } },
  { name: "zero", ack: { start: pos(0, 0), end: pos(0, 0), tail: pos(0, 0) } },
  { name: "concurrent_tail", ack: { start: pos(10, 5), end: pos(12, 6), tail: pos(40, 9) } },
  {
    name: "large",
    ack: {
      start: pos(2n ** 63n, 2n ** 64n - 1n),
      end: pos(2n ** 63n + 1000n, 2n ** 64n - 1n),
      tail: pos(2n ** 64n - 1n, 2n ** 64n - 1n),
    },
  },
  { name: "no_tail", ack: { start: pos(7, 100), end: pos(8, 100) } },
];
const ackJson = (a) =>
  Object.fromEntries(
    Object.entries(a).map(([k, p]) => [k, { seq_num: String(p.seqNum), timestamp: String(p.timestamp) }]),
  );

// ---- capture ------------------------------------------------------------------------
const captured = [];
let answer = null; // bytes of the AppendAck the server answers with
const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    captured.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
    res.writeHead(200, { "content-type": "application/protobuf" });
    res.end(Buffer.from(answer));
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { port } = server.address();

const basinName = "golden-basin";
const streamName = "golden stream/ü";
const s2 = new S2({
  accessToken: "test-token",
  endpoints: { account: `http://127.0.0.1:${port}`, basin: `http://127.0.0.1:${port}` },
  retry: { maxAttempts: 1 },
});
const stream = s2.basin(basinName).stream(streamName);

mkdirSync(outDir, { recursive: true });
const fixture = { sdk: "@s2-dev/streamstore", sdk_version: sdkVersion, basin: basinName, stream: streamName, appends: [], acks: [] };

for (const c of cases) {
  const records = c.records.map(sdkRecord);
  const input = AppendInput.create(records, {
    ...(c.matchSeqNum !== undefined ? { matchSeqNum: c.matchSeqNum } : {}),
    ...(c.fencingToken !== undefined ? { fencingToken: c.fencingToken } : {}),
  });
  const count = records.length;
  // The answer starts where the batch asked (its SDK view must stay within 2^53).
  const first = (c.matchSeqNum ?? 0) + count <= Number.MAX_SAFE_INTEGER ? (c.matchSeqNum ?? 0) : 0;
  answer = Proto.AppendAck.toBinary(
    Proto.AppendAck.create({ start: pos(first, 1), end: pos(first + count, 2), tail: pos(first + count, 2) }),
  );
  captured.length = 0;
  const ack = await stream.append(input, { preferProtobuf: true });
  if (captured.length !== 1) throw new Error(`${c.name}: expected one request, saw ${captured.length}`);
  const req = captured[0];
  // Cross-check: the SDK's generated codec decodes what was sent back to the same input.
  const decoded = Proto.AppendInput.fromBinary(req.body);
  if (decoded.records.length !== count) throw new Error(`${c.name}: decoded ${decoded.records.length} records`);
  const file = `append_${c.name}.bin`;
  writeFileSync(join(outDir, file), req.body);
  fixture.appends.push({
    name: c.name,
    file,
    records: records.map(describe),
    ...(c.matchSeqNum !== undefined ? { match_seq_num: String(c.matchSeqNum) } : {}),
    ...(c.fencingToken !== undefined ? { fencing_token: c.fencingToken } : {}),
    request: {
      method: req.method,
      target: req.url,
      content_type: req.headers["content-type"],
      accept: req.headers["accept"],
      authorization: req.headers["authorization"],
      s2_basin: req.headers["s2-basin"],
      content_length: req.headers["content-length"],
    },
    sdk_ack: { start: ack.start.seqNum, end: ack.end.seqNum },
  });
}

for (const a of acks) {
  const message = Proto.AppendAck.create(a.ack);
  const encoded = Proto.AppendAck.toBinary(message);
  const file = `ack_${a.name}.bin`;
  writeFileSync(join(outDir, file), encoded);
  const roundTrip = Proto.AppendAck.fromBinary(encoded);
  fixture.acks.push({
    name: a.name,
    file,
    ...ackJson({ start: roundTrip.start, end: roundTrip.end, ...(roundTrip.tail ? { tail: roundTrip.tail } : {}) }),
  });
}

writeFileSync(join(outDir, "fixtures.json"), JSON.stringify(fixture, null, 1) + "\n");
server.close();
console.log(`wrote ${fixture.appends.length} append and ${fixture.acks.length} ack fixtures to ${outDir} (SDK ${sdkVersion})`);
