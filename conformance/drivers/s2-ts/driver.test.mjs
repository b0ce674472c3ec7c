// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the s2-ts conformance driver: spawn it, speak the JSON-lines
// protocol of docs/conformance.md, check every reply. Run: node --test conformance/drivers/s2-ts/
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { after, describe, it } from "node:test";

const DRIVER = new URL("./driver.mjs", import.meta.url).pathname;
const sdkVersion = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.resolve("@s2-dev/streamstore")), "utf8"),
).version;

const b64 = (s) => Buffer.from(s, "utf8").toString("base64");
const text = (b) => Buffer.from(b, "base64").toString("utf8");

/** One driver process; request() writes a line and resolves with the reply line, parsed. */
class Driver {
  constructor() {
    this.child = spawn(process.execPath, [DRIVER], { stdio: ["pipe", "pipe", "pipe"] });
    this.stderr = "";
    this.child.stderr.on("data", (d) => (this.stderr += d));
    this.waiters = [];
    this.lines = [];
    this.rawLines = [];
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      this.rawLines.push(line);
      const w = this.waiters.shift();
      if (w) w(line);
      else this.lines.push(line);
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }
  raw(line) {
    this.child.stdin.write(line + "\n");
    return new Promise((resolve) => {
      if (this.lines.length) resolve(this.lines.shift());
      else this.waiters.push(resolve);
    }).then((l) => JSON.parse(l));
  }
  request(obj) {
    return this.raw(JSON.stringify(obj));
  }
  start(config = {}, protocol = "s2") {
    return this.request({ op: "start", protocol, config });
  }
  submit(s) {
    return this.request({ op: "submit", record_b64: b64(s) });
  }
  advance(ms) {
    return this.request({ op: "advance", ms });
  }
  ack(send, start, end) {
    return this.request({ op: "respond", send, response: { kind: "ack", ack: { start, end } } });
  }
  fail(send, code, extra = {}) {
    return this.request({ op: "respond", send, response: { kind: "fail", error: { code, ...extra } } });
  }
  async stop() {
    const r = await this.request({ op: "stop" });
    assert.equal(await this.exited, 0);
    return r;
  }
  kill() {
    if (this.child.exitCode === null) this.child.kill();
  }
}

const drivers = [];
function driver() {
  const d = new Driver();
  drivers.push(d);
  return d;
}
after(() => drivers.forEach((d) => d.kill()));

const kinds = (reply) => reply.observed.map((o) => o.kind);
const sends = (reply) => reply.observed.filter((o) => o.kind === "send");
const dones = (reply) => reply.observed.filter((o) => o.kind === "done");

