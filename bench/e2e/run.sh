#!/usr/bin/env bash
# End-to-end benchmark: prodsm's Asio producer and the TypeScript IdempotentProducer,
# same workload, same reference server on loopback; prints both and their ratio.
# Usage: bench/e2e/run.sh [records] [record-bytes] [flush-iterations]
set -euo pipefail
cd "$(dirname "$0")/../.."
records="${1:-1000000}"
bytes="${2:-100}"
iterations="${3:-200}"
# Figures come from the release preset (invariants off); PRODSM_BENCH_PRESET=default
# reuses the test build.
preset="${PRODSM_BENCH_PRESET:-release}"
scripts/install-deps.sh >/dev/null
scripts/build.sh "$preset" >/dev/null
coproc SERVER { exec node scripts/ds-server.mjs; }
read -r url <&"${SERVER[0]}"
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
prodsm=$(build/"$preset"/bench/prodsm_bench_e2e "$url" "$records" "$bytes" "$iterations")
# The CLI's load test, same workload (idempotent, linger 5 ms, 5 in flight, 1 MiB batches).
cli=$(build/"$preset"/tools/prodsm bench "$url/bench-cli/$$" --create -n "$records" -s "$bytes" --linger-ms 5 \
        --max-in-flight 5 --max-batch-bytes 1048576 --producer-id bench-cli --report-interval-ms 0 --json)
ts=$(node bench/e2e/ts_producer.mjs "$url" "$records" "$bytes" "$iterations")
node -e '
const [p, t, c, records, bytes] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), JSON.parse(process.argv[3]), process.argv[4], process.argv[5]]
const row = (name, r) => `| ${name} | ${Math.round(r.throughput.records_per_s).toLocaleString("en")} | ${r.throughput.mb_per_s.toFixed(1)} | ${r.flush_linger_5ms.p50_ms.toFixed(2)} / ${r.flush_linger_5ms.p99_ms.toFixed(2)} | ${r.flush_linger_1000ms.p50_ms.toFixed(2)} / ${r.flush_linger_1000ms.p99_ms.toFixed(2)} |`
console.log(`${records} records of ${bytes} B, idempotent producer, linger 5 ms, 5 in flight\n`)
console.log("| producer | records/s | MB/s | flush p50/p99 ms (linger 5 ms) | flush p50/p99 ms (linger 1000 ms) |")
console.log("|---|---|---|---|---|")
console.log(row("prodsm (pipelined)", p))
console.log(`| prodsm (pool) | ${Math.round(p.throughput_pool.records_per_s).toLocaleString("en")} | ${p.throughput_pool.mb_per_s.toFixed(1)} | | |`)
console.log(row("TypeScript IdempotentProducer", t))
console.log(`\nratio prodsm/TypeScript: ${(p.throughput.records_per_s / t.throughput.records_per_s).toFixed(2)}x records/s`)
console.log(`\nclient CPU per record (process user + system time / records):`)
console.log(`| client | records/s | client CPU ns/record |`)
console.log(`|---|---|---|`)
console.log(`| prodsm bench (CLI, submit_many chunks) | ${Math.round(c.records_per_s).toLocaleString("en")} | ${c.client_cpu_ns_per_record.toFixed(0)} |`)
console.log(`| prodsm_bench_e2e (submit_blocking per record) | ${Math.round(p.throughput.records_per_s).toLocaleString("en")} | ${p.throughput.client_cpu_ns_per_record.toFixed(0)} |`)
console.log(`| TypeScript IdempotentProducer | ${Math.round(t.throughput.records_per_s).toLocaleString("en")} | ${t.throughput.client_cpu_ns_per_record.toFixed(0)} |`)
console.log(`prodsm pool: ${p.throughput_pool.gap_resends} gap resends over ${p.throughput_pool.batches} batches; pipelined: ${p.throughput.gap_resends} over ${p.throughput.batches}`)
' "$prodsm" "$ts" "$cli" "$records" "$bytes"
