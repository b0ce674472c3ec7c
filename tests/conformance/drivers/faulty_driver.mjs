// SPDX-License-Identifier: Apache-2.0
// A conformance driver (docs/conformance.md, "Driver protocol") that fails on purpose,
// for `prodsm conform --driver`'s own tests: it answers hello and start like a Durable
// Streams producer, then fails the first producer operation in the way its argument
// names. `prodsm conform` must report each as the target's failure (exit 3), never as a
// pass, an n/a or a malformed vector.
//
//   node faulty_driver.mjs crash|garbage|bad-ok|error|bad-type|bad-kind|bad-observed|exit-at-start
//
// Further modes for the other ways a driver can mislead the harness:
//   refuse-everything  hello is fine; every start and op is `unsupported` (nothing can be judged)
//   ok-to-everything   every line, hello included, is answered `{"ok": true}` (no protocol named)
//   result=RAW         the first producer operation's `result` is the JSON text RAW, as is
//   observe=RAW        the first producer operation observes the JSON text RAW, as is
//   closed-twice       a producer that never sends: tickets and barriers from 0, and the
//                      first close or abort reports `closed` twice in one reply (C1)
//   hello=RAW          hello is answered with the JSON text RAW, as is
//   start=RAW          every start is answered with the JSON text RAW, as is
import { createInterface } from "node:readline"

const mode = process.argv[2] ?? ""
const hello = {
  ok: true,
  driver: "faulty",
  sdk: `faulty (${mode})`,
  protocols: ["durable_streams"],
  capabilities: {
    per_record_completions: true,
    flush_barrier: true,
    abort: true,
    synchronous_rejection: true,
    virtual_time: true,
    classifies_certainty: true,
  },
}

const reply = (r) => process.stdout.write(JSON.stringify(r) + "\n")

let tickets = 0
let barriers = 0
let closed = false
const closedTwice = (op) => {
  if (op === "submit") return { ok: true, result: closed ? { rejected: "closed" } : { ticket: tickets++ } }
  if (op === "flush") return { ok: true, result: closed ? { rejected: "closed" } : { barrier: barriers++ } }
  if (op === "close" || op === "abort") {
    if (closed) return { ok: true, result: { closed: "ok" } }
    closed = true
    return { ok: true, result: null, observed: [{ kind: "closed", ok: true }, { kind: "closed", ok: true }] }
  }
  return { ok: true, result: null, observed: [] }
}

for await (const line of createInterface({ input: process.stdin })) {
  const op = JSON.parse(line).op
  if (mode === "ok-to-everything") {
    reply({ ok: true })
    if (op === "stop") process.exit(0)
  } else if (mode === "refuse-everything" && op !== "hello" && op !== "stop") {
    reply({ ok: false, unsupported: `${op}: this SDK does nothing` })
  } else if (op === "hello" && mode.startsWith("hello=")) {
    process.stdout.write(mode.slice(6) + "\n")
  } else if (op === "hello") {
    reply(hello)
  } else if (op === "start" && mode.startsWith("start=")) {
    process.stdout.write(mode.slice(6) + "\n")
  } else if (op === "start") {
    if (mode === "exit-at-start") process.exit(1)
    tickets = barriers = 0
    closed = false
    reply({ ok: true })
  } else if (op === "stop") {
    reply({ ok: true })
    process.exit(0)
  } else if (mode === "closed-twice") {
    reply(closedTwice(op))
  } else if (mode.startsWith("result=")) {
    process.stdout.write(`{"ok": true, "result": ${mode.slice(7)}, "observed": []}\n`)
  } else if (mode.startsWith("observe=")) {
    process.stdout.write(`{"ok": true, "result": {"ticket": 0}, "observed": [${mode.slice(8)}]}\n`)
  } else if (mode === "crash") {
    process.exit(3)
  } else if (mode === "garbage") {
    process.stdout.write("this is not json\n")
  } else if (mode === "bad-ok") {
    reply({ ok: "yes", result: null, observed: [] })
  } else if (mode === "error") {
    reply({ ok: false, error: { message: "the SDK threw" } })
  } else if (mode === "bad-type") {
    reply({ ok: true, result: { ticket: "zero" }, observed: [] })
  } else if (mode === "bad-observed") {
    reply({ ok: true, result: { ticket: 0 }, observed: "oops" })
  } else if (mode === "bad-kind") {
    reply({ ok: true, result: { ticket: 0 }, observed: [{ kind: "Done", first: 0, last: 0, ok: true }] })
  } else {
    reply({ ok: false, error: { message: `unknown mode '${mode}'` } })
  }
}
