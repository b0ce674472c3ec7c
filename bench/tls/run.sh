#!/usr/bin/env bash
# TLS against plaintext, end to end: `prodsm bench` (idempotent producer, pipelined) to the
# reference server three ways — direct, through a plaintext TCP proxy, and through a TLS
# proxy (scripts/tls-proxy.mjs, the same Node piping with TLS) — so the cost of TLS is the
# difference between the last two rows, and the proxy's own cost the first two.
# Usage: bench/tls/run.sh [records] [record-bytes] [runs]   (prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/../.."
records="${1:-1000000}"
bytes="${2:-100}"
runs="${3:-3}"
scripts/install-deps.sh >/dev/null
scripts/build.sh default >/dev/null
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
tests/tls/make-certs.sh "$work/certs" >/dev/null 2>&1

start() {  # start NAME COMMAND...: runs it, waits for its first stdout line (its URL)
  local name="$1"
  shift
  "$@" --ignore-stdin >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  for _ in $(seq 1 100); do
    [ -s "$work/$name.out" ] && break
    sleep 0.1
  done
  head -n 1 "$work/$name.out"
}
plain=$(start ds node scripts/ds-server.mjs)
target="${plain#http://}"
proxied=$(start plain-proxy node scripts/tls-proxy.mjs --plaintext --target "$target")
secure=$(start tls-proxy node scripts/tls-proxy.mjs --cert "$work/certs/server.pem" --key "$work/certs/server.key" \
  --target "$target")

bench() {  # bench URL EXTRA...: the best of $runs runs, as JSON
  local url="$1"
  shift
  local best=""
  for r in $(seq 1 "$runs"); do
    local out
    out=$(build/default/tools/prodsm bench "$url/bench/tls-$RANDOM-$r" --create -n "$records" -s "$bytes" --json "$@")
    best=$(node -e 'const [a, b] = process.argv.slice(1).map((s) => (s ? JSON.parse(s) : null));
      console.log(JSON.stringify(!a || b.records_per_s > a.records_per_s ? b : a))' "$best" "$out")
  done
  echo "$best"
}
direct_json=$(bench "$plain")
proxy_json=$(bench "$proxied")
tls_json=$(bench "$secure" --cacert "$work/certs/ca.pem")
node -e '
const [d, p, t, records, bytes, runs] = process.argv.slice(1)
const row = (name, s) => { const r = JSON.parse(s); return `| ${name} | ${Math.round(r.records_per_s).toLocaleString("en")} | ${(r.bytes_per_s / 1048576).toFixed(1)} | ${r.latency_ms.p50.toFixed(2)} / ${r.latency_ms.p99.toFixed(2)} | ${r.connections} |` }
console.log(`${records} records of ${bytes} B, prodsm bench defaults (idempotent, pipelined), best of ${runs} runs\n`)
console.log("| path | records/s | MiB/s | submit-to-ack p50 / p99 ms | connections |")
console.log("|---|---|---|---|---|")
console.log(row("direct (http)", d))
console.log(row("plaintext proxy (http)", p))
console.log(row("TLS proxy (https, verified)", t))
const ratio = JSON.parse(t).records_per_s / JSON.parse(p).records_per_s
console.log(`\nhttps / plaintext through the same proxy: ${ratio.toFixed(2)}x records/s`)
' "$direct_json" "$proxy_json" "$tls_json" "$records" "$bytes" "$runs"
