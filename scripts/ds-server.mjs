#!/usr/bin/env node
// Launch the Durable Streams reference server (@durable-streams/server) for tests.
//
// Usage: node scripts/ds-server.mjs [--port N] [--host H] [--ignore-stdin] [--exit-with-pid P]
//   --port N           listen port (default 0 = pick a free port)
//   --host H           listen host (default 127.0.0.1)
//   --ignore-stdin     do not exit when stdin closes (for `&` from a shell whose
//                      stdin is /dev/null; stop it with SIGTERM instead)
//   --exit-with-pid P  also exit within a second of process P ending, at once (a server
//                      that outlives the command that started it, e.g. one per ctest run)
//
// Fault mixes, beside the server's own POST /_test/inject-error (one fault per path):
//   POST /_test/fault-mix {"path": P, "method": M, "probability": p, "faults": [F, ...],
//                          "seed": S}
// makes each request to P (with method M, when given) fail with probability p, as one of
// the faults F (the server's own fault configs: {"dropConnection": true},
// {"status": 503, "retryAfter": 0}, {"delayMs": 150, "jitterMs": 100}, ...) chosen at
// random with a generator seeded by S — several kinds of fault in one run, as real faults
// come. DELETE /_test/fault-mix removes every mix; GET /_test/fault-mix returns how many
// faults of each kind were injected ({"injected": [n0, n1, ...]} per mix path).
// DELETE /_test/fault-mix?path=P and DELETE /_test/inject-error?path=P remove only the
// mix or the injected fault of path P, so tests sharing one server clear only their own.
//
// Prints exactly one line to stdout, the base URL (e.g. http://127.0.0.1:40123);
// streams live directly under it (any path, e.g. <url>/my/stream). Storage is
// in-memory. Exits 0 after a clean stop on SIGTERM, SIGINT or EOF on stdin, so
// a parent test process that dies (closing our stdin pipe) takes us with it.
import { parseWatchPid, whenProcessEnds } from "./watch-pid.mjs"

const args = process.argv.slice(2)
let port = 0
let host = "127.0.0.1"
let watchStdin = true
let watchPid = null
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--port") port = Number(args[++i])
  else if (args[i] === "--host") host = args[++i]
  else if (args[i] === "--ignore-stdin") watchStdin = false
  else if (args[i] === "--exit-with-pid") watchPid = parseWatchPid(args[++i], "ds-server")
  else {
    console.error(`ds-server: unknown argument ${args[i]}`)
    process.exit(2)
  }
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("ds-server: --port needs an integer 0..65535")
  process.exit(2)
}

// The server library logs through console.info/console.log; keep stdout for the
// URL line only by sending those to stderr.
console.info = console.log = (...a) => console.error(...a)

let server = null // created after the shutdown triggers are in place
let started = null // promise of start()

// Shutdown triggers are installed before start() so that an early SIGTERM or
// EOF still ends in a clean exit 0.
let stopping = false
async function shutdown(why) {
  if (stopping) return
  stopping = true
  console.error(`ds-server: stopping (${why})`)
  // stop() waits for open connections; don't hang forever on a stuck client.
  setTimeout(() => process.exit(0), 3000).unref()
  try {
    if (started) {
      await started
      await server.stop()
    }
  } catch (err) {
    console.error("ds-server: stop failed:", err)
  }
  process.exit(0)
}
process.on("SIGTERM", () => shutdown("SIGTERM"))
process.on("SIGINT", () => shutdown("SIGINT"))
process.stdout.on("error", () => {}) // parent closed our stdout: not fatal
if (watchStdin) {
  process.stdin.on("data", () => {}) // discard input; we only care about EOF
  process.stdin.on("end", () => shutdown("stdin closed"))
  process.stdin.on("error", () => shutdown("stdin error"))
  process.stdin.resume()
}
if (watchPid !== null) {
  whenProcessEnds(watchPid, () => {
    console.error(`ds-server: stopping (process ${watchPid} ended)`)
    process.exit(0) // nobody is left to serve: no wait for open connections
  })
}

// Imported lazily so the handlers above already cover module loading.
// No dataDir => in-memory StreamStore; start() resolves to the base URL and
// reports the real port when port is 0.
const { DurableStreamTestServer } = await import("@durable-streams/server")

// A small deterministic generator (mulberry32), so a seeded mix repeats.
function generator(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class FaultMixServer extends DurableStreamTestServer {
  mixes = new Map() // path -> { method, probability, faults, random, injected }

  async handleRequest(req, res) {
    const url = new URL(req.url ?? "/", "http://localhost")
    const path = url.pathname
    if (path === "/_test/fault-mix") return this.handleFaultMix(req, res, url.searchParams.get("path"))
    if (path === "/_test/inject-error" && req.method === "DELETE" && url.searchParams.has("path")) {
      this.injectedFaults.delete(url.searchParams.get("path")) // one path's, not every path's
      res.writeHead(200, { "content-type": "application/json" })
      return res.end(JSON.stringify({ ok: true }))
    }
    return super.handleRequest(req, res)
  }

  async handleFaultMix(req, res, onlyPath) {
    const reply = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(body))
    }
    if (req.method === "DELETE") {
      if (onlyPath === null) this.mixes.clear()
      else this.mixes.delete(onlyPath)
      return reply(200, { ok: true })
    }
    if (req.method === "GET") {
      const out = {}
      for (const [p, m] of this.mixes) out[p] = { injected: m.injected }
      return reply(200, out)
    }
    if (req.method !== "POST") return reply(405, { error: "method not allowed" })
    let config
    try {
      const chunks = []
      for await (const c of req) chunks.push(c)
      config = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return reply(400, { error: "invalid JSON body" })
    }
    const ok =
      typeof config?.path === "string" &&
      typeof config.probability === "number" &&
      config.probability >= 0 &&
      config.probability <= 1 &&
      Array.isArray(config.faults) &&
      config.faults.length > 0 &&
      config.faults.every((f) => f && typeof f === "object")
    if (!ok) return reply(400, { error: "need path, probability in [0, 1] and a non-empty faults array" })
    this.mixes.set(config.path, {
      method: config.method?.toUpperCase(),
      probability: config.probability,
      faults: config.faults,
      random: generator(Number.isInteger(config.seed) ? config.seed : 1),
      injected: config.faults.map(() => 0),
    })
    return reply(200, { ok: true })
  }

  // The server consults this before handling each request; a mix answers first.
  consumeInjectedFault(path, method) {
    const mix = this.mixes.get(path)
    if (mix && (!mix.method || mix.method === method.toUpperCase()) && mix.random() < mix.probability) {
      const i = Math.floor(mix.random() * mix.faults.length)
      mix.injected[i]++
      return { ...mix.faults[i], count: 1 }
    }
    return super.consumeInjectedFault(path, method)
  }
}

if (!stopping) {
  server = new FaultMixServer({ host, port })
  started = server.start()
}
const url = await started
if (url && !stopping) process.stdout.write(`${url}\n`)
