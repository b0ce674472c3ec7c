// SPDX-License-Identifier: Apache-2.0
// Holds the S2 test server (server.mjs) to the real thing: the official SDK
// (@s2-dev/streamstore) runs against it over unary HTTP/1.1 appends (S2Stream.append,
// and appendSession with forceTransport "fetch") and its view — acks, tails, records read
// back, SeqNumMismatchError, FencingTokenMismatchError, server errors and their
// side-effect flags — must be what S2 gives; raw requests check s2-lite's validation
// answers; scripted faults (before/after commit, dropped connections, delays) behave as
// documented. Run: node --test tests/s2-server/ (ctest: S2Server.SdkAgainstTestServer).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import {
  AppendInput,
  AppendRecord,
  FencingTokenMismatchError,
  S2,
  S2Error,
  SeqNumMismatchError,
} from "@s2-dev/streamstore";

const SERVER = new URL("./server.mjs", import.meta.url).pathname;
const sdkDir = dirname(fileURLToPath(import.meta.resolve("@s2-dev/streamstore")));
const Proto = await import(pathToFileURL(join(sdkDir, "generated/proto/s2.js")).href);
const BASIN = "test-basin-1";

async function startServer(...extra) {
  const child = spawn(process.execPath, [SERVER, "--basin", BASIN, ...extra], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return { child, url, stop: () => child.stdin.end() };
}

const sdk = (url, retry = { maxAttempts: 1 }, token = "any-token") =>
  new S2({ accessToken: token, endpoints: { account: url, basin: url }, retry });
const text = (s) => AppendRecord.string({ body: s });
const bytes = (u8, headers) => AppendRecord.bytes({ body: u8, headers });
const decode = (u8) => Buffer.from(u8).toString("utf8");

let server;
let s2;
let basin;
before(async () => {
  server = await startServer();
  s2 = sdk(server.url);
  basin = s2.basin(BASIN);
});
after(() => server.stop());

/** A raw request to the server (for what the SDK validates before sending). */
async function raw(path, { method = "POST", headers = {}, body } = {}) {
  const res = await fetch(server.url + path, { method, headers: { "s2-basin": BASIN, ...headers }, body });
  const type = res.headers.get("content-type") ?? "";
  const payload = type.includes("json") ? await res.json() : Buffer.from(await res.arrayBuffer());
  return { status: res.status, payload, headers: res.headers };
}

async function fault(...faults) {
  const res = await fetch(`${server.url}/_test/faults`, { method: "POST", body: JSON.stringify({ faults }) });
  assert.equal(res.status, 200);
}

async function rejects(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

describe("streams", () => {
  it("creates a stream once; a second create is resource_already_exists", async () => {
    const info = await basin.streams.create({ stream: "created" });
    assert.equal(info.name, "created");
    const err = await rejects(basin.streams.create({ stream: "created" }));
    assert.ok(err instanceof S2Error);
    assert.equal(err.status, 409);
    assert.equal(err.code, "resource_already_exists");
  });

  it("appends to a missing stream fail with stream_not_found (no auto-create by default)", async () => {
    const err = await rejects(basin.stream("missing").append(AppendInput.create([text("x")])));
    assert.equal(err.status, 404);
    assert.equal(err.code, "stream_not_found");
    assert.equal(err.hasNoSideEffects(), false); // the TS SDK's view: only 429/502/503 codes are side-effect free
  });

  it("a basin with create_stream_on_append creates the stream on its first append", async () => {
    const res = await fetch(`${server.url}/v1/basins`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ basin: "auto-basin-1", config: { create_stream_on_append: true } }),
    });
    assert.equal(res.status, 201);
    const ack = await s2.basin("auto-basin-1").stream("fresh").append(AppendInput.create([text("a"), text("b")]));
    assert.equal(ack.start.seqNum, 0);
    assert.equal(ack.end.seqNum, 2);
  });
});

