#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// Conformance driver for the Durable Streams TypeScript client's IdempotentProducer
// (npm @durable-streams/client, pinned in the repo's package.json). It speaks the
// JSON-lines driver protocol of docs/conformance.md ("The driver protocol"): one request
// per stdin line, exactly one reply per request on stdout, logs on stderr.
//
// What it wraps and how (see README.md next to this file for the full story):
//  - transport: the producer's `fetch` option. Every record POST the producer makes is a
//    `send` observation; its promise stays pending until the harness answers it with
//    `respond`, and is then settled with the HTTP response the simulated server's answer
//    stands for (or rejected with TypeError("fetch failed") for connection_lost).
//    The close request (POST with `Stream-Closed: true`) is answered by the driver itself
//    (204 + Stream-Closed: true) and shows only as the `closed` observation.
//  - time: @sinonjs/fake-timers replaces setTimeout/clearTimeout/setInterval/
//    clearInterval before the producer is built, so the linger timer is virtual;
//    `advance` = clock.tickAsync(ms). After every op the driver drains microtasks with
//    real setImmediate turns (never advancing the fake clock) before replying.
//  - batch identification: the driver reads the producer's public `pendingCount` and
//    `nextSeq` synchronously after every call that can seal a batch (append, flush,
//    close) and after every timer callback, so it knows each sealed batch's tickets and
//    whether it entered the SDK's FIFO queue at once or was deferred behind the
//    autoClaim barrier (then it enters when the queue drains); first sends follow that
//    queue; resends are recognised by the stamp the SDK's own retry logic will use
//    (409 → same epoch/seq, 403 with autoClaim → server epoch + 1 / seq 0) and the
//    identical body.
//
// Served mode (`start` with `"serve": {"url": ...}`): nothing of the above is injected.
// The producer runs on that URL over the SDK's own transport (global fetch, i.e.
// undici) and real timers; the harness's server reads every request off the wire and
// answers it there, and the harness moves real time itself (`poll` with `wait_ms`). The
// driver then only submits, flushes, closes, aborts and reports the outcomes (`barrier`,
// `closed`, onError calls in `log`); `respond` and `advance` are refused, no `send` is
// observed, observations carry no `at_ms`, and no batch-identity bookkeeping runs.

import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

// ---------------------------------------------------------------------------------------
// stdout carries protocol lines only: every console method writes to stderr.
// ---------------------------------------------------------------------------------------
const stderrWrite = (...args) => {
  process.stderr.write(
    args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ") + "\n",
  );
};
for (const m of ["log", "info", "debug", "warn", "error", "trace"]) console[m] = stderrWrite;

