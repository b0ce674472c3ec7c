#!/usr/bin/env bash
# End-to-end benchmark of the S2 path beside Durable Streams: prodsm's Asio producers,
# the same workload (records of B bytes, linger 5 ms), against the S2 test server
# (tests/s2-server/server.mjs) and the Durable Streams reference server, both on
# loopback; prints one table. Figures only, no assertions.
# Usage: bench/e2e/run_s2.sh [records] [record-bytes] [flush-iterations]
set -euo pipefail
cd "$(dirname "$0")/../.."
records="${1:-200000}"
bytes="${2:-100}"
iterations="${3:-200}"
scripts/install-deps.sh >/dev/null
scripts/build.sh default >/dev/null
basin=bench-basin
coproc S2 { exec node tests/s2-server/server.mjs --basin "$basin"; }
read -r s2_url <&"${S2[0]}"
coproc DS { exec node scripts/ds-server.mjs; }
read -r ds_url <&"${DS[0]}"
trap 'kill "$S2_PID" "$DS_PID" 2>/dev/null || true' EXIT
s2=$(build/default/bench/prodsm_bench_e2e_s2 "$s2_url" "$basin" "$records" "$bytes" "$iterations")
ds=$(build/default/bench/prodsm_bench_e2e "$ds_url" "$records" "$bytes" "$iterations")
node -e '
const [s, d, records, bytes] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), process.argv[3], process.argv[4]]
const n = (x) => Math.round(x).toLocaleString("en")
const f = (r) => `${r.p50_ms.toFixed(2)} / ${r.p99_ms.toFixed(2)}`
console.log(`${records} records of ${bytes} B, linger 5 ms, loopback test servers\n`)
console.log("| path | records/s | MB/s | flush p50/p99 ms (linger 5 ms) | flush p50/p99 ms (linger 1000 ms) |")
console.log("|---|---|---|---|---|")
console.log(`| S2, unary appends, 1 in flight | ${n(s.throughput_unary.records_per_s)} | ${s.throughput_unary.mb_per_s.toFixed(1)} | ${f(s.flush_linger_5ms)} | ${f(s.flush_linger_1000ms)} |`)
console.log(`| S2, match_seq_num, 5 in flight (pipelined) | ${n(s.throughput_pipelined.records_per_s)} | ${s.throughput_pipelined.mb_per_s.toFixed(1)} | | |`)
console.log(`| Durable Streams, idempotent, 5 in flight (pipelined) | ${n(d.throughput.records_per_s)} | ${d.throughput.mb_per_s.toFixed(1)} | ${f(d.flush_linger_5ms)} | ${f(d.flush_linger_1000ms)} |`)
' "$s2" "$ds" "$records" "$bytes"