describe("appends and reads (unary)", () => {
  it("protobuf and JSON appends get the acks S2 gives and read back exactly", async () => {
    await basin.streams.create({ stream: "rw" });
    const stream = basin.stream("rw");
    const binary = Uint8Array.from([0, 1, 2, 255]);
    const a1 = await stream.append(
      AppendInput.create([bytes(binary), bytes(new Uint8Array(), [["h", "v"]]), bytes(Uint8Array.of(7))]),
    ); // bytes records: protobuf on the wire
    assert.deepEqual([a1.start.seqNum, a1.end.seqNum, a1.tail.seqNum], [0, 3, 3]);
    const a2 = await stream.append(AppendInput.create([text("hello"), text("")])); // strings: JSON on the wire
    assert.deepEqual([a2.start.seqNum, a2.end.seqNum, a2.tail.seqNum], [3, 5, 5]);
    assert.ok(a2.start.timestamp.getTime() >= a1.end.timestamp.getTime()); // timestamps never go back
    const tail = await stream.checkTail();
    assert.equal(tail.tail.seqNum, 5);

    const asBytes = await stream.read({ start: { from: { seqNum: 0 } } }, { as: "bytes" }); // protobuf read
    assert.deepEqual(
      asBytes.records.map((r) => [r.seqNum, Buffer.from(r.body).toString("hex")]),
      [[0, "000102ff"], [1, ""], [2, "07"], [3, Buffer.from("hello").toString("hex")], [4, ""]],
    );
    assert.deepEqual(asBytes.records[1].headers.map(([n, v]) => [decode(n), decode(v)]), [["h", "v"]]);
    const asText = await stream.read({ start: { from: { seqNum: 3 } }, stop: { limits: { count: 1 } } }); // JSON read
    assert.deepEqual(asText.records.map((r) => [r.seqNum, r.body]), [[3, "hello"]]);
    const empty = await stream.read({ start: { from: { seqNum: 5 } } });
    assert.equal(empty.records.length, 0);
    const beyond = await rejects(stream.read({ start: { from: { seqNum: 9 } } }));
    assert.equal(beyond.status, 416);
    assert.equal(beyond.tail?.seqNum, 5);
  });

  it("appendSession over fetch (the SDK's unary fallback without HTTP/2) acks every batch in order", async () => {
    // In Node the SDK picks the s2s (HTTP/2) transport whenever the runtime has HTTP/2; the
    // unary fetch transport is taken only when forced (lib/stream/factory.js).
    await basin.streams.create({ stream: "session" });
    const stream = basin.stream("session", { forceTransport: "fetch" });
    const session = await stream.appendSession({}, {});
    const tickets = [];
    for (let i = 0; i < 5; i++) tickets.push(await session.submit(AppendInput.create([text(`r${i}a`), text(`r${i}b`)])));
    const acks = await Promise.all(tickets.map((t) => t.ack()));
    assert.deepEqual(acks.map((a) => [a.start.seqNum, a.end.seqNum]), [[0, 2], [2, 4], [4, 6], [6, 8], [8, 10]]);
    await session.close();
    assert.equal((await stream.checkTail()).tail.seqNum, 10);
  });
});

describe("sequencing and fencing", () => {
  it("match_seq_num: a mismatch is SeqNumMismatchError with the stream's next seq_num", async () => {
    await basin.streams.create({ stream: "seq" });
    const stream = basin.stream("seq");
    await stream.append(AppendInput.create([text("a")], { matchSeqNum: 0 }));
    const err = await rejects(stream.append(AppendInput.create([text("b")], { matchSeqNum: 0 })));
    assert.ok(err instanceof SeqNumMismatchError, String(err));
    assert.equal(err.status, 412);
    assert.equal(err.expectedSeqNum, 1);
    const ok = await stream.append(AppendInput.create([text("b")], { matchSeqNum: 1 }));
    assert.equal(ok.start.seqNum, 1);
  });

  it("a fence command sets the token; the token is checked before match_seq_num; an empty fence clears it", async () => {
    await basin.streams.create({ stream: "fence" });
    const stream = basin.stream("fence");
    await stream.append(AppendInput.create([AppendRecord.fence("writer-1")]));
    const wrong = await rejects(stream.append(AppendInput.create([text("x")], { fencingToken: "writer-2", matchSeqNum: 99 })));
    assert.ok(wrong instanceof FencingTokenMismatchError, String(wrong));
    assert.equal(wrong.expectedFencingToken, "writer-1");
    const noToken = await stream.append(AppendInput.create([text("y")])); // no token: not checked
    assert.equal(noToken.start.seqNum, 1);
    const right = await stream.append(AppendInput.create([text("z")], { fencingToken: "writer-1", matchSeqNum: 2 }));
    assert.equal(right.start.seqNum, 2);
    // The fence applies from the next batch: this batch is checked against writer-1.
    await stream.append(AppendInput.create([AppendRecord.fence(""), text("w")], { fencingToken: "writer-1" }));
    const cleared = await stream.append(AppendInput.create([text("v")], { fencingToken: "" }));
    assert.equal(cleared.start.seqNum, 5);
    const read = await stream.read({ start: { from: { seqNum: 0 } } });
    assert.deepEqual(read.records[0].headers, [["", "fence"]]);
    assert.equal(read.records[0].body, "writer-1");
  });

  it("a trim command hides the records below its trim point", async () => {
    await basin.streams.create({ stream: "trim" });
    const stream = basin.stream("trim");
    await stream.append(AppendInput.create([text("0"), text("1"), text("2"), text("3")]));
    await stream.append(AppendInput.create([AppendRecord.trim(2)]));
    const read = await stream.read({ start: { from: { seqNum: 0 } } });
    assert.deepEqual(read.records.map((r) => r.seqNum), [2, 3, 4]);
  });
});

