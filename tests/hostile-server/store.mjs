// The hostile server's honest part (server.mjs): streams as lists of messages, offsets,
// paged catch-up reads, the idempotent producer's rules, and the store's mirror on disk
// (DIR/<path with "/" as "~">, DIR/<that>.stats) that tests read back.
import fs from "node:fs"
import path from "node:path"

export const offsetText = (n) => `${"0".repeat(16)}_${String(n).padStart(16, "0")}`
export const parseOffset = (text) => {
  if (text === undefined || text === "-1") return 0
  const m = /^0{16}_(\d{16})$/.exec(text)
  return m ? Number(m[1]) : null
}
export const isJson = (ct) => /^application\/json\s*(;|$)/i.test(ct ?? "")
export const fileOf = (storeDir, p) => path.join(storeDir, p.slice(1).replaceAll("/", "~"))

export function storedBytes(s) {
  if (!s.json) return Buffer.concat(s.messages)
  return Buffer.from(`[${s.messages.map((m) => m.toString("utf8").slice(0, -1)).join(",")}]`)
}
/// Mirrors the store to DIR after a request: bytes streams by appending what is new.
export function persist(storeDir, p, s) {
  if (s.json) fs.writeFileSync(fileOf(storeDir, p), storedBytes(s))
  else if (s.persisted === 0) fs.writeFileSync(fileOf(storeDir, p), storedBytes(s))
  else if (s.persisted < s.messages.length) fs.appendFileSync(fileOf(storeDir, p), Buffer.concat(s.messages.slice(s.persisted)))
  s.persisted = s.messages.length
  fs.writeFileSync(`${fileOf(storeDir, p)}.stats`, JSON.stringify(s.stats))
}

export function append(s, body) {
  if (!s.json) {
    s.messages.push(body)
    s.size += body.length
    return true
  }
  let value
  try {
    value = JSON.parse(body.toString("utf8"))
  } catch {
    return false
  }
  const items = Array.isArray(value) ? value : [value]
  if (items.length === 0) return false
  for (const item of items) {
    const m = Buffer.from(JSON.stringify(item) + ",")
    s.messages.push(m)
    s.size += m.length
  }
  return true
}

/// The messages from byte position `at`: up to `limit` bytes (at least one message).
export function page(s, at, limit) {
  let pos = 0
  const out = []
  let bytes = 0
  for (const m of s.messages) {
    if (pos >= at) {
      if (out.length > 0 && bytes + m.length > limit) break
      out.push(m)
      bytes += m.length
    }
    pos += m.length
  }
  const end = at + bytes
  const data = s.json ? Buffer.from(`[${out.map((m) => m.toString("utf8").slice(0, -1)).join(",")}]`) : Buffer.concat(out)
  return { data, end, upToDate: end >= s.size }
}

/// The idempotent producer's rules (PROTOCOL.md): what an honest server answers.
export function producerCheck(s, id, epoch, seq) {
  const state = s.producers.get(id)
  if (state && epoch < state.epoch) return { status: "stale", epoch: state.epoch }
  if (!state || epoch > state.epoch) {
    if (seq !== 0) return { status: "bad-epoch-seq" }
    return { status: "accept", commit: () => s.producers.set(id, { epoch, lastSeq: 0 }) }
  }
  if (seq <= state.lastSeq) return { status: "duplicate", lastSeq: state.lastSeq }
  if (seq !== state.lastSeq + 1) return { status: "gap", expected: state.lastSeq + 1 }
  return { status: "accept", commit: () => (state.lastSeq = seq) }
}
