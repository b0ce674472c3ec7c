#!/usr/bin/env node
// A TLS endpoint in front of a plaintext server, for tests: every TLS connection is
// decrypted and piped to the target, byte for byte.
//
// Usage: node scripts/tls-proxy.mjs --cert FILE --key FILE --target HOST:PORT
//                                   [--port N] [--host H] [--client-ca FILE] [--ignore-stdin]
//                                   [--header-check NAME:FILE]
//   --client-ca FILE         require a client certificate signed by this CA (mutual TLS)
//   --plaintext              no TLS: the same piping over plain TCP (prints http://...), so a
//                            benchmark can tell the cost of TLS from the cost of the proxy;
//                            --cert and --key are not needed
//   --header-check NAME:FILE every request must carry header NAME with a value currently
//                            in FILE, one accepted value per line (re-read per request: a
//                            token that rotates, old and new both accepted while a rotation
//                            overlaps); a request
//                            without it is answered 401 and not forwarded. HTTP/1.1 requests
//                            are parsed only as far as their headers for this.
// Prints one line to stdout, the base URL (https://127.0.0.1:PORT), and exits when stdin
// closes (or on SIGTERM), like scripts/ds-server.mjs.
import { readFileSync } from "node:fs"
import net from "node:net"
import tls from "node:tls"

const args = process.argv.slice(2)
const opt = { port: 0, host: "127.0.0.1", watchStdin: true }
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === "--cert") opt.cert = args[++i]
  else if (a === "--key") opt.key = args[++i]
  else if (a === "--target") opt.target = args[++i]
  else if (a === "--port") opt.port = Number(args[++i])
  else if (a === "--host") opt.host = args[++i]
  else if (a === "--client-ca") opt.clientCa = args[++i]
  else if (a === "--header-check") opt.headerCheck = args[++i]
  else if (a === "--ignore-stdin") opt.watchStdin = false
  else if (a === "--plaintext") opt.plaintext = true
  else {
    console.error(`tls-proxy: unknown argument ${a}`)
    process.exit(2)
  }
}
if ((!opt.plaintext && (!opt.cert || !opt.key)) || !opt.target) {
  console.error("tls-proxy: --cert, --key and --target are required (--target only with --plaintext)")
  process.exit(2)
}
const [targetHost, targetPort] = [opt.target.slice(0, opt.target.lastIndexOf(":")), Number(opt.target.slice(opt.target.lastIndexOf(":") + 1))]
let check = null
if (opt.headerCheck) {
  const colon = opt.headerCheck.indexOf(":")
  check = { name: opt.headerCheck.slice(0, colon).toLowerCase(), file: opt.headerCheck.slice(colon + 1) }
}

// Header check: parse each request's head on the way in (Content-Length bodies only, as
// the clients under test send), refuse a request without the current value.
function checkedPipe(client, upstream) {
  let buffer = Buffer.alloc(0)
  let bodyLeft = 0
  client.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk])
    while (buffer.length > 0) {
      if (bodyLeft > 0) {
        const n = Math.min(bodyLeft, buffer.length)
        upstream.write(buffer.subarray(0, n))
        buffer = buffer.subarray(n)
        bodyLeft -= n
        continue
      }
      const end = buffer.indexOf("\r\n\r\n")
      if (end < 0) return
      const head = buffer.subarray(0, end + 4)
      const lines = head.toString("latin1").split("\r\n")
      let length = 0
      let value = null
      for (const line of lines.slice(1)) {
        const c = line.indexOf(":")
        if (c < 0) continue
        const name = line.slice(0, c).trim().toLowerCase()
        const v = line.slice(c + 1).trim()
        if (name === "content-length") length = Number(v)
        if (name === check.name) value = v
      }
      const accepted = readFileSync(check.file, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "")
      if (value === null || !accepted.includes(value)) {
        const body = `bad ${check.name}`
        client.end(`HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
        upstream.destroy()
        return
      }
      upstream.write(head)
      buffer = buffer.subarray(end + 4)
      bodyLeft = length
    }
  })
  client.on("end", () => upstream.end())
}

const onClient = (client) => {
  const upstream = net.connect(targetPort, targetHost)
  if (check) checkedPipe(client, upstream)
  else client.pipe(upstream)
  upstream.pipe(client)
  const close = () => {
    client.destroy()
    upstream.destroy()
  }
  client.on("error", close)
  upstream.on("error", close)
  upstream.on("close", () => client.end())
}
const server = opt.plaintext
  ? net.createServer(onClient)
  : tls.createServer(
      {
        cert: readFileSync(opt.cert),
        key: readFileSync(opt.key),
        ...(opt.clientCa ? { ca: readFileSync(opt.clientCa), requestCert: true, rejectUnauthorized: true } : {}),
      },
      onClient,
    )
server.on("tlsClientError", () => {}) // a refused handshake is the client's business
const stop = () => {
  server.close()
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
if (opt.watchStdin) {
  process.stdin.on("data", () => {})
  process.stdin.on("end", stop)
  process.stdin.on("error", stop)
  process.stdin.resume()
}
server.listen(opt.port, opt.host, () => {
  process.stdout.write(`${opt.plaintext ? "http" : "https"}://${opt.host}:${server.address().port}\n`)
})
