#!/usr/bin/env bash
# Fault benchmark: `prodsm produce` of N numbered lines (8 KiB batches, idempotent
# producer) to the reference server on loopback, without faults and with 2% of the
# stream's POSTs failing, side by side. Every run's stream is read back and compared with
# the input byte for byte: a figure only counts when every record arrived exactly once
# and in order.
#
# Cases (faults through scripts/ds-server.mjs's /_test/fault-mix, several kinds in one run):
#   none        no faults
#   mix         2%: dropped connection, 503, 500, 429 with Retry-After: 0 (equal shares)
#   slow        2%: responses delayed 150-250 ms
#   mix+slow    2%: the mix above plus slow responses (equal shares of five)
#   takeover    no faults; a second incarnation claims the producer id at epoch 1 mid-run
#               (--auto-claim: ours claims epoch 2 and goes on)
# Usage: bench/faults/run.sh [records] [repeats]   (defaults: 1000000, 3; medians printed)
set -euo pipefail
cd "$(dirname "$0")/../.."
records="${1:-1000000}"
repeats="${2:-3}"
scripts/install-deps.sh >/dev/null
scripts/build.sh default >/dev/null
prodsm=build/default/tools/prodsm
work=$(mktemp -d)
trap 'kill "$SERVER_PID" 2>/dev/null || true; rm -rf "$work"' EXIT
seq -f 'r%09g' "$records" > "$work/input"
coproc SERVER { exec node scripts/ds-server.mjs; }
read -r url <&"${SERVER[0]}"

drop='{"dropConnection":true}'
s503='{"status":503}'
s500='{"status":500}'
s429='{"status":429,"retryAfter":0}'
slow='{"delayMs":150,"jitterMs":100}'
mix_of() {  # path faults...
  local path="$1"; shift
  local faults; faults=$(IFS=,; echo "$*")
  printf '{"path":"%s","method":"POST","probability":0.02,"seed":%d,"faults":[%s]}' "$path" "$RANDOM" "$faults"
}

# run_case NAME -> prints "records_per_s retries gap_resends stalls connections ok|BAD"
# (runs in a subshell: every run gets a stream of its own from the clock)
run_case() {
  local name="$1"
  local n; n=$(date +%s%N)
  local path="/bench-$name-$n"
  curl -sf -X PUT -H 'Content-Type: application/octet-stream' "$url$path" -o /dev/null
  local flags=(--max-batch-bytes 8192 --progress never)
  case "$name" in
    mix) curl -sf -X POST -d "$(mix_of "$path" "$drop" "$s503" "$s500" "$s429")" "$url/_test/fault-mix" -o /dev/null ;;
    slow) curl -sf -X POST -d "$(mix_of "$path" "$slow")" "$url/_test/fault-mix" -o /dev/null ;;
    mix+slow) curl -sf -X POST -d "$(mix_of "$path" "$drop" "$s503" "$s500" "$s429" "$slow")" "$url/_test/fault-mix" -o /dev/null ;;
    takeover) flags+=(--producer-id "bench-takeover-$n" --auto-claim) ;;
  esac
  local takeover_pid=""
  if [ "$name" = takeover ]; then
    ( sleep 0.1
      curl -sf -X POST -H 'Content-Type: application/octet-stream' -H "Producer-Id: bench-takeover-$n" \
        -H 'Producer-Epoch: 1' -H 'Producer-Seq: 0' --data-binary $'TAKEOVER\n' "$url$path" -o /dev/null ) &
    takeover_pid=$!
  fi
  local out
  out=$("$prodsm" produce "$url$path" -i "$work/input" "${flags[@]}" 2>&1) || true
  [ -n "$takeover_pid" ] && wait "$takeover_pid"
  curl -sf -X DELETE "$url/_test/fault-mix" -o /dev/null
  curl -sf "$url$path?offset=-1" -o "$work/got"
  [ "$name" = takeover ] && { grep -v '^TAKEOVER$' "$work/got" > "$work/got2" || true; mv "$work/got2" "$work/got"; }
  local verdict=ok
  cmp -s "$work/got" "$work/input" || verdict=BAD
  local rate retries gaps stalls conns
  rate=$(awk '/^throughput/ {print $2}' <<<"$out")
  retries=$(awk '/^resends/ {print $2}' <<<"$out")
  gaps=$(awk '/^resends/ {print $4}' <<<"$out")
  stalls=$(awk '/^transport/ {print $7}' <<<"$out")
  conns=$(awk '/^transport/ {print $2}' <<<"$out")
  echo "${rate:-0} ${retries:-?} ${gaps:-?} ${stalls:-?} ${conns:-?} $verdict"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "$records records (11 B lines), 8 KiB batches, idempotent producer, pipelined, loopback; median of $repeats runs"
echo
echo "| case | records/s | vs none | retries | gap resends | stalls | connections | stream |"
echo "|---|---|---|---|---|---|---|---|"
run_case none >/dev/null  # warm-up: the server's JIT, the page cache
base=""
for name in none mix slow mix+slow takeover; do
  rows=()
  for _ in $(seq "$repeats"); do rows+=("$(run_case "$name")"); done
  rate=$(printf '%s\n' "${rows[@]}" | awk '{print $1}' | median)
  [ "$name" = none ] && base="$rate"
  ratio=$(awk -v r="$rate" -v b="$base" 'BEGIN {printf "%.2f", (b > 0) ? r / b : 0}')
  last=(${rows[-1]})
  verdicts=$(printf '%s\n' "${rows[@]}" | awk '{print $6}' | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(printf "%.0f" "$rate")" "$ratio" \
    "${last[1]}" "${last[2]}" "${last[3]}" "${last[4]}" "$verdicts"
done
echo
echo "(retries, gap resends, stalls and connections are from the last run of each case)"
