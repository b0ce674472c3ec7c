#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// Conformance driver for the S2 TypeScript SDK's Producer (npm @s2-dev/streamstore).
//
// Speaks the JSON-lines driver protocol of docs/conformance.md ("The driver protocol"):
// one request per line on stdin, exactly one reply line per request on stdout, logs on
// stderr. See README.md next to this file for what is mapped to what and why.
//
// The producer under test is the SDK's own stack, exactly as `stream.appendSession()`
// builds it, minus the network:
//
//   Producer(BatchTransform(options), RetryAppendSession(generator, sessionOptions, retry))
//                                                          |
//                                   generator() -> FakeTransportSession (this file)
//
// The fake transport session implements the SDK's TransportAppendSession interface
// (submit(input) -> Promise<AppendResult>, close() -> Promise<CloseResult>,
// effectSignalled()): every submit() is one `send` observation and stays pending until
// the harness answers it with `respond`. Time is @sinonjs/fake-timers: nothing ever waits
// on the real clock.

import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { format } from "node:util";

import FakeTimers from "@sinonjs/fake-timers";
import {
  AppendRecord,
  BatchTransform,
  FencingTokenMismatchError,
  Producer,
  S2Error,
  SeqNumMismatchError,
} from "@s2-dev/streamstore";

// ---- stdout is the protocol channel: everything else goes to stderr -----------------------

const writeOut = process.stdout.write.bind(process.stdout);
for (const method of ["log", "info", "debug", "warn", "trace", "dir"]) {
  console[method] = (...args) => process.stderr.write(format(...args) + "\n");
}

// ---- the SDK's internals this driver needs (same module instances as the public index) ----

const sdkIndexUrl = import.meta.resolve("@s2-dev/streamstore");
const { RetryAppendSession, isRetryable } = await import(new URL("./lib/retry.js", sdkIndexUrl));
const { makeAppendPreconditionError, makeServerError, s2Error } = await import(
  new URL("./error.js", sdkIndexUrl)
);
const { meteredBytes } = await import(new URL("./utils.js", sdkIndexUrl));
const sdkVersion = JSON.parse(readFileSync(new URL("../../package.json", sdkIndexUrl), "utf8")).version;

const DRIVER = "s2-ts";
const SDK = `@s2-dev/streamstore@${sdkVersion}`;
const ABORT_REASON = "aborted by the conformance harness (Producer.writable.abort)";

// Captured before any fake clock is installed: draining uses the real event loop.
const realSetImmediate = globalThis.setImmediate;
const realMathRandom = Math.random;

// ---- hello -------------------------------------------------------------------------------

const HELLO = {
  ok: true,
  driver: DRIVER,
  sdk: SDK,
  protocols: ["s2"],
  capabilities: {
    per_record_completions: true,
    flush_barrier: true,
    abort: true,
    synchronous_rejection: true,
    virtual_time: true,
    classifies_certainty: false,
  },
  notes: {
    per_record_completions:
      "submit() resolves to a RecordSubmitTicket whose ack() settles once per record (IndexedAppendAck = batch AppendAck + index): done observations have first == last",
    flush_barrier:
      "Producer.flush() (new in 0.27): seals the partial batch and waits for every record submitted before it; the Producer stays open",
    abort:
      "no Producer.abort(): mapped to producer.writable.abort(reason), which fails every unresolved ticket with the reason (no definite/indefinite marking) and then runs the graceful close, which still waits for in-flight appends",
    synchronous_rejection:
      "submit() returns a Promise: a refusal (closed, failed, record too large) is a rejection that settles within the same event-loop drain, before any time passes or any I/O, and is reported as the call's result; at capacity the SDK never refuses (no would_block): the submit stays pending (backpressure) and is reported as {ticket, blocked: true}, then {kind: capacity, ticket} when the SDK lets it through",
    virtual_time:
      "@sinonjs/fake-timers (setTimeout, setInterval, Date, performance) installed before the producer is built; advance = clock.tickAsync(ms)",
    classifies_certainty:
      "the SDK's errors (S2Error, SeqNumMismatchError, FencingTokenMismatchError) say nothing about whether records may have been appended: every error is reported with certainty \"unknown\"; retryable is the SDK's own isRetryable()",
  },
};

