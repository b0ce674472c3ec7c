#!/usr/bin/env bash
# End-to-end benchmark: prodsm's Asio producer and the TypeScript IdempotentProducer,
# same workload, same reference server on loopback; prints both and their ratio.
# Usage: bench/e2e/run.sh [records] [record-bytes] [flush-iterations]
set -euo pipefail
cd "$(dirname "$0")/../.."
records="${1:-1000000}"
bytes="${2:-100}"
iterations="${3:-200}"
scripts/install-deps.sh >/dev/null
scripts/build.sh default >/dev/null
coproc SERVER { exec node scripts/ds-server.mjs; }
read -r url <&"${SERVER[0]}"
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
prodsm=$(build/default/bench/prodsm_bench_e2e "$url" "$records" "$bytes" "$iterations")
ts=$(node bench/e2e/ts_producer.mjs "$url" "$records" "$bytes" "$iterations")
node -e '
const [p, t, records, bytes] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), process.argv[3], process.argv[4]]
const row = (name, r) => `| ${name} | ${Math.round(r.throughput.records_per_s).toLocaleString("en")} | ${r.throughput.mb_per_s.toFixed(1)} | ${r.flush_linger_5ms.p50_ms.toFixed(2)} / ${r.flush_linger_5ms.p99_ms.toFixed(2)} | ${r.flush_linger_1000ms.p50_ms.toFixed(2)} / ${r.flush_linger_1000ms.p99_ms.toFixed(2)} |`
console.log(`${records} records of ${bytes} B, idempotent producer, linger 5 ms, 5 in flight\n`)
console.log("| producer | records/s | MB/s | flush p50/p99 ms (linger 5 ms) | flush p50/p99 ms (linger 1000 ms) |")
console.log("|---|---|---|---|---|")
console.log(row("prodsm (pipelined)", p))
console.log(`| prodsm (pool) | ${Math.round(p.throughput_pool.records_per_s).toLocaleString("en")} | ${p.throughput_pool.mb_per_s.toFixed(1)} | | |`)
console.log(row("TypeScript IdempotentProducer", t))
console.log(`\nratio prodsm/TypeScript: ${(p.throughput.records_per_s / t.throughput.records_per_s).toFixed(2)}x records/s`)
console.log(`prodsm pool: ${p.throughput_pool.gap_resends} gap resends over ${p.throughput_pool.batches} batches; pipelined: ${p.throughput.gap_resends} over ${p.throughput.batches}`)
' "$prodsm" "$ts" "$records" "$bytes"
