// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the ds-ts conformance driver: spawn driver.mjs, speak the JSON-lines
// driver protocol of docs/conformance.md to it, check every reply.
// Run: node --test conformance/drivers/ds-ts/
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import http from "node:http";

const DRIVER = join(dirname(fileURLToPath(import.meta.url)), "driver.mjs");

/** A running driver: `call(obj | string)` writes one line and resolves with the reply. */
class Driver {
  constructor() {
    this.proc = spawn(process.execPath, [DRIVER], { stdio: ["pipe", "pipe", "pipe"] });
    this.replies = [];
    this.waiters = [];
    this.stderr = "";
    this.proc.stderr.on("data", (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.proc.on("exit", (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.proc.stdout, crlfDelay: Infinity }).on("line", (line) => {
      let v;
      try {
        v = JSON.parse(line);
      } catch {
        v = { __not_json: line };
      }
      const w = this.waiters.shift();
      if (w) w(v);
      else this.replies.push(v);
    });
  }
  call(req) {
    const line = typeof req === "string" ? req : JSON.stringify(req);
    this.proc.stdin.write(line + "\n");
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${line}\nstderr:\n${this.stderr}`)), 10000);
      const done = (v) => {
        clearTimeout(timer);
        assert.equal(v.__not_json, undefined, `stdout carried a non-JSON line: ${v.__not_json}`);
        resolve(v);
      };
      if (this.replies.length) done(this.replies.shift());
      else this.waiters.push(done);
    });
  }
  // Helpers that also assert the reply is ok.
  async ok(req) {
    const r = await this.call(req);
    assert.equal(r.ok, true, `expected ok for ${JSON.stringify(req)}, got ${JSON.stringify(r)}`);
    return r;
  }
  start(config, protocol = "durable_streams") {
    return this.call({ op: "start", protocol, config });
  }
  submit(text) {
    return this.ok({ op: "submit", record_b64: Buffer.from(text).toString("base64") });
  }
  advance(ms) {
    return this.ok({ op: "advance", ms });
  }
  ack(send, next_offset = "00000000000000000001", duplicate = false) {
    return this.ok({ op: "respond", send, response: { kind: "ack", ack: { next_offset, duplicate } } });
  }
  fail(send, error) {
    return this.ok({
      op: "respond",
      send,
      response: { kind: "fail", error: { certainty: "definite", retryable: false, ...error } },
    });
  }
  async stop() {
    const r = await this.ok({ op: "stop" });
    const exit = await this.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
    return r;
  }
}

const ID = (extra = {}) => ({ producer_id: "p", epoch: 0, auto_claim: false, ...extra });
const b64 = (s) => Buffer.from(s).toString("base64");
const sends = (r) => r.observed.filter((o) => o.kind === "send");
const kinds = (r) => r.observed.map((o) => o.kind);
const errorEvents = (r) => (r.log ?? []).filter((e) => e.event === "onError").map((e) => e.error.code);

async function withDriver(fn) {
  const d = new Driver();
  try {
    await fn(d);
    await d.stop();
    // Every send was identified from the seal boundaries or a predicted resend.
    assert.doesNotMatch(d.stderr, /identify_mismatch|unpredicted_resend|identified_by_body|unidentified_send/);
    assert.doesNotMatch(d.stderr, /uncaught exception|unhandled rejection/);
  } finally {
    d.proc.kill();
  }
}

test("hello names the driver, the SDK version and the capabilities with notes", async () => {
  await withDriver(async (d) => {
    const r = await d.ok({ op: "hello" });
    assert.equal(r.driver, "ds-ts");
    assert.equal(r.sdk, "@durable-streams/client@0.2.7");
    assert.deepEqual(r.protocols, ["durable_streams"]);
    assert.deepEqual(r.capabilities, {
      per_record_completions: false,
      flush_barrier: true,
      abort: true,
      synchronous_rejection: true,
      virtual_time: true,
      classifies_certainty: false,
      serve: true,
    });
    for (const flag of ["per_record_completions", "classifies_certainty", "serve"]) {
      assert.equal(typeof r.notes[flag], "string", `note for ${flag}`);
    }
  });
});

test("start: valid, refused by the SDK (B3, naming prodsm's field), unsupported, malformed", async () => {
  await withDriver(async (d) => {
    assert.deepEqual(await d.start({ idempotent: ID() }), { ok: true, result: null, observed: [] });
    // Every key the SDK expresses, prodsm defaults of keys it cannot, ignored retry keys.
    const full = {
      json: true,
      linger_ms: 0,
      max_batch_bytes: 2048,
      max_in_flight: 2,
      max_batch_records: 100000,
      max_unacked_bytes: 5242880,
      max_unacked_batches: 1024,
      max_pending_barriers: 1024,
      delivery_timeout_ms: 1000,
      max_attempts: 3,
      backoff_initial_ms: 1,
      backoff_max_ms: 2,
      retry_mode: "all",
      jitter_seed: 7,
      idempotent: ID({ epoch: 3, auto_claim: true }),
    };
    assert.equal((await d.start(full)).ok, true);

    const refused = async (config, field) => {
      const r = await d.start({ idempotent: ID(), ...config });
      assert.equal(r.ok, false, JSON.stringify(r));
      assert.equal(r.error?.field, field, JSON.stringify(r));
      assert.equal(typeof r.error.message, "string");
    };
    await refused({ max_in_flight: 0 }, "max_in_flight");
    await refused({ max_batch_bytes: 0 }, "max_batch_bytes");
    await refused({ max_batch_bytes: -1 }, "max_batch_bytes");
    await refused({ linger_ms: -1 }, "linger");
    await refused({ idempotent: ID({ epoch: -1 }) }, "protocol.idempotent.epoch");
    // The SDK validates even when the run itself would be unsupported (plain appends).
    const plainRefused = await d.start({ max_in_flight: 0 });
    assert.equal(plainRefused.error?.field, "max_in_flight");

    // Accepted although prodsm refuses them: divergences the harness reports (B3).
    assert.equal((await d.start({ idempotent: ID(), linger_ms: 3600001 })).ok, true);
    assert.equal((await d.start({ idempotent: ID({ producer_id: "" }) })).ok, true);

    const unsupported = async (config, protocol, mention) => {
      const r = await d.start(config, protocol);
      assert.equal(r.ok, false, JSON.stringify(r));
      assert.match(r.unsupported ?? "", mention, JSON.stringify(r));
    };
    await unsupported({}, "durable_streams", /plain appends/);
    await unsupported({ idempotent: null }, "durable_streams", /plain appends/);
    await unsupported({ idempotent: ID() }, "s2", /s2/);
    await unsupported({ idempotent: ID(), max_batch_records: 1 }, "durable_streams", /max_batch_records/);
    await unsupported({ idempotent: ID(), max_unacked_bytes: 100 }, "durable_streams", /max_unacked_bytes/);
    await unsupported({ idempotent: ID(), max_unacked_batches: 2 }, "durable_streams", /max_unacked_batches/);
    await unsupported({ idempotent: ID(), max_pending_barriers: 2 }, "durable_streams", /max_pending_barriers/);
    await unsupported({ idempotent: ID(), linger_ms: "disabled" }, "durable_streams", /linger_ms/);
    await unsupported({ idempotent: ID(), match_seq_num: 4 }, "durable_streams", /match_seq_num/);

    const malformed = await d.start({ idempotent: ID(), linger_ms: "soon" });
    assert.equal(malformed.ok, false);
    assert.equal(malformed.error?.field, "linger_ms");
    assert.equal((await d.start({ idempotent: ID() }, "kafka")).ok, false);

    // After refusals, a good start still works and ops run on it.
    assert.equal((await d.start({ idempotent: ID() })).ok, true);
    assert.deepEqual((await d.submit("a")).result, { ticket: 0 });
  });
});

test("malformed requests get an error reply and the driver keeps going", async () => {
  await withDriver(async (d) => {
    for (const bad of ["not json", "[1,2]", "42", "", JSON.stringify({ op: "dance" })]) {
      const r = await d.call(bad);
      assert.equal(r.ok, false, bad);
      assert.equal(typeof r.error.message, "string");
    }
    const early = await d.call({ op: "submit", record_b64: b64("a") });
    assert.equal(early.ok, false);
    assert.match(early.error.message, /start/);
    await d.start({ idempotent: ID() });
    assert.equal((await d.call({ op: "respond", send: 0, response: { kind: "ack", ack: {} } })).ok, false);
    assert.equal((await d.call({ op: "advance", ms: -1 })).ok, false);
    assert.equal((await d.call({ op: "submit" })).ok, false);
    assert.equal((await d.submit("a")).ok, true);
  });
});

test("linger is virtual: a batch goes out exactly when the fake clock reaches it", async () => {
  await withDriver(async (d) => {
    await d.start({ linger_ms: 3600000, idempotent: ID({ producer_id: "order-1", epoch: 2 }) });
    assert.deepEqual(await d.submit("ab"), { ok: true, result: { ticket: 0 }, observed: [] });
    assert.deepEqual((await d.submit("c")).result, { ticket: 1 });
    assert.deepEqual((await d.advance(3599999)).observed, []);
    const r = await d.advance(1);
    assert.deepEqual(r.observed, [
      {
        kind: "send",
        send: 0,
        batch: 0,
        attempt: 1,
        first_ticket: 0,
        count: 2,
        body_b64: b64("abc"),
        stamp: { sequenced: true, epoch: 2, seq: 0 },
        at_ms: 3600000,
      },
    ]);
    // Records after the seal start the next batch, with the next seq.
    await d.submit("d");
    const r2 = await d.advance(3600000);
    assert.deepEqual(
      sends(r2).map((s) => [s.send, s.batch, s.first_ticket, s.count, s.stamp.seq]),
      [[1, 2, 2, 1, 1]],
    );
  });
});

test("linger 0 is Node's 1 ms: no send at the same instant, the batch 1 ms later; default linger is 5 ms", async () => {
  await withDriver(async (d) => {
    await d.start({ linger_ms: 0, idempotent: ID() });
    await d.submit("a");
    assert.deepEqual((await d.submit("b")).observed, []);
    assert.deepEqual((await d.advance(0)).observed, []); // Node runs a 0 ms timeout after 1 ms
    const r = await d.advance(1);
    assert.deepEqual(sends(r).map((s) => [s.count, s.at_ms]), [[2, 1]]);

    await d.start({ idempotent: ID() });
    await d.submit("a");
    assert.deepEqual((await d.advance(4)).observed, []);
    assert.equal(sends(await d.advance(1)).length, 1);
  });
});

test("max_batch_bytes seals at append time (the record that reaches the limit is included)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 3, linger_ms: 1000, idempotent: ID() });
    assert.deepEqual((await d.submit("ab")).observed, []);
    const r = await d.submit("cd"); // 4 bytes >= 3: sealed with both records, over the limit
    assert.deepEqual(sends(r).map((s) => [s.first_ticket, s.count, Buffer.from(s.body_b64, "base64").toString()]), [
      [0, 2, "abcd"],
    ]);
    const big = await d.submit("0123456789"); // an oversized record is accepted and sent alone
    assert.deepEqual(big.result, { ticket: 2 });
    assert.deepEqual(sends(big).map((s) => [s.first_ticket, s.count, s.stamp.seq]), [[2, 1, 1]]);
  });
});

test("JSON mode: the batch body is [r0,r1,...] and records are matched back to tickets", async () => {
  await withDriver(async (d) => {
    await d.start({ json: true, idempotent: ID() });
    await d.submit("1");
    await d.submit('{"x":[2,3]}');
    await d.submit('"s,t"');
    const r = await d.ok({ op: "flush" });
    assert.deepEqual(r.result, { barrier: 0 });
    const [s] = sends(r);
    assert.equal(Buffer.from(s.body_b64, "base64").toString(), '[1,{"x":[2,3]},"s,t"]');
    assert.deepEqual([s.first_ticket, s.count], [0, 3]);
  });
});

test("empty records (bytes mode) are accepted and still matched by seal boundaries", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("");
    await d.submit("");
    const r = await d.ok({ op: "flush" });
    assert.deepEqual(sends(r).map((s) => [s.first_ticket, s.count, s.body_b64]), [[0, 2, ""]]);
    await d.submit("");
    const r2 = await d.ok({ op: "flush" });
    assert.deepEqual(sends(r2).map((s) => [s.batch, s.first_ticket, s.count, s.attempt]), [[2, 2, 1, 1]]);
  });
});

test("flush: a barrier observed when its promise settles; an empty flush settles at once", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    const empty = await d.ok({ op: "flush" });
    assert.deepEqual(empty.result, { barrier: 0 });
    assert.deepEqual(empty.observed.map((o) => [o.kind, o.barrier, o.ok]), [["barrier", 0, true]]);

    await d.submit("a");
    const f = await d.ok({ op: "flush" });
    assert.deepEqual(f.result, { barrier: 1 });
    assert.deepEqual(kinds(f), ["send"]); // sealed at once, barrier pending
    const a = await d.ack(0, "00000000000000000001");
    assert.deepEqual(a.observed.map((o) => [o.kind, o.barrier, o.ok]), [["barrier", 1, true]]);
    // Non-terminal: the producer keeps accepting records.
    assert.deepEqual((await d.submit("b")).result, { ticket: 1 });
  });
});

test("flush waits for records submitted after it (SDK behaviour the F2 checker judges)", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" }); // barrier 0 covers ticket 0, send 0
    await d.submit("b");
    assert.equal(sends(await d.advance(5)).length, 1); // ticket 1 sealed by linger, send 1
    assert.deepEqual((await d.ack(0)).observed, []); // its records are done, the barrier is not
    assert.deepEqual((await d.ack(1, "00000000000000000002")).observed.map((o) => o.kind), ["barrier"]);
  });
});

test("failures never fail a flush (F5 divergence) and go to onError only; every failure kind renders", async () => {
  const cases = [
    [{ code: "rejected" }, "rejected"],
    [{ code: "not_found" }, "not_found"],
    // 409 without Producer-Expected-Seq at seq 0: the SDK reads expected 0 → SequenceGapError(0, 0).
    [{ code: "conflict" }, "sequence_gap"],
    [{ code: "unavailable", retryable: true, retry_after_ms: 1500 }, "unavailable"],
    [{ code: "connection_lost", certainty: "indefinite", retryable: true }, "connection_lost"],
    [{ code: "stale_epoch", server_epoch: 1 }, "stale_epoch"],
    [{ code: "sequence_gap", expected_seq: 0, received_seq: 0 }, "sequence_gap"],
    [{ code: "stream_closed", final_offset: "00000000000000000000" }, "sequence_gap"], // SDK: closed at seq 0 → gap
  ];
  for (const [error, onErrorCode] of cases) {
    await withDriver(async (d) => {
      await d.start({ idempotent: ID() });
      await d.submit("a");
      await d.ok({ op: "flush" });
      const r = await d.fail(0, error);
      assert.deepEqual(
        r.observed.map((o) => [o.kind, o.ok]),
        [["barrier", true]],
        `${error.code}: ${JSON.stringify(r)}`,
      );
      assert.deepEqual(errorEvents(r), [onErrorCode], `${error.code}: ${JSON.stringify(r.log)}`);
      assert.equal(r.log.find((e) => e.event === "onError").error.certainty, "unknown");
    });
  }
});

test("protocol_error (200 without Stream-Next-Offset) and duplicate (204) are successes to the SDK", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" });
    const r = await d.fail(0, { code: "protocol_error", certainty: "indefinite" });
    assert.deepEqual(r.observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
    assert.equal(r.log, undefined); // no onError
    await d.submit("b");
    await d.ok({ op: "flush" });
    const dup = await d.ack(1, "", true);
    assert.deepEqual(dup.observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
    // An ack without offset (invalid ack) is accepted the same way.
    await d.submit("c");
    await d.ok({ op: "flush" });
    assert.deepEqual((await d.ack(2, "")).observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
  });
});

test("sequence gap with lower seqs in flight: parked, resent (same batch, attempt 2, same stamp) after them", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, idempotent: ID() });
    const s0 = sends(await d.submit("a"));
    const s1 = sends(await d.submit("b"));
    assert.deepEqual([...s0, ...s1].map((s) => [s.send, s.batch, s.stamp.seq]), [
      [0, 0, 0],
      [1, 1, 1],
    ]);
    const gap = await d.fail(1, { code: "sequence_gap", expected_seq: 0, received_seq: 1 });
    assert.deepEqual(gap.observed, []);
    const r = await d.ack(0);
    assert.deepEqual(sends(r).map((s) => [s.send, s.batch, s.attempt, s.first_ticket, s.count, s.stamp.seq, s.body_b64]), [
      [2, 1, 2, 1, 1, 1, b64("b")],
    ]);
    await d.ack(2, "00000000000000000002");
    assert.deepEqual((await d.ok({ op: "flush" })).observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
  });
});

test("409 Stream-Closed on seq > 0 is resent as a gap, again and again (S6 divergence)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, idempotent: ID() });
    await d.submit("a");
    await d.submit("b");
    await d.ack(0);
    let send = 1;
    for (let attempt = 2; attempt <= 4; attempt++) {
      const r = await d.fail(send, { code: "stream_closed", final_offset: "00000000000000000001" });
      assert.deepEqual(sends(r).map((s) => [s.batch, s.attempt, s.stamp.seq]), [[1, attempt, 1]]);
      send = sends(r)[0].send;
    }
  });
});

test("stale epoch: terminal without autoClaim; with autoClaim the batch is resent as (server+1, 0)", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" });
    const r = await d.fail(0, { code: "stale_epoch", server_epoch: 1 });
    assert.deepEqual(sends(r), []);
    assert.deepEqual(errorEvents(r), ["stale_epoch"]);

    await d.start({ idempotent: ID({ auto_claim: true }) });
    await d.submit("a");
    await d.ok({ op: "flush" });
    const c = await d.fail(0, { code: "stale_epoch", server_epoch: 4 });
    assert.deepEqual(sends(c).map((s) => [s.send, s.batch, s.attempt, s.stamp.epoch, s.stamp.seq]), [[1, 0, 2, 5, 0]]);
    const a = await d.ack(1);
    assert.deepEqual(a.observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
    await d.submit("b");
    const n = await d.ok({ op: "flush" });
    assert.deepEqual(sends(n).map((s) => [s.batch, s.attempt, s.stamp.epoch, s.stamp.seq]), [[1, 1, 5, 1]]);
  });
});

test("autoClaim after pipelining: a later batch claims first and an earlier one reuses its stamp (S5 divergence)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, idempotent: ID({ auto_claim: true }) });
    await d.submit("a");
    await d.ack(0); // epoch claimed: pipelining on
    await d.submit("b"); // send 1 (0,1)
    await d.submit("c"); // send 2 (0,2)
    const c = await d.fail(2, { code: "stale_epoch", server_epoch: 1 });
    assert.deepEqual(sends(c).map((s) => [s.batch, s.attempt, s.stamp.epoch, s.stamp.seq]), [[2, 2, 2, 0]]);
    await d.ack(3);
    const b = await d.fail(1, { code: "stale_epoch", server_epoch: 1 });
    // Ticket 1 goes out with the very stamp ticket 2 was acknowledged under.
    assert.deepEqual(sends(b).map((s) => [s.batch, s.attempt, s.stamp.epoch, s.stamp.seq]), [[1, 2, 2, 0]]);
  });
});

test("autoClaim: a batch deferred before the claim is overtaken by later records (P1/S2 divergence)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, idempotent: ID({ auto_claim: true }) });
    await d.submit("a"); // send 0, seq 0
    await d.submit("b"); // deferred behind the claim barrier
    await d.submit("c"); // deferred
    const drained = await d.fail(0, { code: "unavailable" }); // no claim yet; the queue drains
    assert.deepEqual(sends(drained).map((s) => [s.first_ticket, s.stamp.seq]), [
      [1, 1],
      [2, 2],
    ]);
    assert.deepEqual(sends(await d.submit("d")), []); // ticket 3: deferred (still unclaimed)
    await d.ack(1); // claimed, but send 2 keeps the queue busy
    const e = await d.submit("e"); // ticket 4: pushed at once
    assert.deepEqual(sends(e).map((s) => [s.send, s.first_ticket, s.stamp.seq]), [[3, 4, 3]]);
    await d.ack(2);
    const late = await d.ack(3); // the queue drains: ticket 3 finally goes, after ticket 4
    assert.deepEqual(sends(late).map((s) => [s.send, s.first_ticket, s.stamp.seq, s.body_b64]), [[4, 3, 4, b64("d")]]);
  });
});

test("409 Stream-Closed after seq bookkeeping was pruned: the batch waits forever (flush and close hang)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, max_in_flight: 1, idempotent: ID() });
    for (let i = 0; i < 6; i++) await d.submit(String(i));
    for (let i = 0; i < 5; i++) await d.ack(i, String(i + 1).padStart(20, "0"));
    assert.deepEqual((await d.fail(5, { code: "stream_closed", final_offset: "00000000000000000005" })).observed, []);
    assert.deepEqual((await d.ok({ op: "flush" })).observed, []);
    assert.deepEqual((await d.advance(24 * 3600 * 1000)).observed, []);
    assert.deepEqual((await d.ok({ op: "close" })).observed, []);
  });
});

test("autoClaim: batches sealed before the first success wait for it (no pipelining)", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, idempotent: ID({ auto_claim: true }) });
    assert.equal(sends(await d.submit("a")).length, 1);
    assert.equal(sends(await d.submit("b")).length, 0);
    assert.equal(sends(await d.submit("c")).length, 0);
    const r = await d.ack(0);
    assert.deepEqual(sends(r).map((s) => [s.batch, s.stamp.seq]), [
      [1, 1],
      [2, 2],
    ]);
  });
});

test("max_in_flight bounds concurrent sends; the queue is unbounded", async () => {
  await withDriver(async (d) => {
    await d.start({ max_batch_bytes: 1, max_in_flight: 1, idempotent: ID() });
    assert.equal(sends(await d.submit("a")).length, 1);
    for (let i = 0; i < 5; i++) assert.equal(sends(await d.submit("x")).length, 0);
    const r = await d.ack(0);
    assert.deepEqual(sends(r).map((s) => [s.batch, s.stamp.seq]), [[1, 1]]);
  });
});

test("close: flush + close request answered by the driver; closed observed; later calls", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    const c = await d.ok({ op: "close" });
    assert.equal(c.result, null);
    assert.deepEqual(kinds(c), ["send"]); // the close seals and sends the pending batch
    const a = await d.ack(0, "00000000000000000001");
    assert.deepEqual(a.observed.map((o) => [o.kind, o.ok]), [["closed", true]]);
    const closeReq = a.log.find((e) => e.event === "close_request_answered");
    assert.deepEqual(closeReq.stamp, { sequenced: true, epoch: 0, seq: 1 });
    assert.equal(closeReq.final_offset, "00000000000000000001");
    // After close: append throws synchronously → rejected:closed, no ticket consumed.
    const after = await d.submit("b");
    assert.equal(after.result.rejected, "closed");
    assert.equal(after.result.error.code, "closed");
    // A second close returns the cached result at once.
    assert.deepEqual(await d.ok({ op: "close" }), { ok: true, result: { closed: "ok" }, observed: [] });
    // flush after close is not refused by the SDK.
    assert.deepEqual((await d.ok({ op: "flush" })).result, { barrier: 0 });
  });
});

test("close after a failed batch still reports success (E1/C1 divergence)", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" });
    await d.fail(0, { code: "rejected" });
    const c = await d.ok({ op: "close" });
    assert.deepEqual(c.observed.map((o) => [o.kind, o.ok]), [["closed", true]]);
  });
});

test("a second close while the first drains sends a second close request; only the first is observed", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "close" });
    const second = await d.ok({ op: "close" });
    assert.equal(second.result, null);
    const a = await d.ack(0);
    assert.deepEqual(a.observed.map((o) => o.kind), ["closed"]);
    const events = a.log.map((e) => e.event);
    assert.equal(events.filter((e) => e === "close_request_answered").length, 2);
    assert.ok(events.includes("late_close_call_settled"), JSON.stringify(a.log));
  });
});

test("abort (AbortSignal): drops unsent records, aborts in-flight requests, producer stays open", async () => {
  await withDriver(async (d) => {
    await d.start({ linger_ms: 1000, idempotent: ID() });
    await d.submit("a");
    const ab = await d.ok({ op: "abort" });
    assert.equal(ab.result, null);
    assert.deepEqual(ab.observed, []);
    assert.deepEqual(errorEvents(ab), ["aborted"]); // DurableStreamError "Producer aborted" (ALREADY_CLOSED)
    assert.ok(ab.log.some((e) => e.event === "abort_dropped_unsent_records"));
    // Still accepts records; their request is never sent (the signal is aborted).
    assert.deepEqual((await d.submit("b")).result, { ticket: 1 });
    const t = await d.advance(1000);
    assert.deepEqual(sends(t), []);
    assert.ok(t.log.some((e) => e.event === "request_not_sent"));

    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" });
    const ab2 = await d.ok({ op: "abort" });
    // The in-flight fetch rejects with AbortError; the pending flush then resolves OK.
    assert.deepEqual(ab2.observed.map((o) => [o.kind, o.ok]), [["barrier", true]]);
    assert.deepEqual(errorEvents(ab2), ["aborted"]);
    // A late answer for the aborted request is accepted and ignored.
    const late = await d.ack(0);
    assert.deepEqual(late.observed, []);
    assert.equal(late.log[0].event, "response_ignored");
    assert.equal((await d.ack(0)).log[0].event, "response_ignored");
  });
});

test("respond: unknown send index and double answers are errors", async () => {
  await withDriver(async (d) => {
    await d.start({ idempotent: ID() });
    await d.submit("a");
    await d.ok({ op: "flush" });
    assert.equal((await d.call({ op: "respond", send: 5, response: { kind: "ack", ack: {} } })).ok, false);
    assert.equal((await d.call({ op: "respond", send: 0, response: { kind: "nope" } })).ok, false);
    await d.ack(0);
    assert.equal((await d.call({ op: "respond", send: 0, response: { kind: "ack", ack: {} } })).ok, false);
  });
});

test("start drops the previous producer and its clock", async () => {
  await withDriver(async (d) => {
    await d.start({ linger_ms: 10, idempotent: ID() });
    await d.submit("a");
    await d.start({ linger_ms: 10, idempotent: ID() });
    assert.deepEqual((await d.advance(10)).observed, []); // the old linger timer is gone
    assert.deepEqual((await d.submit("z")).result, { ticket: 0 });
    const r = await d.advance(10);
    assert.deepEqual(sends(r).map((s) => [s.send, s.at_ms]), [[0, 20]]);
  });
});

test("stdin EOF exits 0", async () => {
  const d = new Driver();
  await d.ok({ op: "hello" });
  d.proc.stdin.end();
  assert.deepEqual(await d.exited, { code: 0, signal: null });
});

// ---------------------------------------------------------------------------------------
// Served mode: the producer talks to a real HTTP server over the SDK's own fetch and real
// timers. The server here is a tiny Durable Streams fake on 127.0.0.1:0 that records every
// request off the wire and answers appends 200 with Stream-Next-Offset and the producer
// headers echoed (or whatever a test's handler decides).
// ---------------------------------------------------------------------------------------

/** A recorded request: method, path, lower-case headers, body, which connection. */
class FakeServer {
  constructor(handler = null) {
    this.handler = handler; // (rec, res, server) => true when it answered or holds `res`
    this.requests = [];
    this.connections = 0;
    this.closedConnections = 0;
    this.tail = 0;
    this.waiters = [];
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const rec = {
          method: req.method,
          path: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks),
          conn: req.socket.connId,
          seq: req.headers["producer-seq"],
          epoch: req.headers["producer-epoch"],
          closing: (req.headers["stream-closed"] ?? "").toLowerCase() === "true",
          res,
        };
        this.requests.push(rec);
        if (!(this.handler && this.handler(rec, res, this))) this.answer(rec, res);
        this.wake();
      });
    });
    this.server.on("connection", (sock) => {
      sock.connId = this.connections++;
      sock.on("close", () => {
        this.closedConnections++;
        this.wake();
      });
    });
  }
  async start() {
    await new Promise((r) => this.server.listen(0, "127.0.0.1", r));
    return this;
  }
  url(n = 1) {
    return `http://127.0.0.1:${this.server.address().port}/conformance/${n}`;
  }
  producerHeaders(rec) {
    return rec.seq === undefined ? {} : { "Producer-Epoch": rec.epoch, "Producer-Seq": rec.seq };
  }
  offset() {
    return String(this.tail).padStart(20, "0");
  }
  /** The default answers: an append is acknowledged, a close request closes the stream. */
  answer(rec, res) {
    if (rec.closing) {
      res.writeHead(204, { "Stream-Closed": "true", "Stream-Next-Offset": this.offset(), ...this.producerHeaders(rec) });
    } else {
      this.tail += rec.body.length;
      res.writeHead(200, { "Stream-Next-Offset": this.offset(), ...this.producerHeaders(rec) });
    }
    res.end();
  }
  wake() {
    for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves once pred() holds (checked on every request and connection close). */
  async until(pred, what, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; requests: ${this.describe()}`);
      await new Promise((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }
  describe() {
    return JSON.stringify(this.requests.map((r) => [r.method, r.path, r.seq, r.body.toString(), r.closing]));
  }
  appends() {
    return this.requests.filter((r) => r.method === "POST" && !r.closing);
  }
  async stop() {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

async function withServer(handler, fn) {
  const server = await new FakeServer(handler).start();
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
}

/**
 * Polls (20 ms of real time each) until pred(everything observed so far — in `prior`
 * replies and the polls) holds; returns the accumulated observations and log (the prior
 * replies' included). Bounded: fails after ~5 s.
 */
async function pollUntil(d, pred, what, ...prior) {
  const acc = { observed: prior.flatMap((r) => r.observed), log: prior.flatMap((r) => r.log ?? []) };
  for (let i = 0; i < 250; i++) {
    if (pred(acc)) return acc;
    const r = await d.ok({ op: "poll", wait_ms: 20 });
    acc.observed.push(...r.observed);
    acc.log.push(...(r.log ?? []));
  }
  throw new Error(`timed out polling for ${what}: ${JSON.stringify(acc)}\nstderr:\n${d.stderr}`);
}
const has = (kind, extra = () => true) => (acc) => acc.observed.some((o) => o.kind === kind && extra(o));
const served = (server, config, n = 1) => ({ op: "start", protocol: "durable_streams", config, serve: { url: server.url(n) } });

test("served: submit + flush → the request on the wire, a barrier ok; close request answered by the server", async () => {
  await withServer(null, async (server) => {
    await withDriver(async (d) => {
      const st = await d.ok(served(server, { linger_ms: 3600000, idempotent: ID({ producer_id: "order-1", epoch: 2 }) }));
      assert.deepEqual(st, { ok: true, result: null, observed: [] });
      assert.deepEqual(await d.submit("ab"), { ok: true, result: { ticket: 0 }, observed: [] });
      assert.deepEqual((await d.submit("c")).result, { ticket: 1 });
      const f = await d.ok({ op: "flush" });
      assert.deepEqual(f.result, { barrier: 0 });
      const acc = await pollUntil(d, has("barrier"), "the barrier", f);
      const all = acc.observed;
      // No send observations (the harness reads sends off the wire), no at_ms.
      assert.deepEqual(all, [{ kind: "barrier", barrier: 0, ok: true }]);

      // Exactly one request: the batch, a POST with the producer headers, nothing before it
      // (no HEAD, no PUT: the producer assumes the stream exists).
      assert.equal(server.requests.length, 1, server.describe());
      const [r] = server.requests;
      assert.equal(r.method, "POST");
      assert.equal(r.path, "/conformance/1");
      assert.equal(r.body.toString(), "abc");
      assert.equal(r.headers["content-type"], "application/octet-stream");
      assert.equal(r.headers["content-length"], "3");
      assert.deepEqual([r.headers["producer-id"], r.epoch, r.seq], ["order-1", "2", "0"]);
      assert.equal(r.headers["stream-closed"], undefined);

      // close(): flush, then the close request — on the wire too, answered by the server.
      const c = await d.ok({ op: "close" });
      assert.equal(c.result, null);
      const closed = await pollUntil(d, has("closed"), "closed", c);
      assert.deepEqual(closed.observed, [{ kind: "closed", ok: true }]);
      assert.equal(server.requests.length, 2, server.describe());
      const cr = server.requests[1];
      assert.deepEqual([cr.method, cr.closing, cr.seq, cr.epoch, cr.body.length], ["POST", true, "1", "2", 0]);
      assert.equal(cr.headers["content-length"], "0");
      // After close, append throws synchronously, as in injected runs.
      assert.equal((await d.submit("z")).result.rejected, "closed");
    });
  });
});

test("served: linger runs on the real clock; JSON bodies; a later batch reuses the idle connection", async () => {
  await withServer(null, async (server) => {
    await withDriver(async (d) => {
      await d.ok(served(server, { json: true, linger_ms: 20, idempotent: ID() }));
      await d.submit("1");
      await d.submit('{"x":2}');
      // No flush: the linger timer (a real setTimeout) seals and sends the batch.
      await server.until(() => server.requests.length === 1, "the lingered batch");
      const [r] = server.requests;
      assert.equal(r.headers["content-type"], "application/json");
      assert.equal(r.body.toString(), '[1,{"x":2}]');
      // Once the ack is in (the flush settled), the connection is idle in undici's pool.
      const f = await d.ok({ op: "flush" });
      const acc = await pollUntil(d, has("barrier"), "the barrier", f);
      assert.deepEqual(acc.observed, [{ kind: "barrier", barrier: 0, ok: true }]);
      assert.equal(acc.log.length, 0, JSON.stringify(acc.log));
      await d.submit("3");
      await server.until(() => server.requests.length === 2, "the second lingered batch");
      assert.deepEqual(server.requests.map((q) => [q.seq, q.body.toString()]), [["0", '[1,{"x":2}]'], ["1", "[3]"]]);
      assert.equal(server.requests[1].conn, server.requests[0].conn, "keep-alive: the same connection");
      assert.equal(server.connections, 1);
    });
  });
});

test("served: a 503 fails the batch at once (the producer does not retry it); onError in the log, flush ok", async () => {
  let failed = false;
  const handler = (rec, res) => {
    if (failed || rec.closing) return false;
    failed = true;
    res.writeHead(503, { "Retry-After": "0", "content-type": "text/plain" });
    res.end("busy");
    return true;
  };
  await withServer(handler, async (server) => {
    await withDriver(async (d) => {
      await d.ok(served(server, { linger_ms: 3600000, idempotent: ID() }));
      await d.submit("a");
      const f = await d.ok({ op: "flush" });
      const acc = await pollUntil(d, has("barrier"), "the barrier", f);
      // The flush settled only after the batch left the queue: had the producer retried the
      // 503, the batch would still be in flight. One request, one onError.
      assert.deepEqual(acc.observed, [{ kind: "barrier", barrier: 0, ok: true }]);
      assert.equal(server.requests.length, 1, server.describe());
      const errors = acc.log.filter((e) => e.event === "onError");
      assert.equal(errors.length, 1, JSON.stringify(acc.log));
      assert.equal(errors[0].error.code, "unavailable");
      assert.equal(errors[0].error.http_status, 503);
      assert.equal(typeof errors[0].wall_ms, "number");
      assert.equal(errors[0].at_ms, undefined);

      // The failed seq is not reused: the next batch goes out as seq 1.
      await d.submit("b");
      const f1 = await d.ok({ op: "flush" });
      await pollUntil(d, has("barrier", (o) => o.barrier === 1), "barrier 1", f1);
      assert.deepEqual(server.requests.map((q) => [q.seq, q.body.toString()]), [["0", "a"], ["1", "b"]]);
    });
  });
});

test("served: in-flight requests on separate connections; a 409 gap is resent once the lower seq is acked", async () => {
  // seq 0 is held until seq 1 has arrived; seq 1 gets 409 (expected 0), then seq 0 is acked.
  const held = new Map();
  let gapSent = false;
  const handler = (rec, res, server) => {
    if (rec.closing) return false;
    if (!gapSent) {
      held.set(rec.seq, rec);
      if (held.has("0") && held.has("1")) {
        gapSent = true;
        const r1 = held.get("1");
        r1.res.writeHead(409, { "Producer-Expected-Seq": "0", "Producer-Received-Seq": "1", ...server.producerHeaders(r1) });
        r1.res.end();
        const r0 = held.get("0");
        setImmediate(() => server.answer(r0, r0.res));
      }
      return true;
    }
    return false; // the resend: acknowledged
  };
  await withServer(handler, async (server) => {
    await withDriver(async (d) => {
      await d.ok(served(server, { max_batch_bytes: 1, max_in_flight: 2, linger_ms: 3600000, idempotent: ID() }));
      await d.submit("a"); // sealed at append (1 byte >= 1): seq 0 in flight
      await d.submit("b"); // seq 1 in flight beside it
      const f = await d.ok({ op: "flush" });
      const acc = await pollUntil(d, has("barrier"), "the barrier", f);
      assert.deepEqual(acc.observed, [{ kind: "barrier", barrier: 0, ok: true }]);
      assert.deepEqual(acc.log.filter((e) => e.event === "onError"), []);
      const attempts = server.requests.map((q) => [q.seq, q.body.toString()]);
      assert.equal(attempts.length, 3, server.describe());
      assert.deepEqual(attempts.slice(2), [["1", "b"]]); // the same stamp and body again
      // Both first attempts were in flight at once: on two connections (no pipelining).
      const first = server.requests.slice(0, 2);
      assert.notEqual(first[0].conn, first[1].conn);
    });
  });
});

test("served: a reset connection is connection_lost (TypeError fetch failed, the socket error as cause)", async () => {
  let reset = false;
  const handler = (rec, res) => {
    if (reset || rec.closing) return false;
    reset = true;
    res.socket.resetAndDestroy();
    return true;
  };
  await withServer(handler, async (server) => {
    await withDriver(async (d) => {
      await d.ok(served(server, { linger_ms: 3600000, idempotent: ID() }));
      await d.submit("a");
      const f = await d.ok({ op: "flush" });
      const acc = await pollUntil(d, has("barrier"), "the barrier", f);
      assert.deepEqual(acc.observed, [{ kind: "barrier", barrier: 0, ok: true }]);
      const errors = acc.log.filter((e) => e.event === "onError").map((e) => e.error);
      assert.equal(errors.length, 1, JSON.stringify(acc.log));
      assert.equal(errors[0].code, "connection_lost");
      assert.equal(errors[0].sdk_error, "TypeError");
      assert.match(String(errors[0].cause?.code), /ECONNRESET|UND_ERR_SOCKET/);
      assert.equal(server.requests.length, 1, "undici does not resend a POST on a reset connection");
    });
  });
});

test("served: abort aborts the in-flight request (its connection is closed), the flush then resolves", async () => {
  const handler = (rec) => !rec.closing; // hold every append
  await withServer(handler, async (server) => {
    await withDriver(async (d) => {
      await d.ok(served(server, { linger_ms: 3600000, idempotent: ID() }));
      await d.submit("a");
      await d.ok({ op: "flush" });
      await server.until(() => server.requests.length === 1, "the request");
      await d.submit("b"); // pending, unsealed: dropped by the abort
      const ab = await d.ok({ op: "abort" });
      assert.equal(ab.result, null);
      await server.until(() => server.closedConnections === 1, "the aborted request's connection to close");
      const acc = await pollUntil(d, has("barrier"), "the barrier", ab);
      assert.deepEqual(acc.observed, [{ kind: "barrier", barrier: 0, ok: true }]);
      const log = acc.log;
      assert.deepEqual(log.filter((e) => e.event === "onError").map((e) => e.error.code), ["aborted", "aborted"]);
      const dropped = log.find((e) => e.event === "abort_dropped_unsent_records");
      assert.deepEqual([dropped.first, dropped.count], [1, 1]);
      assert.equal(server.requests.length, 1);
    });
  });
});

test("served: respond and advance are refused; poll validates wait_ms and also works in injected runs", async () => {
  await withServer(null, async (server) => {
    await withDriver(async (d) => {
      // poll in an injected run: what was observed (nothing here), wait_ms ignored.
      await d.start({ linger_ms: 10, idempotent: ID() });
      assert.deepEqual(await d.ok({ op: "poll", wait_ms: 1000 }), { ok: true, result: null, observed: [] });
      assert.deepEqual(await d.ok({ op: "poll" }), { ok: true, result: null, observed: [] });

      await d.ok(served(server, { linger_ms: 3600000, idempotent: ID() }));
      await d.submit("a");
      for (const req of [
        { op: "respond", send: 0, response: { kind: "ack", ack: { next_offset: "00000000000000000001" } } },
        { op: "advance", ms: 3600000 },
      ]) {
        const r = await d.call(req);
        assert.equal(r.ok, false, JSON.stringify(r));
        assert.match(r.error.message, /not in a served run$/);
      }
      for (const wait_ms of [-1, 1001, "5", null]) {
        const r = await d.call({ op: "poll", wait_ms });
        assert.equal(r.ok, false, `wait_ms ${wait_ms}: ${JSON.stringify(r)}`);
      }
      // The refusals changed nothing: the run goes on.
      assert.deepEqual((await d.submit("b")).result, { ticket: 1 });
      const f = await d.ok({ op: "flush" });
      await pollUntil(d, has("barrier"), "the barrier", f);
      assert.deepEqual(server.requests.map((q) => q.body.toString()), ["ab"]);

      for (const serve of [{ url: "not a url" }, { url: "ftp://127.0.0.1/x" }, "http://127.0.0.1/x", {}]) {
        const r = await d.call({ op: "start", protocol: "durable_streams", config: { idempotent: ID() }, serve });
        assert.equal(r.ok, false, JSON.stringify(serve));
      }
      // Config refusals and unsupported keys are as in injected runs.
      const refused = await d.call({ ...served(server, { idempotent: ID(), max_in_flight: 0 }) });
      assert.equal(refused.error?.field, "max_in_flight");
      const unsupported = await d.call({ ...served(server, {}) });
      assert.match(unsupported.unsupported ?? "", /plain appends/);
    });
  });
});

test("served: start drops the previous producer (its real linger timer never sends) after an injected run", async () => {
  await withServer(null, async (server) => {
    await withDriver(async (d) => {
      await d.start({ linger_ms: 10, idempotent: ID() }); // installs (and the next start removes) a fake clock
      await d.submit("x");
      await d.ok(served(server, { linger_ms: 50, idempotent: ID() }, 1));
      await d.submit("old");
      await d.ok(served(server, { linger_ms: 50, idempotent: ID() }, 2));
      await d.submit("new");
      // Run 2's linger timer was set after run 1's, with the same delay: had run 1's
      // survived, its request would have come first.
      await server.until(() => server.requests.length >= 1, "run 2's batch");
      assert.deepEqual(server.requests.map((q) => [q.path, q.body.toString()]), [["/conformance/2", "new"]]);
    });
  });
});