// ---- config mapping (start) --------------------------------------------------------------

const KNOWN_KEYS = new Set([
  "linger_ms",
  "max_batch_records",
  "max_batch_bytes",
  "max_unacked_bytes",
  "max_unacked_batches",
  "max_in_flight",
  "max_pending_barriers",
  "delivery_timeout_ms",
  "max_attempts",
  "backoff_initial_ms",
  "backoff_max_ms",
  "retry_mode",
  "jitter_seed",
  "json",
  "idempotent",
  "match_seq_num",
  "fencing_token",
]);

/** A config refusal: the driver's reply to `start`. */
class StartRefusal extends Error {
  constructor(reply) {
    super(reply.unsupported ?? reply.error?.message ?? "refused");
    this.reply = reply;
  }
}
const unsupported = (key, why) => new StartRefusal({ ok: false, unsupported: `${key}: ${why}` });
const configError = (field, message) => new StartRefusal({ ok: false, error: { field, message } });

/**
 * Translates a vector's config object into the SDK's options. Keys absent from the config
 * keep the SDK's own defaults (that is the point: the harness compares them with the
 * contract's). Returns {batch, session, retry, applied, ignored}.
 */
function mapConfig(protocol, config) {
  if (protocol !== "s2") {
    throw unsupported("protocol", `${JSON.stringify(protocol)}: ${DRIVER} drives the S2 SDK, which speaks S2 only`);
  }
  if (config === undefined || config === null) config = {};
  if (typeof config !== "object" || Array.isArray(config)) {
    throw configError("config", "config must be an object");
  }
  for (const key of Object.keys(config)) {
    if (!KNOWN_KEYS.has(key)) throw configError(key, `unknown config key ${JSON.stringify(key)}`);
  }
  const batch = {};
  const session = {};
  const retry = {};
  const applied = {};
  const ignored = [];
  const has = (k) => Object.hasOwn(config, k);

  if (has("json")) throw unsupported("json", "Durable Streams option; the S2 SDK has no JSON body mode");
  if (has("idempotent")) {
    throw unsupported("idempotent", "Durable Streams idempotent producer; S2 sequencing is match_seq_num");
  }
  if (has("linger_ms")) {
    const v = config.linger_ms;
    if (v === "disabled") {
      throw unsupported(
        "linger_ms",
        "\"disabled\" (no linger timer) has no BatchTransform equivalent: it starts a linger timer for every batch (lingerDuration >= 0 is always true)",
      );
    }
    batch.lingerDurationMillis = v;
    applied.lingerDurationMillis = v;
  }
  if (has("match_seq_num") && typeof config.match_seq_num === "number" && config.match_seq_num > Number.MAX_SAFE_INTEGER) {
    // JSON.parse has already rounded it: the SDK's matchSeqNum is a JS number, which holds
    // integers exactly only up to 2^53 - 1, so the SDK cannot be given this start.
    throw unsupported("match_seq_num", "above 2^53 - 1: the SDK's matchSeqNum is a JS number and cannot hold it exactly");
  }
  // Contract keys that are one SDK option each: [key, option group, SDK option].
  const direct = [
    ["max_batch_records", batch, "maxBatchRecords"],
    ["max_batch_bytes", batch, "maxBatchBytes"],
    ["match_seq_num", batch, "matchSeqNum"],
    ["fencing_token", batch, "fencingToken"],
    ["max_unacked_bytes", session, "maxInflightBytes"],
    ["max_in_flight", session, "maxInflightBatches"],
    ["max_attempts", retry, "maxAttempts"],
    ["backoff_initial_ms", retry, "minBaseDelayMillis"],
    ["backoff_max_ms", retry, "maxBaseDelayMillis"],
  ];
  for (const [key, group, option] of direct) {
    if (!has(key)) continue;
    group[option] = config[key];
    applied[option] = config[key];
  }
  if (has("max_unacked_batches")) {
    throw unsupported(
      "max_unacked_batches",
      "the SDK has no limit on unacknowledged batches apart from maxInflightBatches (max_in_flight): every batch handed to the AppendSession is sent at once",
    );
  }
  if (has("max_pending_barriers")) {
    throw unsupported(
      "max_pending_barriers",
      "Producer.flush() has no limit on pending flushes: each one is a promise in the Producer's operation chain",
    );
  }
  if (has("retry_mode")) {
    const m = config.retry_mode;
    if (m === "all") retry.appendRetryPolicy = "all";
    else if (m === "no_side_effects") retry.appendRetryPolicy = "noSideEffects";
    else throw configError("retry_mode", `retry_mode must be "all" or "no_side_effects"; got ${JSON.stringify(m)}`);
    applied.appendRetryPolicy = retry.appendRetryPolicy;
  }
  // The SDK has no per-record delivery deadline (only a per-attempt ack timeout,
  // requestTimeoutMillis, left at its default): the key is ignored and E6 is checked
  // against what the SDK does.
  if (has("delivery_timeout_ms")) ignored.push("delivery_timeout_ms");
  // The SDK's backoff jitter is Math.random(); the driver replaces Math.random with a PRNG
  // seeded by jitter_seed so that runs replay exactly (D2).
  let seed = 0;
  if (has("jitter_seed")) {
    const s = config.jitter_seed;
    if (typeof s !== "number" && typeof s !== "string") {
      throw configError("jitter_seed", "jitter_seed must be a number");
    }
    seed = s;
    applied.jitterSeed = s;
  }
  return { batch, session, retry, applied, ignored, seed };
}