describe("validation as s2-lite answers it (raw requests)", () => {
  // Invalid inputs the SDK would refuse to build, encoded with its generated codec.
  const encode = (input) => Buffer.from(Proto.AppendInput.toBinary(Proto.AppendInput.create(input)));
  const rec = (body, headers = []) => ({
    body: Buffer.from(body),
    headers: headers.map(([n, v]) => ({ name: Buffer.from(n), value: Buffer.from(v) })),
  });
  const proto = async (name, body) =>
    raw(`/v1/streams/${name}/records`, {
      headers: { "content-type": "application/protobuf", accept: "application/protobuf" },
      body,
    });

  before(async () => basin.streams.create({ stream: "limits" }));

  it("1..1000 records, 1 MiB metered, header and command rules, token length: 422 invalid", async () => {
    const cases = [
      [{ records: [] }, "record batch must not be empty"],
      [{ records: Array.from({ length: 1001 }, () => rec("x")) }, "record batch must not exceed 1000 records"],
      [{ records: [rec("x", [["", "abc"]])] }, "unknown command"],
      [{ records: [rec("x", [["k", ""], ["", "v"]])] }, "invalid header: empty name"],
      [{ records: [rec("t".repeat(37), [["", "fence"]])] }, "invalid `fence` command: fencing token must not exceed 36 bytes in length"],
      [{ records: [rec(Buffer.from([0xff]), [["", "fence"]])] }, "invalid `fence` command: invalid UTF-8"],
      [{ records: [rec(Buffer.alloc(4), [["", "trim"]])] }, "invalid `trim` command: earliest sequence number to trim to was 4 bytes, must be 8"],
      [{ records: [rec("x")], fencingToken: "t".repeat(37) }, "fencing token must not exceed 36 bytes in length"],
      [{ records: [rec(Buffer.alloc(1024 * 1024))] }, "record must have metered size less than 1 MiB"],
      [{ records: [rec(Buffer.alloc(600 * 1024)), rec(Buffer.alloc(600 * 1024))] }, "record batch must not exceed a metered size of 1 MiB"],
    ];
    const tail = (await basin.stream("limits").checkTail()).tail.seqNum;
    for (const [input, message] of cases) {
      const r = await proto("limits", encode(input));
      assert.equal(r.status, 422, message);
      assert.deepEqual(r.payload, { code: "invalid", message });
    }
    assert.equal((await basin.stream("limits").checkTail()).tail.seqNum, tail); // nothing appended
    // At the limits exactly: accepted (1000 records; 1 MiB metered in one record).
    assert.equal((await proto("limits", encode({ records: Array.from({ length: 1000 }, () => rec("")) }))).status, 200);
    assert.equal((await proto("limits", encode({ records: [rec(Buffer.alloc(1024 * 1024 - 8))] }))).status, 200);
    const bad = await proto("limits", Buffer.from("ff", "hex"));
    assert.equal(bad.status, 400);
    assert.equal(bad.payload.code, "bad_proto");
  });

  it("the basin header is required and checked first; JSON needs its content type", async () => {
    const missing = await fetch(`${server.url}/v1/streams/limits/records`, { method: "POST", body: "{}" });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { code: "bad_header", message: "Missing header `s2-basin`" });
    const noType = await raw("/v1/streams/limits/records", { body: '{"records":[{"body":"x"}]}' });
    assert.equal(noType.status, 400);
    assert.equal(noType.payload.code, "bad_json");
    const base64 = await raw("/v1/streams/limits/records", {
      headers: { "content-type": "application/json", "s2-format": "base64" },
      body: JSON.stringify({ records: [{ body: Buffer.from([1, 2, 3]).toString("base64") }] }),
    });
    assert.equal(base64.status, 200);
    assert.equal(base64.payload.end.seq_num - base64.payload.start.seq_num, 1);
  });

  it("an access token can be required (401 authn)", async () => {
    const guarded = await startServer("--access-token", "secret");
    try {
      const bad = await rejects(sdk(guarded.url, { maxAttempts: 1 }, "wrong").basin(BASIN).streams.create({ stream: "s" }));
      assert.equal(bad.status, 401);
      const good = await sdk(guarded.url, { maxAttempts: 1 }, "secret").basin(BASIN).streams.create({ stream: "s" });
      assert.equal(good.name, "s");
    } finally {
      guarded.stop();
    }
  });
});

