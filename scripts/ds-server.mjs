#!/usr/bin/env node
// Launch the Durable Streams reference server (@durable-streams/server) for tests.
//
// Usage: node scripts/ds-server.mjs [--port N] [--host H] [--ignore-stdin]
//   --port N        listen port (default 0 = pick a free port)
//   --host H        listen host (default 127.0.0.1)
//   --ignore-stdin  do not exit when stdin closes (for `&` from a shell whose
//                   stdin is /dev/null; stop it with SIGTERM instead)
//
// Prints exactly one line to stdout, the base URL (e.g. http://127.0.0.1:40123);
// streams live directly under it (any path, e.g. <url>/my/stream). Storage is
// in-memory. Exits 0 after a clean stop on SIGTERM, SIGINT or EOF on stdin, so
// a parent test process that dies (closing our stdin pipe) takes us with it.
const args = process.argv.slice(2)
let port = 0
let host = "127.0.0.1"
let watchStdin = true
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--port") port = Number(args[++i])
  else if (args[i] === "--host") host = args[++i]
  else if (args[i] === "--ignore-stdin") watchStdin = false
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

// Imported lazily so the handlers above already cover module loading.
// No dataDir => in-memory StreamStore; start() resolves to the base URL and
// reports the real port when port is 0.
const { DurableStreamTestServer } = await import("@durable-streams/server")
if (!stopping) {
  server = new DurableStreamTestServer({ host, port })
  started = server.start()
}
const url = await started
if (url && !stopping) process.stdout.write(`${url}\n`)