/** Which of our keys an SDK validation message is about. */
function fieldOfSdkMessage(message) {
  const table = [
    ["maxBatchRecords", "max_batch_records"],
    ["maxBatchBytes", "max_batch_bytes"],
    ["lingerDurationMillis", "linger_ms"],
    ["maxInflightBytes", "max_unacked_bytes"],
    ["maxInflightBatches", "max_in_flight"],
    ["matchSeqNum", "match_seq_num"],
    ["fencing token", "fencing_token"],
  ];
  for (const [sdkName, ours] of table) if (message.includes(sdkName)) return ours;
  return "config";
}

/** A small deterministic PRNG (mulberry32) standing in for Math.random. */
function seededRandom(seed) {
  let h = 2166136261;
  for (const ch of String(seed)) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- errors: SDK -> contract codes, harness answers -> SDK errors ---------------------------

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "ETIMEDOUT",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ECONNRESET",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "NETWORK_ERROR",
  "BAD_GATEWAY",
]);

/** The contract error code (core/include/prodsm/error.hpp) of an error the SDK reported. */
function codeOf(e) {
  if (!(e instanceof Error)) return "internal";
  if (e instanceof SeqNumMismatchError || e instanceof FencingTokenMismatchError || e.status === 412) {
    return "condition_failed";
  }
  const msg = String(e.message ?? "");
  if (msg.includes(ABORT_REASON)) return "aborted";
  if (/Record size \d+ bytes exceeds maximum batch size/.test(msg)) return "invalid_record";
  if (/AppendSession is closed|Producer closed with pending records|WritableStream is closed/.test(msg)) {
    return "closed";
  }
  if (e.code === "INTERNAL_ERROR" || msg.includes("Invariant violation")) return "invalid_ack";
  if (msg.includes("Failed to parse AppendAck")) return "protocol_error";
  if (e.code === "REQUEST_TIMEOUT" || e.code === "request_timeout" || e.status === 408) return "request_timeout";
  if (CONNECTION_CODES.has(e.code)) return "connection_lost";
  if (e.code === "ABORTED" || e.status === 499) return "aborted";
  if (!(e instanceof S2Error)) return "internal";
  // Producer's toS2Error() wraps foreign exceptions as status 500, origin sdk, no code.
  if (e.origin === "sdk" && e.status === 500 && e.code === undefined) return "internal";
  if (e.status === 429 || e.status >= 500) return "unavailable";
  if (e.status === 404 || e.status === 410) return "not_found";
  if (e.status === 409) return "conflict";
  if (e.status >= 400) return "rejected";
  return "internal";
}