describe("scripted faults", () => {
  before(async () => basin.streams.create({ stream: "faults" }));
  const stream = () => basin.stream("faults");
  const tailOf = async () => (await stream().checkTail()).tail.seqNum;

  it("error before commit: the SDK sees the server's error, nothing is appended", async () => {
    const before_ = await tailOf();
    await fault({ kind: "error_before_commit", status: 503, code: "server_draining", stream: "faults" });
    const err = await rejects(stream().append(AppendInput.create([text("x")])));
    assert.equal(err.status, 503);
    assert.equal(err.code, "server_draining");
    assert.equal(err.hasNoSideEffects(), true);
    assert.equal(await tailOf(), before_);
  });

  it("error after commit: the SDK sees an error, yet the batch was appended", async () => {
    const before_ = await tailOf();
    await fault({ kind: "error_after_commit", stream: "faults" });
    const err = await rejects(stream().append(AppendInput.create([text("x"), text("y")])));
    assert.equal(err.status, 500);
    assert.equal(err.code, "other");
    assert.equal(err.hasNoSideEffects(), false);
    assert.equal(await tailOf(), before_ + 2);
  });

  it("dropped connections before and after commit", async () => {
    const t0 = await tailOf();
    await fault({ kind: "drop_before_commit", stream: "faults" });
    const e1 = await rejects(stream().append(AppendInput.create([text("x")])));
    assert.ok(e1 instanceof S2Error);
    assert.equal(await tailOf(), t0);
    await fault({ kind: "drop_after_commit", stream: "faults" });
    const e2 = await rejects(stream().append(AppendInput.create([text("x")])));
    assert.ok(e2 instanceof S2Error);
    assert.equal(await tailOf(), t0 + 1);
  });

  it("a delayed ack arrives after the delay", async () => {
    await fault({ kind: "delay", delay_ms: 300, stream: "faults" });
    const started = Date.now();
    const ack = await stream().append(AppendInput.create([text("slow")]));
    assert.ok(Date.now() - started >= 290);
    assert.equal(ack.end.seqNum - ack.start.seqNum, 1);
  });

  it("pipelined appends on one connection are handled one at a time, in order, as s2-lite's hyper does", async () => {
    // node:http runs pipelined handlers concurrently: a delayed first append was sequenced
    // after the second, which then failed its match_seq_num (a 412 S2 never gives).
    const next = await tailOf();
    await fault({ kind: "delay", delay_ms: 300, stream: "faults" });
    const { hostname: host, port } = new URL(server.url);
    const request = (seq, body, last) => {
      const json = JSON.stringify({ records: [{ body }], match_seq_num: seq });
      return (
        `POST /v1/streams/faults/records HTTP/1.1\r\nHost: ${host}\r\ns2-basin: ${BASIN}\r\n` +
        (last ? "Connection: close\r\n" : "") +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
      );
    };
    const answers = await new Promise((resolve, reject) => {
      const socket = connect(Number(port), host, () =>
        socket.write(request(next, "p1", false) + request(next + 1, "p2", true)),
      );
      let got = "";
      socket.on("data", (d) => (got += d));
      socket.on("end", () => resolve(got)); // the server closes after the second answer
      socket.on("error", reject);
      setTimeout(() => reject(new Error(`no two answers in 5 s: ${got}`)), 5000).unref();
    });
    const statuses = [...answers.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => Number(m[1]));
    assert.deepEqual(statuses, [200, 200], answers);
    const read = await stream().read({ start: { from: { seqNum: next } } });
    assert.deepEqual(read.records.map((r) => r.body), ["p1", "p2"]);
  });

  it("the SDK's retry of an applied batch with match_seq_num meets seq_num_mismatch (E3 after an ambiguous resend)", async () => {
    const retrying = sdk(server.url, { maxAttempts: 3, minBaseDelayMillis: 1, maxBaseDelayMillis: 2 }).basin(BASIN);
    const next = await tailOf();
    await fault({ kind: "error_after_commit", stream: "faults" });
    const err = await rejects(retrying.stream("faults").append(AppendInput.create([text("once")], { matchSeqNum: next })));
    assert.ok(err instanceof SeqNumMismatchError, String(err));
    assert.equal(err.expectedSeqNum, next + 1); // the first attempt was appended
    // A retryable error before commit is retried and appended once.
    await fault({ kind: "error_before_commit", stream: "faults" });
    const ack = await retrying.stream("faults").append(AppendInput.create([text("twice?")], { matchSeqNum: next + 1 }));
    assert.equal(ack.start.seqNum, next + 1);
    assert.equal(await tailOf(), next + 2);
    const counts = await (await fetch(`${server.url}/_test/faults`)).json();
    assert.equal(counts.pending, 0);
    assert.ok(counts.injected.error_after_commit >= 2);
  });
});