describe("s2-ts driver", () => {
  it("hello: who it is and what the SDK can express", async () => {
    const d = driver();
    const h = await d.request({ op: "hello" });
    assert.equal(h.ok, true);
    assert.equal(h.driver, "s2-ts");
    assert.equal(h.sdk, `@s2-dev/streamstore@${sdkVersion}`);
    assert.deepEqual(h.protocols, ["s2"]);
    assert.deepEqual(h.capabilities, {
      per_record_completions: true,
      flush_barrier: true,
      abort: true,
      synchronous_rejection: true,
      virtual_time: true,
      classifies_certainty: false,
    });
    assert.equal(typeof h.notes.classifies_certainty, "string");
    await d.stop();
  });

  it("start refuses invalid options naming the field, and unsupported ones with the key", async () => {
    const d = driver();
    const refused = [
      [{ max_batch_records: 0 }, "max_batch_records"],
      [{ max_batch_records: 1001 }, "max_batch_records"],
      [{ max_batch_bytes: 1024 * 1024 + 1 }, "max_batch_bytes"],
      [{ linger_ms: -1 }, "linger_ms"],
      [{ max_unacked_bytes: 4800 }, "max_unacked_bytes"],
      [{ retry_mode: "sometimes" }, "retry_mode"],
      [{ no_such_key: 1 }, "no_such_key"],
    ];
    for (const [config, field] of refused) {
      const r = await d.start(config);
      assert.equal(r.ok, false, JSON.stringify(config));
      assert.equal(r.error.field, field, JSON.stringify(r));
      assert.equal(typeof r.error.message, "string");
    }
    const notExpressible = [
      [{ linger_ms: "disabled" }, "linger_ms: "],
      [{ max_unacked_batches: 16 }, "max_unacked_batches: "],
      [{ max_pending_barriers: 1024 }, "max_pending_barriers: "],
      [{ json: false }, "json: "],
      [{ match_seq_num: 2 ** 53 }, "match_seq_num: "], // a JS number cannot hold it exactly
    ];
    for (const [config, prefix] of notExpressible) {
      const r = await d.start(config);
      assert.equal(r.ok, false);
      assert.ok(r.unsupported.startsWith(prefix), r.unsupported);
    }
    const ds = await d.start({}, "durable_streams");
    assert.ok(ds.unsupported.startsWith("protocol: "), ds.unsupported);
    // Silently clamped by the SDK: accepted (the harness reports the divergence).
    const clamped = await d.start({ max_in_flight: 0, max_attempts: 0, delivery_timeout_ms: 5 });
    assert.equal(clamped.ok, true);
    assert.deepEqual(clamped.ignored, ["delivery_timeout_ms"]);
    await d.stop();
  });

  it("answers malformed lines and ops without a producer with an error and keeps going", async () => {
    const d = driver();
    let r = await d.raw("this is not json");
    assert.equal(r.ok, false);
    assert.match(r.error.message, /malformed/);
    r = await d.raw("[1,2]");
    assert.equal(r.ok, false);
    r = await d.request({ op: "frobnicate" });
    assert.equal(r.ok, false);
    r = await d.submit("a");
    assert.equal(r.ok, false);
    assert.match(r.error.message, /start/);
    assert.equal((await d.start()).ok, true);
    r = await d.request({ op: "submit" });
    assert.equal(r.ok, false);
    r = await d.request({ op: "advance", ms: -1 });
    assert.equal(r.ok, false);
    assert.equal((await d.submit("a")).result.ticket, 0);
    await d.stop();
    for (const line of d.rawLines) JSON.parse(line); // stdout carries protocol lines only
  });

  it("batches by linger on virtual time, stamps match_seq_num and fencing token, acks per record", async () => {
    const d = driver();
    const s = await d.start({ linger_ms: 10, match_seq_num: 5, fencing_token: "f" });
    assert.deepEqual(s.observed, []);
    assert.deepEqual((await d.submit("a")).result, { ticket: 0 });
    assert.deepEqual((await d.submit("bc")).result, { ticket: 1 });
    assert.deepEqual((await d.advance(9.999)).observed, []);
    const r = await d.advance(0.001);
    assert.deepEqual(r.observed, [
      {
        kind: "send",
        send: 0,
        batch: 0,
        attempt: 1,
        first_ticket: 0,
        count: 2,
        body_b64: b64("abc"),
        record_ends: [1, 3],
        stamp: { sequenced: true, match_seq_num: 5, fencing_token: "f" },
        session: 0,
      },
    ]);
    const a = await d.ack(0, 5, 7);
    assert.equal(a.result, null);
    assert.deepEqual(a.observed, [
      { kind: "done", first: 0, last: 0, ok: true, ack: { start: 5, end: 7, index: 0, seq_num: 5 } },
      { kind: "done", first: 1, last: 1, ok: true, ack: { start: 5, end: 7, index: 1, seq_num: 6 } },
    ]);
    // The next batch is stamped with match_seq_num advanced by the record count.
    await d.submit("d");
    const f = await d.request({ op: "flush" });
    assert.deepEqual(f.result, { barrier: 0 });
    assert.equal(sends(f)[0].stamp.match_seq_num, 7);
    await d.stop();
  });

  it("flush seals at once, completes after the covered acks; an empty flush completes at once", async () => {
    const d = driver();
    await d.start({ linger_ms: 3600000 });
    await d.submit("a");
    await d.submit("b");
    const f = await d.request({ op: "flush" });
    assert.deepEqual(f.result, { barrier: 0 });
    assert.deepEqual(kinds(f), ["send"]);
    assert.equal(text(sends(f)[0].body_b64), "ab");
    const a = await d.ack(0, 0, 2);
    assert.deepEqual(kinds(a), ["done", "done", "barrier"]);
    assert.deepEqual(a.observed[2], { kind: "barrier", barrier: 0, ok: true });
    const empty = await d.request({ op: "flush" });
    assert.deepEqual(empty.result, { barrier: 1 });
    assert.deepEqual(empty.observed, [{ kind: "barrier", barrier: 1, ok: true }]);
    const c = await d.request({ op: "close" });
    assert.deepEqual(c.result, { closed: "ok" });
    assert.deepEqual(c.observed, [{ kind: "closed", ok: true }]);
    await d.stop();
  });

  it("a condition failure fails the record, the barrier, later calls and close with the SDK's error", async () => {
    const d = driver();
    await d.start({ linger_ms: 3600000, match_seq_num: 10 });
    await d.submit("a");
    await d.request({ op: "flush" });
    const r = await d.fail(0, "condition_failed", { certainty: "definite" });
    assert.deepEqual(kinds(r), ["done", "barrier"]);
    const done = r.observed[0];
    assert.equal(done.ok, false);
    assert.equal(done.error.code, "condition_failed");
    assert.equal(done.error.certainty, "unknown");
    assert.equal(done.error.sdk.name, "SeqNumMismatchError");
    assert.equal(r.observed[1].ok, false);
    assert.equal(r.observed[1].error.code, "condition_failed");
    const s = await d.submit("b");
    assert.equal(s.result.rejected, "failed");
    assert.equal(s.result.error.code, "condition_failed");
    const f = await d.request({ op: "flush" });
    assert.equal(f.result.rejected, "failed");
    const c = await d.request({ op: "close" });
    assert.equal(c.result.closed, "condition_failed");
    assert.deepEqual(kinds(c), ["closed"]);
    assert.equal(c.observed[0].ok, false);
    const again = await d.request({ op: "close" });
    assert.equal(again.result.closed, "condition_failed");
    assert.deepEqual(again.observed, []); // Closed is observed once
    await d.stop();
  });

  it("fencing-token-only batches fail with the SDK's FencingTokenMismatchError", async () => {
    const d = driver();
    await d.start({ linger_ms: 1, fencing_token: "me" });
    await d.submit("a");
    await d.advance(1);
    const r = await d.fail(0, "condition_failed");
    assert.equal(dones(r)[0].error.code, "condition_failed");
    assert.equal(dones(r)[0].error.sdk.name, "FencingTokenMismatchError");
    await d.stop();
  });

  it("a lost connection is retried by the SDK's session on a new transport session", async () => {
    const d = driver();
    await d.start({ linger_ms: 1, backoff_initial_ms: 2, backoff_max_ms: 2, jitter_seed: 1 });
    await d.submit("a");
    assert.equal(sends(await d.advance(1)).length, 1);
    const lost = await d.fail(0, "connection_lost", { certainty: "indefinite", retryable: true });
    assert.deepEqual(lost.observed, []); // backoff runs on the fake clock
    assert.deepEqual((await d.advance(1)).observed, []); // base 2 ms + jitter: not yet
    const resent = sends(await d.advance(10));
    assert.equal(resent.length, 1);
    assert.equal(resent[0].batch, 0);
    assert.equal(resent[0].attempt, 2);
    assert.equal(resent[0].session, 1);
    assert.equal(resent[0].body_b64, b64("a"));
    const ok = await d.ack(1, 0, 1);
    assert.deepEqual(kinds(ok), ["done"]);
    assert.equal(ok.observed[0].ok, true);
    assert.equal((await d.ack(0, 0, 1)).ok, false); // send 0 was answered already
    await d.stop();
  });

  it("a failure with `with` fails the session's other in-flight calls at once; the SDK resends each batch once", async () => {
    const d = driver();
    await d.start({
      linger_ms: 1,
      max_batch_records: 1,
      max_in_flight: 3,
      match_seq_num: 0,
      backoff_initial_ms: 2,
      backoff_max_ms: 2,
      jitter_seed: 1,
    });
    // Batches queued while the head is in flight go out together once it is acknowledged.
    for (const r of ["a", "b", "c"]) await d.submit(r);
    await d.advance(1);
    const first = sends(await d.ack(0, 0, 1));
    assert.deepEqual(
      first.map((x) => [x.send, x.batch, x.session]),
      [
        [1, 1, 0],
        [2, 2, 0],
      ],
    );
    const lost = { kind: "fail", error: { code: "connection_lost", certainty: "indefinite", retryable: true } };
    const both = await d.request({ op: "respond", send: 1, response: lost, with: [{ send: 2, response: lost }] });
    assert.equal(both.ok, true);
    const resent = sends(await d.advance(10));
    assert.deepEqual(
      resent.map((x) => [x.batch, x.attempt, x.session]),
      [
        [1, 2, 1],
        [2, 2, 1],
      ],
      "one recovery, both batches resent once on the new session",
    );
    assert.equal((await d.fail(2, "connection_lost")).ok, false, "send 2 was answered with send 1");
    const bad = await d.request({ op: "respond", send: 3, response: { kind: "ack", ack: { start: 0, end: 1 } }, with: [] });
    assert.equal(bad.ok, false, "with is for failures only");
    await d.stop();
  });

  it("an ack timeout (the SDK's 5 s requestTimeoutMillis) resends; a late answer to the old attempt is ignored", async () => {
    const d = driver();
    await d.start({ linger_ms: 1 });
    await d.submit("a");
    await d.advance(1);
    assert.deepEqual((await d.advance(4999)).observed, []);
    const resent = sends(await d.advance(300)); // timeout at 5001 ms, then 100-200 ms backoff
    assert.equal(resent.length, 1);
    assert.equal(resent[0].attempt, 2);
    assert.deepEqual((await d.ack(0, 0, 1)).observed, []); // superseded attempt: ignored
    const ok = await d.ack(1, 0, 1);
    assert.deepEqual(kinds(ok), ["done"]);
    assert.equal(ok.observed[0].ok, true);
    await d.stop();
  });

  it("an ack reaching 2^53 is given to the SDK as the wire would give it (the last safe start is accepted)", async () => {
    const d = driver();
    assert.equal((await d.start({ linger_ms: 1, match_seq_num: 2 ** 53 - 1 })).ok, true);
    await d.submit("a");
    assert.equal(sends(await d.advance(1)).length, 1);
    const r = await d.ack(0, 2 ** 53 - 1, 2 ** 53);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(kinds(r), ["done"]);
    await d.stop();
  });

  it("a server restart fails the calls of every session at once, an abandoned session's too", async () => {
    const d = driver();
    await d.start({ linger_ms: 1 });
    await d.submit("a");
    await d.advance(1);
    const resent = sends(await d.advance(5300)); // ack timeout: a new session carries attempt 2
    assert.equal(resent.length, 1);
    assert.notEqual(resent[0].session, 0, "the resend is on a session of its own");
    const restart = await d.request({
      op: "respond",
      send: 1,
      response: { kind: "fail", error: { code: "connection_lost" } },
      with: [{ send: 0, response: { kind: "fail", error: { code: "connection_lost" } } }],
    });
    assert.equal(restart.ok, true, JSON.stringify(restart));
    await d.stop();
  });

  it("retries are bounded: the SDK gives up after max_attempts with its last error", async () => {
    const d = driver();
    await d.start({ linger_ms: 1, max_attempts: 2, backoff_initial_ms: 1, backoff_max_ms: 1 });
    await d.submit("a");
    await d.advance(1);
    await d.fail(0, "unavailable");
    assert.equal(sends(await d.advance(5)).length, 1);
    const r = await d.fail(1, "unavailable");
    assert.equal(dones(r).length, 1);
    assert.equal(dones(r)[0].error.code, "unavailable");
    assert.equal(dones(r)[0].error.retryable, true);
    // Rendered as S2's side-effect-free refusal: the contract's unavailable is definite.
    assert.deepEqual(
      { status: dones(r)[0].error.sdk.status, code: dones(r)[0].error.sdk.code },
      { status: 429, code: "rate_limited" },
    );
    await d.stop();
  });

  it("a definite unavailable is retried under no_side_effects, as S2's rate_limited is (E2, E4)", async () => {
    const d = driver();
    await d.start({ linger_ms: 1, retry_mode: "no_side_effects", backoff_initial_ms: 1, backoff_max_ms: 1 });
    await d.submit("a");
    await d.advance(1);
    assert.deepEqual(dones(await d.fail(0, "unavailable")), []);
    const resent = sends(await d.advance(5));
    assert.equal(resent.length, 1);
    assert.deepEqual(kinds(await d.ack(1, 0, 1)), ["done"]);
    await d.stop();
  });

  it("at capacity a submit blocks (reported blocked, then capacity) instead of refusing", async () => {
    const d = driver();
    await d.start({ linger_ms: 3600000, max_batch_records: 1, max_in_flight: 1 });
    const a = await d.submit("a");
    assert.deepEqual(a.result, { ticket: 0 });
    assert.equal(sends(a).length, 1);
    assert.deepEqual((await d.submit("b")).result, { ticket: 1 });
    assert.deepEqual((await d.submit("c")).result, { ticket: 2, blocked: true });
    const r = await d.ack(0, 0, 1);
    assert.deepEqual(kinds(r), ["done", "send", "capacity"]);
    assert.equal(r.observed[1].first_ticket, 1);
    assert.deepEqual(r.observed[2], { kind: "capacity", ticket: 2 });
    await d.stop();
  });

  it("a record larger than max_batch_bytes is refused as record_too_large", async () => {
    const d = driver();
    await d.start({ linger_ms: 3600000, max_batch_bytes: 12 });
    await d.submit("ab");
    const r = await d.submit("abcde"); // metered 8 + 5 = 13 > 12
    assert.equal(r.result.rejected, "record_too_large");
    assert.equal(r.result.error.code, "invalid_record");
    // What happens to the Producer afterwards is the SDK's business (observed as is).
    await d.stop();
  });

  it("abort fails the unresolved tickets, then Closed once the in-flight append settles", async () => {
    const d = driver();
    await d.start({ linger_ms: 1 });
    await d.submit("a");
    await d.advance(1);
    await d.submit("b");
    const r = await d.request({ op: "abort" });
    assert.equal(r.result, null);
    assert.deepEqual(kinds(r), ["done", "done"]);
    for (const o of r.observed) assert.equal(o.error.code, "aborted");
    const c = await d.ack(0, 0, 1);
    assert.deepEqual(kinds(c), ["closed"]);
    assert.equal(c.observed[0].error.code, "aborted");
    await d.stop();
  });

  it("an ack naming no send is an extra S2 ack frame: paired with the oldest pending append, or dropped", async () => {
    const d = driver();
    await d.start({ linger_ms: 1 });
    const dropped = await d.ack(42, 0, 1);
    assert.equal(dropped.ok, true);
    assert.match(dropped.unsolicited, /dropped/);
    await d.submit("a");
    await d.advance(1);
    const paired = await d.ack(42, 0, 2); // one record too many
    assert.match(paired.unsolicited, /send 0/);
    assert.equal(dones(paired)[0].error.code, "invalid_ack");
    const nofail = await d.fail(42, "unavailable");
    assert.equal(nofail.ok, false);
    await d.start({ linger_ms: 1 });
    await d.submit("b");
    await d.advance(1);
    const unsupported = await d.fail(0, "stale_epoch");
    assert.ok(unsupported.unsupported.startsWith("fail stale_epoch"));
    await d.stop();
  });

  it("start gives a fresh producer on fresh time", async () => {
    const d = driver();
    await d.start({ linger_ms: 5 });
    await d.submit("a");
    await d.advance(3);
    await d.start({ linger_ms: 5 });
    assert.deepEqual((await d.submit("b")).result, { ticket: 0 });
    assert.deepEqual((await d.advance(3)).observed, []); // the old producer's timer is gone
    const r = await d.advance(2);
    assert.equal(sends(r).length, 1);
    assert.equal(sends(r)[0].send, 0);
    assert.equal(sends(r)[0].body_b64, b64("b"));
    await d.stop();
  });

  it("is deterministic: the same requests give the same replies, jitter included", async () => {
    const script = [
      { op: "start", protocol: "s2", config: { linger_ms: 0, jitter_seed: 99 } },
      { op: "submit", record_b64: b64("x") },
      { op: "submit", record_b64: b64("y") },
      { op: "advance", ms: 1 },
      { op: "respond", send: 0, response: { kind: "fail", error: { code: "unavailable" } } },
      { op: "advance", ms: 150 },
      { op: "advance", ms: 150 },
      { op: "respond", send: 1, response: { kind: "ack", ack: { start: 0, end: 2 } } },
      { op: "close" },
    ];
    const runOnce = async () => {
      const d = driver();
      const out = [];
      for (const req of script) out.push(await d.request(req));
      await d.stop();
      return out;
    };
    const first = await runOnce();
    assert.deepEqual(await runOnce(), first);
    assert.equal(first.at(-1).result.closed, "ok");
    assert.equal(first.flatMap((r) => r.observed ?? []).filter((o) => o.kind === "send").length, 2);
  });

  it("exits 0 on stdin EOF", async () => {
    const d = driver();
    assert.equal((await d.request({ op: "hello" })).ok, true);
    d.child.stdin.end();
    assert.equal(await d.exited, 0);
  });
});