/** The protocol's error object for an SDK error. */
function errorInfo(e) {
  const info = { code: codeOf(e), certainty: "unknown", message: String(e?.message ?? e) };
  if (e instanceof S2Error) {
    info.retryable = isRetryable(e);
    info.sdk = { name: e.name, status: e.status, code: e.code ?? null, origin: e.origin };
    if (e instanceof SeqNumMismatchError) info.sdk.expected_seq_num = e.expectedSeqNum;
    if (e instanceof FencingTokenMismatchError) info.sdk.expected_fencing_token = e.expectedFencingToken;
  } else if (e instanceof Error) {
    info.sdk = { name: e.name };
  }
  return info;
}

// ---- per-run state -------------------------------------------------------------------------

let run = null; // the current producer run (start builds a fresh one)

class Run {
  constructor(clock, maxBatchBytes) {
    this.clock = clock;
    this.dead = false;
    this.maxBatchBytes = maxBatchBytes;
    this.observed = [];
    this.nextTicket = 0;
    this.nextBarrier = 0;
    this.ticketOfRecord = new Map(); // AppendRecord object -> ticket
    this.calls = []; // transport calls, index = send number
    this.attempts = new Map(); // batch (first ticket) -> calls so far
    this.sessions = []; // FakeTransportSession instances, in creation order
    this.tail = 0; // highest end seq num acked (expected seq num of an unstamped mismatch)
    this.closedObserved = false;
    this.producer = null;
  }
  observe(o) {
    if (this.dead) return null;
    this.observed.push(o);
    return o;
  }
  unobserve(o) {
    const i = this.observed.indexOf(o);
    if (i >= 0) this.observed.splice(i, 1);
  }
  takeObserved() {
    const out = this.observed;
    this.observed = [];
    return out;
  }
  currentSession() {
    return this.sessions[this.sessions.length - 1];
  }
}

/**
 * The SDK's TransportAppendSession, answered by the harness. Never throws: outcomes are
 * AppendResult values ({ok: true, value: AppendAck} | {ok: false, error: S2Error}), as
 * with the SDK's own fetch and s2s transports.
 */
class FakeTransportSession {
  constructor(r, index) {
    this.run = r;
    this.index = index;
    this.closed = false;
    this.pending = []; // calls not yet settled, in send order
    this.effect = false;
  }
  submit(input) {
    const r = this.run;
    if (this.closed) {
      // As the s2s transport does (lib/stream/transport/s2s/index.js, submit()).
      return Promise.resolve({ ok: false, error: new S2Error({ message: "AppendSession is closed", status: 400 }) });
    }
    const send = r.calls.length;
    const records = Array.from(input.records);
    const firstTicket = r.ticketOfRecord.get(records[0]);
    for (let i = 1; i < records.length; i++) {
      if (r.ticketOfRecord.get(records[i]) !== firstTicket + i) {
        console.warn(`[${DRIVER}] send ${send}: records are not consecutive tickets`);
      }
    }
    const batch = firstTicket ?? -1;
    const attempt = (r.attempts.get(batch) ?? 0) + 1;
    r.attempts.set(batch, attempt);
    const bodies = records.map((rec) =>
      typeof rec.body === "string" ? Buffer.from(rec.body, "utf8") : Buffer.from(rec.body ?? new Uint8Array()),
    );
    const ends = [];
    let end = 0;
    for (const b of bodies) ends.push((end += b.length));
    const stamp = { sequenced: input.matchSeqNum !== undefined };
    if (input.matchSeqNum !== undefined) stamp.match_seq_num = input.matchSeqNum;
    if (input.fencingToken !== undefined) stamp.fencing_token = input.fencingToken;
    const call = { send, session: this, input, settled: false, resolve: null };
    const promise = new Promise((resolve) => {
      call.resolve = resolve;
    });
    r.calls.push(call);
    this.pending.push(call);
    this.effect = true;
    r.observe({
      kind: "send",
      send,
      batch,
      attempt,
      first_ticket: batch,
      count: records.length,
      body_b64: Buffer.concat(bodies).toString("base64"),
      record_ends: ends,
      stamp,
      session: this.index,
    });
    return promise;
  }
  settle(call, result) {
    call.settled = true;
    const i = this.pending.indexOf(call);
    if (i >= 0) this.pending.splice(i, 1);
    // s2s resets its effect signal when no ack is pending after a success; an error keeps it.
    if (result.ok && this.pending.length === 0) this.effect = false;
    call.resolve(result);
  }
  async close() {
    // Closing does not wait for (or fail) pending calls: they may still be answered,
    // but the SDK no longer listens to them after it replaced this session.
    this.closed = true;
    return { ok: true };
  }
  effectSignalled() {
    return this.effect;
  }
}