function safeJson(v) {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
function log(...args) {
  stderrWrite("[ds-ts driver]", ...args);
}

// Real event-loop primitives, captured before any fake clock exists.
const realSetImmediate = globalThis.setImmediate;
const realSetTimeout = globalThis.setTimeout;

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const FakeTimers = require("@sinonjs/fake-timers");
const {
  DurableStream,
  IdempotentProducer,
  StaleEpochError,
  SequenceGapError,
  DurableStreamError,
  FetchError,
} = await import("@durable-streams/client");

function packageVersion(name) {
  try {
    // The package's exports map exposes ./package.json.
    return require(`${name}/package.json`).version;
  } catch {
    try {
      const p = join(here, "..", "..", "..", "node_modules", ...name.split("/"), "package.json");
      return JSON.parse(readFileSync(p, "utf8")).version;
    } catch {
      return "unknown";
    }
  }
}
const SDK_VERSION = packageVersion("@durable-streams/client");
const FAKE_TIMERS_VERSION = packageVersion("@sinonjs/fake-timers");

// ---------------------------------------------------------------------------------------
// hello
// ---------------------------------------------------------------------------------------
const CAPABILITIES = {
  per_record_completions: false,
  flush_barrier: true,
  abort: true,
  synchronous_rejection: true,
  virtual_time: true,
  classifies_certainty: false,
  serve: true,
};
const NOTES = {
  per_record_completions:
    "append() is fire-and-forget (returns void); failures reach only the onError(error) callback, once per failed batch, with no record or ticket attached — so the driver never reports `done`",
  flush_barrier:
    "flush() is non-terminal and resolves after the queue drains; it waits for every batch in flight when the queue drains (also batches sealed after the flush call) and it resolves successfully even when covered batches failed (errors go to onError only) — the checkers judge F2/F5",
  abort:
    "no abort() method; the `signal` option (AbortSignal) is the SDK's abort: it drops the unsent pending batch (onError once) and aborts in-flight fetches, but emits no completion and leaves the producer open (append still accepted); the driver reports no `closed` for it",
  synchronous_rejection:
    "append() throws synchronously after close()/detach() (DurableStreamError ALREADY_CLOSED → rejected:closed); it never refuses for size (no record_too_large) or capacity (no would_block: the pending buffer and the queue are unbounded)",
  virtual_time:
    `@sinonjs/fake-timers ${FAKE_TIMERS_VERSION}: the linger setTimeout is fake; advance = clock.tickAsync(ms); the SDK has no other timer (no retry/backoff in the producer)`,
  classifies_certainty:
    "SDK errors do not say whether records may have been appended; failures are reported with certainty \"unknown\"",
  close:
    "close() = flush() then a close-only POST (Stream-Closed: true, producer headers, next seq, empty body); the driver answers that request itself with 204 + Stream-Closed: true and reports only the `closed` observation",
  config:
    "supported: json, linger_ms (number), max_batch_bytes, max_in_flight, idempotent{producer_id, epoch, auto_claim}; unsupported unless at prodsm's default: max_batch_records (100000), max_unacked_bytes (5 MiB), max_unacked_batches (1024), max_pending_barriers (1024); always unsupported: linger_ms \"disabled\", match_seq_num, fencing_token, no `idempotent` (plain appends); ignored (the producer has no retry policy for retryable failures and no deadline): delivery_timeout_ms, max_attempts, backoff_initial_ms, backoff_max_ms, retry_mode, jitter_seed",
  extensions:
    "in injected runs each observation also carries `at_ms` (virtual time of the observation); a reply may carry `log` (driver-side events with no protocol observation: onError calls, close requests answered, ignored responses); `poll` {wait_ms} returns what was observed since the previous reply",
  serve:
    "start {serve: {url}} runs the IdempotentProducer on that URL over the SDK's own global fetch (undici: one request per connection, a new keep-alive connection per concurrent request) and real setTimeout, nothing injected: no `send` observations, no `at_ms`, respond/advance refused, poll {wait_ms} waits real time; the close request (POST, Stream-Closed: true, empty body, next seq) goes to the server too; the producer never retries 5xx/429/lost connections (only 409 gap resends and the 403 autoClaim resend)",
};

function helloReply() {
  return {
    ok: true,
    driver: "ds-ts",
    sdk: `@durable-streams/client@${SDK_VERSION}`,
    protocols: ["durable_streams"],
    capabilities: CAPABILITIES,
    notes: NOTES,
  };
}

// ---------------------------------------------------------------------------------------
// Configuration (start)
// ---------------------------------------------------------------------------------------

// prodsm's defaults (core/include/prodsm/config.hpp, durable_streams_policy.hpp): keys the
// SDK cannot express are fine when they ask for exactly these.
const PRODSM_DEFAULTS = {
  max_batch_records: 100000,
  max_unacked_bytes: 5 * 1024 * 1024,
  max_unacked_batches: 1024,
  max_pending_barriers: 1024,
};
// Keys with no counterpart in the producer: it has no retry policy (only its unbounded 409
// gap resends), no backoff, no deadline.
const IGNORED_KEYS = new Set([
  "delivery_timeout_ms",
  "max_attempts",
  "backoff_initial_ms",
  "backoff_max_ms",
  "retry_mode",
  "jitter_seed",
]);
const KNOWN_KEYS = new Set([
  "json",
  "linger_ms",
  "max_batch_bytes",
  "max_in_flight",
  "idempotent",
  "match_seq_num",
  "fencing_token",
  "stream_operations",
  ...Object.keys(PRODSM_DEFAULTS),
  ...IGNORED_KEYS,
]);

// SDK constructor messages → prodsm's ConfigError field (the names vectors' `config_error`
// uses) and the vector key.
const SDK_OPTION_FIELDS = [
  { prefix: "epoch", field: "protocol.idempotent.epoch", key: "idempotent.epoch" },
  { prefix: "maxBatchBytes", field: "max_batch_bytes", key: "max_batch_bytes" },
  { prefix: "maxInFlight", field: "max_in_flight", key: "max_in_flight" },
  { prefix: "lingerMs", field: "linger", key: "linger_ms" },
];

const STREAM_URL = "https://conformance.invalid/v1/stream/ds-ts";
const PLACEHOLDER_PRODUCER_ID = "prodsm-conformance-probe";

class StartRefusal extends Error {
  constructor(reply) {
    super("start refused");
    this.reply = reply;
  }
}

/** Parses a vector config into SDK options; throws StartRefusal for malformed input. */
function parseConfig(config) {
  if (config === undefined || config === null) config = {};
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new StartRefusal({ ok: false, error: { message: "start.config must be an object" } });
  }
  const unsupported = [];
  const opts = {};
  let json = false;
  let idempotent = null;
  const bad = (key, message) =>
    new StartRefusal({ ok: false, error: { field: key, key, message: `malformed config: ${message}` } });
  const isNum = (v) => typeof v === "number" && Number.isFinite(v);

  for (const [key, value] of Object.entries(config)) {
    if (!KNOWN_KEYS.has(key)) {
      unsupported.push(`${key}: unknown configuration key`);
      continue;
    }
    if (IGNORED_KEYS.has(key)) continue;
    if (key in PRODSM_DEFAULTS) {
      if (value !== PRODSM_DEFAULTS[key]) {
        unsupported.push(
          `${key}: the IdempotentProducer has no such limit (only prodsm's default ${PRODSM_DEFAULTS[key]} can be run)`,
        );
      }
      continue;
    }
    switch (key) {
      case "stream_operations":
        if (typeof value !== "boolean") throw bad(key, "must be a boolean");
        if (value) {
          unsupported.push(
            "stream_operations: the IdempotentProducer has no stream close that leaves the producer open (C4): close() flushes, then closes the stream and the producer together (prodsm's close_with_stream); detach() closes the producer only",
          );
        }
        break;
      case "json":
        if (typeof value !== "boolean") throw bad(key, "must be a boolean");
        json = value;
        break;
      case "linger_ms":
        if (value === "disabled") {
          unsupported.push("linger_ms: \"disabled\" has no counterpart (lingerMs is always a timer; default 5 ms)");
        } else if (isNum(value)) {
          opts.lingerMs = value;
        } else {
          throw bad(key, "must be a number of milliseconds or \"disabled\"");
        }
        break;
      case "max_batch_bytes":
        if (!isNum(value)) throw bad(key, "must be a number");
        opts.maxBatchBytes = value;
        break;
      case "max_in_flight":
        if (!isNum(value)) throw bad(key, "must be a number");
        opts.maxInFlight = value;
        break;
      case "idempotent":
        if (value === null) break;
        if (typeof value !== "object" || Array.isArray(value)) throw bad(key, "must be an object or null");
        idempotent = {
          producer_id: value.producer_id,
          epoch: value.epoch ?? 0,
          auto_claim: value.auto_claim ?? false,
        };
        if (typeof idempotent.producer_id !== "string") throw bad("idempotent.producer_id", "must be a string");
        if (!isNum(idempotent.epoch)) throw bad("idempotent.epoch", "must be a number");
        if (typeof idempotent.auto_claim !== "boolean") throw bad("idempotent.auto_claim", "must be a boolean");
        break;
      case "match_seq_num":
      case "fencing_token":
        if (value !== null && value !== undefined) unsupported.push(`${key}: an S2 option, not Durable Streams`);
        break;
    }
  }
  if (!idempotent) {
    unsupported.push("plain appends: IdempotentProducer always sends producer headers (config has no `idempotent`)");
  }
  return { opts, json, idempotent, unsupported };
}