function makeAck(start, end) {
  const now = Date.now();
  return {
    start: { seqNum: start, timestamp: new Date(now) },
    end: { seqNum: end, timestamp: new Date(now) },
    tail: { seqNum: end, timestamp: new Date(now) },
  };
}

/** The harness failure codes that have an S2 rendering (renderFailure). */
const S2_FAILURES = [
  "unavailable",
  "connection_lost",
  "request_timeout",
  "condition_failed",
  "not_found",
  "rejected",
  "conflict",
  "protocol_error",
];

/** The S2Error the SDK's transports would deliver for a harness failure. */
function renderFailure(r, call, error) {
  const code = error?.code;
  const message = error?.message ? String(error.message) : `conformance harness: ${code}`;
  switch (code) {
    case "unavailable":
      // The contract's unavailable is definite (nothing applied) and retryable: S2's
      // side-effect-free 429 rate_limited. (S2's 503 "unavailable" may have been applied:
      // rendered so, a definite failure would read as indefinite to the SDK.)
      return makeServerError({ status: 429 }, { message, code: "rate_limited" });
    case "connection_lost": {
      // What the s2s transport reports when the HTTP/2 stream errors (s2Error of a
      // socket error): "Connection failed: ECONNRESET", status 502, origin sdk.
      const socketError = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      return s2Error(socketError);
    }
    case "request_timeout":
      // S2's request_timeout error (HTTP 408): the request may have been applied.
      return makeServerError({ status: 408 }, { message, code: "request_timeout" });
    case "condition_failed": {
      const input = call?.input;
      if (input && input.matchSeqNum === undefined && input.fencingToken !== undefined) {
        return makeAppendPreconditionError(412, { fencing_token_mismatch: `not-${input.fencingToken}` });
      }
      // The stream's actual tail, when the harness gives one; otherwise "another writer
      // appended one record": one past what this batch expected.
      const expected =
        Object.hasOwn(error, "expected_seq") && error.expected_seq
          ? error.expected_seq
          : (input?.matchSeqNum ?? r.tail) + 1;
      return makeAppendPreconditionError(412, { seq_num_mismatch: expected });
    }
    case "not_found":
      return makeServerError({ status: 404 }, { message, code: "stream_not_found" });
    case "rejected":
      return makeServerError({ status: 400 }, { message, code: "invalid" });
    case "conflict":
      return makeServerError({ status: 409 }, { message, code: "conflict" });
    case "protocol_error":
      // What the s2s transport reports for an ack frame it cannot parse.
      return new S2Error({ message: `Failed to parse AppendAck: ${message}`, status: 500 });
    default:
      throw new Error(`no S2 rendering for ${JSON.stringify(code)}`);
  }
}

/**
 * Node's rule for timer delays (lib/internal/timers.js, Timeout): a delay below 1 ms (0
 * included) or above 2^31-1 ms is 1 ms. fake-timers would schedule a 0 ms timer at the
 * same instant outside a tick (and 1 ms later inside one); the SDK runs on Node, so the
 * driver applies Node's rule on top of the fake clock, inside and outside ticks alike.
 * clock.uninstall() restores the real functions.
 */
function applyNodeTimerClamp() {
  const nodeDelay = (delay) => {
    const d = Number(delay);
    return d >= 1 && d <= 2147483647 ? d : 1;
  };
  const fakeSetTimeout = globalThis.setTimeout;
  const fakeSetInterval = globalThis.setInterval;
  globalThis.setTimeout = function setTimeout(fn, delay, ...args) {
    return fakeSetTimeout(fn, nodeDelay(delay), ...args);
  };
  globalThis.setInterval = function setInterval(fn, delay, ...args) {
    return fakeSetInterval(fn, nodeDelay(delay), ...args);
  };
}

// ---- draining ------------------------------------------------------------------------------

/**
 * Lets the SDK run to quiescence without moving time: every microtask (and nextTick) runs
 * before a real setImmediate callback, so a few turns of the real event loop leave only
 * fake timers pending.
 */
async function drain() {
  for (let i = 0; i < 4; i++) await new Promise((resolve) => realSetImmediate(resolve));
}

// ---- ops -------------------------------------------------------------------------------------

function requireRun() {
  if (!run) throw new Error("no producer: send start first");
  return run;
}

function reply(result, r = run, extra = {}) {
  return { ok: true, result, observed: r ? r.takeObserved() : [], ...extra };
}

async function opStart(req) {
  // Drop the previous producer: its pending promises are never settled again, and its
  // late callbacks (if any) are not recorded.
  if (run) {
    run.dead = true;
    try {
      run.clock.uninstall();
    } catch {
      // already uninstalled
    }
    run = null;
  }
  Math.random = realMathRandom;
  let mapped;
  try {
    mapped = mapConfig(req.protocol, req.config);
  } catch (e) {
    if (e instanceof StartRefusal) return e.reply;
    throw e;
  }
  Math.random = seededRandom(mapped.seed);
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: 0,
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"],
    loopLimit: 1_000_000,
  });
  applyNodeTimerClamp();
  const r = new Run(clock, mapped.batch.maxBatchBytes ?? 1024 * 1024);
  let batchTransform;
  let session;
  try {
    batchTransform = new BatchTransform(mapped.batch);
    session = await RetryAppendSession.create(
      async () => {
        const s = new FakeTransportSession(r, r.sessions.length);
        r.sessions.push(s);
        return s;
      },
      mapped.session,
      mapped.retry,
      "conformance",
    );
  } catch (e) {
    clock.uninstall();
    Math.random = realMathRandom;
    const message = String(e?.message ?? e);
    return { ok: false, error: { field: fieldOfSdkMessage(message), message } };
  }
  r.producer = new Producer(batchTransform, session, "conformance");
  run = r;
  await drain();
  return reply(null, r, { applied: mapped.applied, ignored: mapped.ignored });
}

async function opSubmit(req) {
  const r = requireRun();
  if (typeof req.record_b64 !== "string") throw new Error("submit needs record_b64 (a base64 string)");
  const body = new Uint8Array(Buffer.from(req.record_b64, "base64"));
  const record = AppendRecord.bytes({ body });
  const ticket = r.nextTicket;
  r.ticketOfRecord.set(record, ticket);
  const st = { settled: false, ok: false, error: null, replied: false };
  const settleFailure = (e) => {
    if (st.replied) {
      // A blocked submit that the SDK finally refused: its ticket fails.
      r.observe({ kind: "done", first: ticket, last: ticket, ok: false, error: errorInfo(e) });
    }
  };
  r.producer.submit(record).then(
    (t) => {
      st.settled = true;
      st.ok = true;
      if (st.replied) r.observe({ kind: "capacity", ticket });
      t.ack().then(
        (ia) => {
          r.observe({
            kind: "done",
            first: ticket,
            last: ticket,
            ok: true,
            ack: { start: ia.ack.start.seqNum, end: ia.ack.end.seqNum, index: ia.index, seq_num: ia.seqNum() },
          });
        },
        (e) => r.observe({ kind: "done", first: ticket, last: ticket, ok: false, error: errorInfo(e) }),
      );
    },
    (e) => {
      st.settled = true;
      st.error = e;
      settleFailure(e);
    },
  );
  await drain();
  if (st.settled && !st.ok) {
    r.ticketOfRecord.delete(record);
    const info = errorInfo(st.error);
    let reason = "failed";
    if (info.code === "closed") reason = "closed";
    else if (info.code === "invalid_record" && meteredBytes(record) > r.maxBatchBytes) reason = "record_too_large";
    return reply({ rejected: reason, error: info }, r);
  }
  st.replied = true;
  r.nextTicket++;
  return reply(st.settled ? { ticket } : { ticket, blocked: true }, r);
}