function sdkOptionError(e) {
  const message = e instanceof Error ? e.message : String(e);
  for (const m of SDK_OPTION_FIELDS) {
    if (message.startsWith(m.prefix)) return { field: m.field, key: m.key, message };
  }
  return { field: null, message };
}

// ---------------------------------------------------------------------------------------
// Bytes, framing, errors
// ---------------------------------------------------------------------------------------
const b64 = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("base64");

function bytesOf(body) {
  if (body === undefined || body === null) return new Uint8Array(0);
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return new Uint8Array(body); // copy
  if (body instanceof ArrayBuffer) return new Uint8Array(body.slice(0));
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  throw new Error(`unsupported request body type ${Object.prototype.toString.call(body)}`);
}

function bytesEqual(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The body the SDK builds for records [first, first+count) (#doSendBatch). */
function frame(records, first, count, json) {
  const slice = records.slice(first, first + count);
  if (json) {
    const texts = slice.map((r) => new TextDecoder().decode(r));
    return new TextEncoder().encode(`[${texts.join(",")}]`);
  }
  const total = slice.reduce((n, r) => n + r.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const r of slice) {
    out.set(r, off);
    off += r.length;
  }
  return out;
}

const DS_CODE_TO_OUR = {
  BAD_REQUEST: "rejected",
  UNAUTHORIZED: "rejected",
  FORBIDDEN: "rejected",
  NOT_FOUND: "not_found",
  CONFLICT_SEQ: "conflict",
  CONFLICT_EXISTS: "conflict",
  RATE_LIMITED: "unavailable",
  BUSY: "unavailable",
  ALREADY_CLOSED: "closed",
  STREAM_CLOSED: "stream_closed",
};

function httpCode(status, headers) {
  const h = (name) => (headers ? headers[name.toLowerCase()] ?? headers[name] : undefined);
  if (status === 409 && String(h("stream-closed") ?? "").toLowerCase() === "true") return "stream_closed";
  if (status === 409) return "conflict";
  if (status === 403) return "stale_epoch";
  if (status === 404 || status === 410) return "not_found";
  if (status === 429 || status >= 500) return "unavailable";
  if (status >= 400) return "rejected";
  return "protocol_error";
}

/** Maps an SDK error to the protocol's error object (certainty is never known). */
function mapError(e) {
  const out = { code: "protocol_error", certainty: "unknown", message: e instanceof Error ? e.message : String(e) };
  if (e instanceof Error) out.sdk_error = e.name;
  if (e instanceof StaleEpochError) {
    out.code = "stale_epoch";
    out.server_epoch = e.currentEpoch;
  } else if (e instanceof SequenceGapError) {
    out.code = "sequence_gap";
    out.expected_seq = e.expectedSeq;
    out.received_seq = e.receivedSeq;
  } else if (e instanceof FetchError) {
    out.code = httpCode(e.status, e.headers);
    out.http_status = e.status;
    if (out.code === "stream_closed" && e.headers?.["stream-next-offset"]) out.final_offset = e.headers["stream-next-offset"];
  } else if (e instanceof DurableStreamError) {
    out.code = DS_CODE_TO_OUR[e.code] ?? (e.status ? httpCode(e.status, undefined) : "protocol_error");
    // The signal listener's error: DurableStreamError("Producer aborted", ALREADY_CLOSED).
    if (e.code === "ALREADY_CLOSED" && e.message === "Producer aborted") out.code = "aborted";
    if (e.status) out.http_status = e.status;
    if (e.finalOffset) out.final_offset = e.finalOffset;
  } else if (e && (e.name === "AbortError" || e.name === "TimeoutError")) {
    out.code = "aborted";
  } else if (e instanceof TypeError) {
    out.code = "connection_lost"; // what undici's fetch rejects with when the connection fails
  }
  // Real fetch (served runs): TypeError("fetch failed") carries the socket error as
  // `cause` (ECONNRESET, UND_ERR_SOCKET "other side closed", ECONNREFUSED, ...).
  const cause = e instanceof Error ? e.cause : undefined;
  if (cause && typeof cause === "object") {
    out.cause = { name: cause.name, code: cause.code, message: cause.message };
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// One producer run (fresh fake clock, fresh producer — or, served, a fresh producer on
// the harness's URL with real fetch and real time)
// ---------------------------------------------------------------------------------------
class Session {
  constructor({ opts, json, idempotent, serve = null }) {
    // Served: the producer talks to serve.url over the SDK's own fetch and real timers.
    this.served = serve !== null;
    this.startedAt = performance.now();
    this.json = json;
    this.idempotent = idempotent;
    this.autoClaim = idempotent.auto_claim;
    this.observed = [];
    this.log = [];
    this.records = []; // ticket → Uint8Array
    this.pendingStart = 0; // first ticket not yet sealed (or dropped)
    // Sealed batches not sent yet, as the SDK's queue holds them: `pushed` were pushed
    // to its FIFO AsyncQueue at seal time (a seq assigned), `deferred` wait behind the
    // autoClaim barrier for the queue to drain and are then pushed together, in order.
    this.pushed = []; // {first, count, seq}
    this.deferred = []; // {first, count}
    this.batches = new Map(); // first ticket → {first, count, body, attempts, expect}
    this.sends = []; // index → {batch, attempt, stamp, settle, settled}
    this.flushes = 0;
    this.closeCalls = 0;
    this.closeObserved = false;
    this.tail = ""; // greatest Stream-Next-Offset acknowledged (for the close response)
    this.controller = new AbortController();

    if (this.served) {
      const contentType = json ? "application/json" : "application/octet-stream";
      // No `fetch` option anywhere: the producer's default is the global fetch, called
      // at request time; no fake clock, so its linger setTimeout is the real one.
      if (globalThis.setTimeout !== realSetTimeout) log("served start: setTimeout is not the real one");
      try {
        this.stream = new DurableStream({ url: serve.url, contentType });
        this.producer = new IdempotentProducer(this.stream, idempotent.producer_id, {
          ...opts,
          epoch: idempotent.epoch,
          autoClaim: idempotent.auto_claim,
          signal: this.controller.signal,
          onError: (error) => this.onError(error),
        });
      } catch (e) {
        this.dispose();
        throw e;
      }
      return;
    }

    this.clock = FakeTimers.install({
      now: 0,
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"],
      shouldAdvanceTime: false,
    });
    // Wrap the fake setTimeout so a timer callback (the SDK's linger) is followed at once
    // by seal detection, before anything else runs. Node's rule for timer delays applies
    // on the fake clock as on the real one (lib/internal/timers.js, Timeout): below 1 ms
    // (0 included) or above 2^31-1 ms is 1 ms, so the SDK's `setTimeout(..., 0)` linger
    // waits 1 ms, as it does on Node (the s2-ts driver applies the same rule).
    const clock = this.clock;
    const session = this;
    const nodeDelay = (delay) => {
      const d = Number(delay);
      return d >= 1 && d <= 2147483647 ? d : 1;
    };
    globalThis.setTimeout = function setTimeout(fn, delay, ...args) {
      const ms = nodeDelay(delay);
      if (typeof fn !== "function") return clock.setTimeout(fn, ms, ...args);
      return clock.setTimeout(function wrappedTimer(...a) {
        const seqBefore = session.producer?.nextSeq;
        try {
          return fn.apply(this, a);
        } finally {
          session.noteSeals("timer", seqBefore);
        }
      }, ms, ...args);
    };

    const contentType = json ? "application/json" : "application/octet-stream";
    const fetchImpl = (url, init) => this.fetch(url, init);
    try {
      this.stream = new DurableStream({ url: STREAM_URL, contentType, fetch: fetchImpl });
      this.producer = new IdempotentProducer(this.stream, idempotent.producer_id, {
        ...opts,
        epoch: idempotent.epoch,
        autoClaim: idempotent.auto_claim,
        fetch: fetchImpl,
        signal: this.controller.signal,
        onError: (error) => this.onError(error),
      });
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  dispose() {
    if (this.served) {
      // Silence the dropped producer: on real time its linger timer, queued batches and
      // gap resends would otherwise keep sending to the old URL. The abort clears the
      // timer, drops the pending batch and aborts in-flight requests (their connections
      // are closed); later fetch calls reject before sending anything.
      this.disposed = true;
      try {
        this.controller.abort();
      } catch (e) {
        log("abort on dispose failed:", String(e));
      }
      return;
    }
    try {
      this.clock.uninstall();
    } catch (e) {
      log("uninstall failed:", String(e));
    }
  }

  now() {
    return this.served ? undefined : this.clock.now;
  }

  observe(o) {
    // Served: no `at_ms` — the harness stamps observations as it receives them.
    this.observed.push(this.served ? { ...o } : { ...o, at_ms: this.now() });
  }

  note(event) {
    if (this.disposed) return;
    // Served: the wall-clock milliseconds since start, for reading logs only.
    const e = this.served
      ? { ...event, wall_ms: Math.round(performance.now() - this.startedAt) }
      : { ...event, at_ms: this.now() };
    this.log.push(e);
    log(safeJson(e));
  }

  takeObserved() {
    const o = this.observed;
    this.observed = [];
    return o;
  }

  takeLog() {
    const l = this.log;
    this.log = [];
    return l;
  }

  onError(error) {
    this.note({ event: "onError", error: mapError(error) });
  }

  /**
   * Seal detection: called synchronously after anything that can seal the pending batch
   * (at most one batch per call), with the producer's nextSeq from before the call. A
   * seal that advanced nextSeq was pushed to the queue at once (#pushBatch); one that
   * did not was deferred behind the autoClaim barrier (#enqueuePendingBatch).
   */
  noteSeals(where, seqBefore) {
    if (!this.producer || this.served) return; // served: the harness reads batches off the wire
    const unsealed = this.records.length - this.producer.pendingCount;
    if (unsealed <= this.pendingStart) return;
    const b = { first: this.pendingStart, count: unsealed - this.pendingStart, where };
    this.pendingStart = unsealed;
    const seqAfter = this.producer.nextSeq;
    if (seqAfter !== seqBefore) {
      b.seq = seqAfter - 1;
      this.pushed.push(b);
    } else {
      this.deferred.push(b);
    }
  }

  // ----- transport ---------------------------------------------------------------------
  fetch(url, init = {}) {
    const method = String(init.method ?? "GET").toUpperCase();
    const headers = new Headers(init.headers ?? {});
    let body;
    try {
      body = bytesOf(init.body);
    } catch (e) {
      this.note({ event: "unexpected_request", reason: String(e) });
      return Promise.reject(new TypeError("fetch failed"));
    }
    const signal = init.signal;
    if (method !== "POST") {
      this.note({ event: "unexpected_request", method, url: String(url) });
      return Promise.resolve(new Response(null, { status: 405, statusText: "Method Not Allowed" }));
    }
    if (signal?.aborted) {
      // Real fetch rejects before sending anything.
      this.note({ event: "request_not_sent", reason: "signal already aborted" });
      return Promise.reject(signal.reason ?? new DOMException("This operation was aborted", "AbortError"));
    }
    const stamp = {
      sequenced: headers.has("producer-id") && headers.has("producer-epoch") && headers.has("producer-seq"),
      epoch: Number(headers.get("producer-epoch") ?? 0),
      seq: Number(headers.get("producer-seq") ?? 0),
    };
    if ((headers.get("stream-closed") ?? "").toLowerCase() === "true") {
      return this.answerClose(headers, body, stamp);
    }

    const batch = this.identify(body, stamp);
    batch.attempts += 1;
    batch.expect = null;
    const index = this.sends.length;
    const send = { index, batch, attempt: batch.attempts, stamp, settled: false, settle: null };
    this.sends.push(send);
    const promise = new Promise((resolve, reject) => {
      send.settle = (how, value) => {
        if (send.settled) return false;
        send.settled = true;
        if (how === "resolve") resolve(value);
        else reject(value);
        return true;
      };
    });
    if (signal) {
      signal.addEventListener(
        "abort",
        () => {
          if (send.settle("reject", signal.reason ?? new DOMException("This operation was aborted", "AbortError"))) {
            send.abortedByDriver = true;
            this.note({ event: "send_aborted", send: index });
          }
        },
        { once: true },
      );
    }
    this.observe({
      kind: "send",
      send: index,
      batch: batch.first,
      attempt: send.attempt,
      first_ticket: batch.first,
      count: batch.count,
      body_b64: b64(body),
      stamp,
    });
    return promise;
  }

  /** Which batch a record POST carries (see the file comment). */
  identify(body, stamp) {
    // A resend the SDK's own logic predicts (409 → same stamp; 403 + autoClaim → claim).
    for (const b of this.batches.values()) {
      if (b.expect && b.expect.epoch === stamp.epoch && b.expect.seq === stamp.seq && bytesEqual(b.body, body)) {
        return b;
      }
    }
    // A first send: the queue's head. Deferred batches enter the queue only when it has
    // drained, i.e. when every pushed batch has started — then all of them at once.
    if (this.pushed.length === 0 && this.deferred.length > 0) {
      this.pushed.push(...this.deferred);
      this.deferred = [];
    }
    const head = this.pushed[0];
    if (head && this.fits(head, body, stamp)) {
      this.pushed.shift();
      return this.newBatch(head.first, head.count, body);
    }
    if (head) this.note({ event: "identify_mismatch", expected: head, stamp, body_b64: b64(body) });
    // Fallbacks (logged; the tests assert they never fire): another unsent batch with this
    // body, an unpredicted resend of a known body.
    for (const list of [this.pushed, this.deferred]) {
      const i = list.findIndex((c) => this.fits(c, body, stamp));
      if (i >= 0) {
        const [c] = list.splice(i, 1);
        this.note({ event: "identified_by_body", first: c.first, count: c.count });
        return this.newBatch(c.first, c.count, body);
      }
    }
    for (const b of this.batches.values()) {
      if (bytesEqual(b.body, body)) {
        this.note({ event: "unpredicted_resend", batch: b.first, stamp });
        return b;
      }
    }
    this.note({ event: "unidentified_send", body_b64: b64(body), stamp });
    return this.newBatch(this.records.length, 0, body);
  }

  /** True when `body` is the framing of sealed batch `c` (and its seq, when known). */
  fits(c, body, stamp) {
    if (c.seq !== undefined && stamp.sequenced && stamp.seq !== c.seq) return false;
    return bytesEqual(frame(this.records, c.first, c.count, this.json), body);
  }

  newBatch(first, count, body) {
    const b = { first, count, body, attempts: 0, expect: null };
    this.batches.set(first, b);
    return b;
  }

  answerClose(headers, body, stamp) {
    const h = { "Stream-Closed": "true" };
    h["Stream-Next-Offset"] = this.tail || "00000000000000000000";
    if (stamp.sequenced) {
      h["Producer-Epoch"] = String(stamp.epoch);
      h["Producer-Seq"] = String(stamp.seq);
    }
    this.note({ event: "close_request_answered", status: 204, stamp, body_bytes: body.length, final_offset: h["Stream-Next-Offset"] });
    return Promise.resolve(new Response(null, { status: 204, statusText: "No Content", headers: h }));
  }

  /** Renders the simulated server's decision as the SDK's fetch would deliver it. */
  render(send, response) {
    const { stamp } = send;
    const producerHeaders = stamp.sequenced
      ? { "Producer-Epoch": String(stamp.epoch), "Producer-Seq": String(stamp.seq) }
      : {};
    const text = (status, statusText, headers, body) => ({
      how: "resolve",
      value: new Response(body ?? null, { status, statusText, headers: { ...headers } }),
    });
    if (!response || typeof response !== "object") throw new Error("respond.response must be an object");
    if (response.kind === "ack") {
      const ack = response.ack ?? {};
      if (ack.duplicate) {
        // A duplicate on a producer append: 204, no Stream-Next-Offset.
        return text(204, "No Content", producerHeaders);
      }
      const h = { ...producerHeaders };
      if (typeof ack.next_offset === "string" && ack.next_offset !== "") {
        h["Stream-Next-Offset"] = ack.next_offset;
        if (ack.next_offset > this.tail) this.tail = ack.next_offset;
      }
      // (An ack without offset renders as 200 without Stream-Next-Offset: the invalid ack.)
      return text(200, "OK", h);
    }
    if (response.kind !== "fail") throw new Error(`respond.response.kind must be "ack" or "fail"`);
    const err = response.error ?? {};
    const body = `harness: ${err.code}`;
    const plain = { "content-type": "text/plain" };
    switch (err.code) {
      case "unavailable": {
        const h = { ...plain };
        if (err.retry_after_ms !== undefined && err.retry_after_ms !== null) {
          h["Retry-After"] = String(Math.max(0, Math.ceil(Number(err.retry_after_ms) / 1000)));
        }
        return text(503, "Service Unavailable", h, body);
      }
      case "connection_lost":
        return { how: "reject", value: new TypeError("fetch failed") };
      case "request_timeout":
        // A request that timed out after it was sent: a proxy's or the server's 408.
        return text(408, "Request Timeout", plain, body);
      case "stale_epoch": {
        const h = { ...plain };
        if (err.server_epoch !== undefined && err.server_epoch !== null) h["Producer-Epoch"] = String(err.server_epoch);
        return text(403, "Forbidden", h, body);
      }
      case "sequence_gap": {
        const h = { ...plain };
        if (err.expected_seq !== undefined && err.expected_seq !== null) h["Producer-Expected-Seq"] = String(err.expected_seq);
        if (err.received_seq !== undefined && err.received_seq !== null) h["Producer-Received-Seq"] = String(err.received_seq);
        return text(409, "Conflict", h, body);
      }
      case "stream_closed": {
        const h = { ...plain, "Stream-Closed": "true" };
        if (err.final_offset !== undefined && err.final_offset !== null) h["Stream-Next-Offset"] = String(err.final_offset);
        return text(409, "Conflict", h, body);
      }
      case "conflict":
        return text(409, "Conflict", plain, body);
      case "not_found":
        return text(404, "Not Found", plain, body);
      case "rejected":
        return text(400, "Bad Request", plain, body);
      case "condition_failed": // S2's; closest Durable Streams rendering
        return text(412, "Precondition Failed", plain, body);
      case "protocol_error":
        // A success status without the offset the protocol requires.
        return text(200, "OK", producerHeaders);
      default:
        throw new Error(`respond: unknown error code ${JSON.stringify(err.code)}`);
    }
  }

  /** What the SDK will do next with this batch after this response (#doSendBatch). */
  predictResend(send, response) {
    const b = send.batch;
    b.expect = null;
    if (response.kind !== "fail") return;
    const err = response.error ?? {};
    const { epoch, seq } = send.stamp;
    if (err.code === "stale_epoch" && this.autoClaim) {
      const server = err.server_epoch ?? epoch;
      b.expect = { epoch: Number(server) + 1, seq: 0 };
    } else if (err.code === "sequence_gap" || err.code === "stream_closed" || err.code === "conflict") {
      const expected = err.code === "sequence_gap" && err.expected_seq !== undefined && err.expected_seq !== null ? Number(err.expected_seq) : 0;
      if (expected < seq) b.expect = { epoch, seq };
    }
  }

  // ----- ops -----------------------------------------------------------------------------
  submit(req) {
    if (typeof req.record_b64 !== "string") throw new Error("submit.record_b64 must be a base64 string");
    const buf = Buffer.from(req.record_b64, "base64");
    const record = new Uint8Array(buf.length);
    record.set(buf);
    const seqBefore = this.producer.nextSeq;
    try {
      this.producer.append(record);
    } catch (e) {
      const error = mapError(e);
      const reason = error.code === "closed" ? "closed" : "invalid_record";
      return { rejected: reason, error };
    }
    const ticket = this.records.length;
    this.records.push(record);
    this.noteSeals("append", seqBefore);
    return { ticket };
  }

  flush() {
    const n = this.flushes++;
    const seqBefore = this.producer.nextSeq;
    const p = this.producer.flush();
    this.noteSeals("flush", seqBefore);
    p.then(
      () => this.observe({ kind: "barrier", barrier: n, ok: true }),
      (e) => this.observe({ kind: "barrier", barrier: n, ok: false, error: mapError(e) }),
    );
    return { barrier: n };
  }

  close() {
    const call = this.closeCalls++;
    const seqBefore = this.producer.nextSeq;
    const p = this.producer.close();
    this.noteSeals("close", seqBefore);
    const state = { call, settled: false, ok: false, error: null, reported: false };
    p.then(
      () => {
        state.settled = true;
        state.ok = true;
        this.closeSettledEvent(call, state);
      },
      (e) => {
        state.settled = true;
        state.error = mapError(e);
        this.closeSettledEvent(call, state);
      },
    );
    return state;
  }

  closeSettledEvent(call, state) {
    if (call === 0 && !this.closeObserved) {
      this.closeObserved = true;
      this.observe(state.ok ? { kind: "closed", ok: true } : { kind: "closed", ok: false, error: state.error });
    } else if (state.reported) {
      // A later close() call that outlived its op: its outcome has no protocol slot.
      this.note({ event: "late_close_call_settled", call, ok: state.ok, error: state.error });
    }
    // (A later close() call that settles within its own op is reported as that op's
    // result by runOp.)
  }

  abort() {
    if (this.served) {
      // The pending (unsealed) records are the last pendingCount tickets.
      const unsent = this.producer.pendingCount;
      this.controller.abort();
      if (unsent > 0 && this.producer.pendingCount === 0) {
        this.note({ event: "abort_dropped_unsent_records", first: this.records.length - unsent, count: unsent });
      }
      return null;
    }
    const unsealed = this.records.length - this.pendingStart;
    this.controller.abort();
    // The signal's listener drops the pending (unsealed) batch synchronously: those
    // records are never sent and never completed.
    if (unsealed > 0 && this.producer.pendingCount === 0) {
      this.note({ event: "abort_dropped_unsent_records", first: this.pendingStart, count: unsealed });
      this.pendingStart = this.records.length;
    }
    return null;
  }

  refuseServed(op) {
    if (this.served) {
      throw new Error(`${op}: the harness answers requests on the wire and sleeps real time itself — not in a served run`);
    }
  }

  /** Lets the SDK run for wait_ms of real time (served); elsewhere just reports. */
  async poll(req) {
    const w = req.wait_ms === undefined ? 0 : req.wait_ms;
    if (typeof w !== "number" || !Number.isFinite(w) || w < 0 || w > 1000) {
      throw new Error("poll.wait_ms must be a number of milliseconds in 0..1000");
    }
    if (this.served && w > 0) await new Promise((r) => realSetTimeout(r, w));
    return null;
  }

  async advance(req) {
    this.refuseServed("advance");
    const ms = Number(req.ms);
    if (!Number.isFinite(ms) || ms < 0) throw new Error("advance.ms must be a non-negative number");
    await this.clock.tickAsync(ms);
    return null;
  }

  respond(req) {
    this.refuseServed("respond");
    const index = req.send;
    if (!Number.isInteger(index) || index < 0 || index >= this.sends.length) {
      throw new Error(`respond: no send ${JSON.stringify(index)}`);
    }
    const send = this.sends[index];
    if (send.settled) {
      if (send.abortedByDriver) {
        // The SDK aborted this request (signal); a late answer reaches nobody.
        this.note({ event: "response_ignored", send: index, reason: "request was aborted by the producer's signal" });
        return null;
      }
      throw new Error(`respond: send ${index} was already answered`);
    }
    // `with`: other in-flight requests failed in the same instant (a server restart),
    // settled together before the SDK can react to the first.
    const others = req.with === undefined ? [] : req.with;
    if (!Array.isArray(others)) throw new Error("respond.with must be an array");
    const batch = [{ send, response: req.response }];
    for (const w of others) {
      const i = w?.send;
      if (!Number.isInteger(i) || i < 0 || i >= this.sends.length || this.sends[i].settled) {
        throw new Error(`respond.with: no unanswered send ${JSON.stringify(i)}`);
      }
      if (w.response?.kind !== "fail") throw new Error("respond.with is only for failures");
      batch.push({ send: this.sends[i], response: w.response });
    }
    const rendered = batch.map(({ send: s, response }) => this.render(s, response));
    batch.forEach(({ send: s, response }, k) => {
      this.predictResend(s, response);
      s.settle(rendered[k].how, rendered[k].value);
    });
    return null;
  }

  /**
   * Lets the SDK run until nothing more happens, without moving the fake clock (served:
   * a few real event-loop turns, so that outcomes already decided — a settled flush, an
   * onError call — are in the reply; it never waits for the network).
   */
  async quiesce() {
    let stable = 0;
    let last = -1;
    for (let i = 0; i < 1000 && stable < 3; i++) {
      await new Promise((r) => realSetImmediate(r));
      const mark = this.sends.length * 1e6 + this.observed.length * 1e3 + this.log.length;
      if (mark === last) stable++;
      else stable = 0;
      last = mark;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Request loop
// ---------------------------------------------------------------------------------------
let session = null;

function requireSession(op) {
  if (!session) throw new Error(`${op}: no producer — send start first`);
  return session;
}

function parseRequest(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    return { error: { ok: false, error: { message: `malformed request line: ${e.message}` } } };
  }
  if (!req || typeof req !== "object" || Array.isArray(req)) {
    return { error: { ok: false, error: { message: "a request must be a JSON object" } } };
  }
  return { req };
}

async function handle(req) {
  const op = req.op;
  switch (op) {
    case "hello":
      return helloReply();
    case "stop":
      return { ok: true, result: null, observed: [] };
    case "start":
      return start(req);
    case "submit":
    case "flush":
    case "close":
    case "abort":
    case "advance":
    case "respond":
    case "poll":
      return runOp(op, req);
    default:
      return { ok: false, error: { message: `unknown op ${JSON.stringify(op)}` } };
  }
}

async function start(req) {
  if (session) {
    session.dispose();
    session = null;
  }
  if (req.protocol !== "durable_streams") {
    if (req.protocol === "s2") {
      return { ok: false, unsupported: "protocol s2: this driver wraps the Durable Streams IdempotentProducer" };
    }
    return { ok: false, error: { message: `start.protocol must be "durable_streams" or "s2", got ${JSON.stringify(req.protocol)}` } };
  }
  let serve = null;
  if (req.serve !== undefined && req.serve !== null) {
    serve = parseServe(req.serve);
    if (serve.error) return { ok: false, error: { message: serve.error } };
  }
  let parsed;
  try {
    parsed = parseConfig(req.config);
  } catch (e) {
    if (e instanceof StartRefusal) return e.reply;
    throw e;
  }
  const { opts, json, idempotent, unsupported } = parsed;
  // The SDK's own validation first: a value it refuses is refused whatever else the
  // configuration asks for (B3). Without `idempotent` a placeholder id probes it.
  const probeIdempotent = idempotent ?? { producer_id: PLACEHOLDER_PRODUCER_ID, epoch: 0, auto_claim: false };
  let s;
  try {
    s = new Session({ opts, json, idempotent: probeIdempotent, serve });
  } catch (e) {
    return { ok: false, error: sdkOptionError(e) };
  }
  if (unsupported.length > 0) {
    s.dispose();
    return { ok: false, unsupported: unsupported.join("; ") };
  }
  session = s;
  log(`start: ${safeJson({ json, ...opts, idempotent, serve })}`);
  return { ok: true, result: null, observed: [] };
}

/** `start.serve`: {"url": "http(s)://host:port/path"} — the stream the harness serves. */
function parseServe(serve) {
  if (typeof serve !== "object" || Array.isArray(serve) || typeof serve.url !== "string") {
    return { error: "start.serve must be an object {\"url\": \"http://HOST:PORT/PATH\"}" };
  }
  let u;
  try {
    u = new URL(serve.url);
  } catch {
    return { error: `start.serve.url is not a URL: ${JSON.stringify(serve.url)}` };
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    return { error: `start.serve.url must be http or https, got ${JSON.stringify(serve.url)}` };
  }
  return { url: serve.url };
}

async function runOp(op, req) {
  const s = requireSession(op);
  let result = null;
  let closeState = null;
  switch (op) {
    case "submit":
      result = s.submit(req);
      break;
    case "flush":
      result = s.flush();
      break;
    case "close":
      closeState = s.close();
      break;
    case "abort":
      result = s.abort();
      break;
    case "advance":
      result = await s.advance(req);
      break;
    case "respond":
      result = s.respond(req);
      break;
    case "poll":
      result = await s.poll(req);
      break;
  }
  await s.quiesce();
  if (closeState && closeState.call > 0) {
    // The first close reports through the `closed` observation; a later close() call
    // that settled during this op reports its outcome as the synchronous result.
    if (closeState.settled) {
      result = { closed: closeState.ok ? "ok" : closeState.error.code };
      if (!closeState.ok) result.error = closeState.error;
    } else {
      closeState.reported = true;
    }
  }
  const reply = { ok: true, result, observed: s.takeObserved() };
  const l = s.takeLog();
  if (l.length > 0) reply.log = l;
  return reply;
}

function write(obj) {
  return new Promise((resolve) => {
    process.stdout.write(JSON.stringify(obj) + "\n", () => resolve());
  });
}

process.on("unhandledRejection", (e) => log("unhandled rejection:", String(e?.stack ?? e)));
process.on("uncaughtException", (e) => log("uncaught exception:", String(e?.stack ?? e)));

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
for await (const line of rl) {
  const { req, error } = parseRequest(line);
  let reply = error;
  const stop = req?.op === "stop";
  if (req) {
    try {
      reply = await handle(req);
    } catch (e) {
      reply = { ok: false, error: { message: e instanceof Error ? e.message : String(e) } };
    }
  }
  await write(reply);
  if (stop) {
    if (session) session.dispose();
    process.exit(0);
  }
}
if (session) session.dispose();
process.exit(0);