async function opFlush() {
  const r = requireRun();
  const barrier = r.nextBarrier;
  const st = { settled: false, ok: false, error: null, obs: null };
  r.producer.flush().then(
    () => {
      st.settled = true;
      st.ok = true;
      st.obs = r.observe({ kind: "barrier", barrier, ok: true });
    },
    (e) => {
      st.settled = true;
      st.error = e;
      st.obs = r.observe({ kind: "barrier", barrier, ok: false, error: errorInfo(e) });
    },
  );
  await drain();
  if (st.settled && !st.ok) {
    // Refused at the call (the Producer had already failed, or sealing threw): no barrier.
    r.unobserve(st.obs);
    const info = errorInfo(st.error);
    return reply({ rejected: info.code === "closed" ? "closed" : "failed", error: info }, r);
  }
  r.nextBarrier++;
  return reply({ barrier }, r);
}

function observeClosed(r, ok, e) {
  if (r.closedObserved) return null;
  r.closedObserved = true;
  return r.observe(ok ? { kind: "closed", ok: true } : { kind: "closed", ok: false, error: errorInfo(e) });
}

async function opClose() {
  const r = requireRun();
  const st = { settled: false, ok: false, error: null };
  r.producer.close().then(
    () => {
      st.settled = true;
      st.ok = true;
      observeClosed(r, true);
    },
    (e) => {
      st.settled = true;
      st.error = e;
      observeClosed(r, false, e);
    },
  );
  await drain();
  if (!st.settled) return reply(null, r);
  return reply({ closed: st.ok ? "ok" : errorInfo(st.error).code, ...(st.ok ? {} : { error: errorInfo(st.error) }) }, r);
}

async function opAbort() {
  const r = requireRun();
  // Producer has no abort(); its WritableStream face has one: fail(reason) + close().
  r.producer.writable.abort(new Error(ABORT_REASON)).then(
    () => observeClosed(r, true),
    (e) => observeClosed(r, false, e),
  );
  await drain();
  return reply(null, r);
}

async function opAdvance(req) {
  const r = requireRun();
  const ms = req.ms;
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
    throw new Error("advance needs ms, a finite number >= 0");
  }
  let uncaught;
  try {
    await r.clock.tickAsync(ms);
  } catch (e) {
    // A timer callback threw (in real Node: an uncaught exception).
    uncaught = String(e?.stack ?? e);
    console.error(`[${DRIVER}] timer callback threw: ${uncaught}`);
  }
  await drain();
  return reply(null, r, uncaught ? { uncaught } : {});
}

async function opRespond(req) {
  const r = requireRun();
  const response = req.response;
  if (!response || typeof response !== "object") throw new Error("respond needs response");
  if (response.kind === "fail" && !S2_FAILURES.includes(response.error?.code)) {
    return {
      ok: false,
      unsupported: `fail ${response.error?.code}: not an error the S2 SDK's transports can deliver (Durable Streams only, or unknown)`,
    };
  }
  const index = req.send;
  const known = Number.isInteger(index) && index >= 0 && index < r.calls.length;
  let call = known ? r.calls[index] : null;
  if (known && call.settled) throw new Error(`send ${index} was already answered`);

  if (!known && response.kind !== "ack") throw new Error(`no send ${JSON.stringify(index)} to fail`);
  let result;
  if (response.kind === "ack") {
    const ack = response.ack ?? {};
    // Past 2^53 - 1 JSON.parse has rounded them, as the SDK's own decoding of S2's u64
    // seq nums into JS numbers would: the SDK is given what the wire would give it.
    const seqNum = (v) => Number.isInteger(v) && v >= 0;
    if (!seqNum(ack.start) || !seqNum(ack.end)) {
      throw new Error("an S2 ack needs non-negative integer start and end");
    }
    result = { ok: true, value: makeAck(ack.start, ack.end) };
  } else if (response.kind === "fail") {
    result = { ok: false, error: renderFailure(r, call, response.error) };
  } else {
    throw new Error(`unknown response kind ${JSON.stringify(response.kind)}`);
  }

  let extra = {};
  if (!known) {
    // An answer naming no send (E5 "unknown batch"). S2 acks carry no batch id: an extra
    // ack frame is paired with the oldest pending append of the current session (FIFO, as
    // the s2s transport does), or dropped when nothing is pending.
    const session = r.currentSession();
    call = session?.pending[0] ?? null;
    extra = { unsolicited: call ? `paired with send ${call.send}` : "dropped: nothing pending" };
    if (!call) {
      await drain();
      return reply(null, r, extra);
    }
  }
  // `with`: the other in-flight appends failed in the same instant — the rest of the
  // session (a real session that fails one append fails them all), or on a server restart
  // every pending append of every session (an abandoned session's too: the SDK may have
  // opened a new one after an ack timeout). All are settled, each on its own session,
  // before the SDK can react to the first.
  const also = [];
  if (req.with !== undefined) {
    if (!Array.isArray(req.with)) throw new Error("respond.with must be an array");
    if (result.ok) throw new Error("respond.with is only for failures");
    for (const w of req.with) {
      const i = w?.send;
      if (!Number.isInteger(i) || i < 0 || i >= r.calls.length) throw new Error(`no send ${JSON.stringify(i)} to fail`);
      const other = r.calls[i];
      if (other.settled || also.some((a) => a.call === other) || other === call) {
        throw new Error(`send ${i} was already answered`);
      }
      if (w.response?.kind !== "fail" || !S2_FAILURES.includes(w.response?.error?.code)) {
        throw new Error(`respond.with: send ${i} needs a fail response with an S2 error code`);
      }
      also.push({ call: other, result: { ok: false, error: renderFailure(r, other, w.response.error) } });
    }
  }
  if (result.ok) r.tail = Math.max(r.tail, result.value.end.seqNum);
  call.session.settle(call, result);
  for (const a of also) a.call.session.settle(a.call, a.result);
  await drain();
  return reply(null, r, extra);
}

async function handle(req) {
  if (!req || typeof req !== "object" || Array.isArray(req)) throw new Error("a request must be a JSON object");
  switch (req.op) {
    case "hello":
      return HELLO;
    case "start":
      return opStart(req);
    case "submit":
      return opSubmit(req);
    case "flush":
      return opFlush(req);
    case "close":
      return opClose(req);
    case "abort":
      return opAbort(req);
    case "advance":
      return opAdvance(req);
    case "respond":
      return opRespond(req);
    case "stop":
      return { ok: true, result: null, observed: run ? run.takeObserved() : [] };
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

// ---- main loop: one request at a time, one reply line each --------------------------------

process.on("unhandledRejection", (e) => {
  console.error(`[${DRIVER}] unhandled rejection: ${e?.stack ?? e}`);
});

function send(obj) {
  return new Promise((resolve) => writeOut(JSON.stringify(obj) + "\n", resolve));
}

async function main() {
  let buffer = "";
  const lines = [];
  let ended = false;
  let wake = null;
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
    wake?.();
  });
  process.stdin.on("end", () => {
    if (buffer.trim() !== "") lines.push(buffer);
    buffer = "";
    ended = true;
    wake?.();
  });
  for (;;) {
    while (lines.length === 0 && !ended) {
      await new Promise((resolve) => {
        wake = resolve;
      });
      wake = null;
    }
    if (lines.length === 0 && ended) break;
    const line = lines.shift();
    if (line.trim() === "") continue;
    let req;
    let out;
    try {
      req = JSON.parse(line);
    } catch (e) {
      await send({ ok: false, error: { message: `malformed request line: ${e.message}` } });
      continue;
    }
    try {
      out = await handle(req);
    } catch (e) {
      out = { ok: false, error: { message: String(e?.message ?? e) } };
    }
    await send(out);
    if (req && req.op === "stop") break;
  }
  if (run) {
    try {
      run.clock.uninstall();
    } catch {
      // ignore
    }
  }
  process.exit(0);
}

await main();
