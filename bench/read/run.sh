#!/usr/bin/env bash
# Bounded-memory read: `prodsm read` of a stream of SIZE MiB (default 100) from the
# reference server on loopback, which answers a catch-up read in one response. Prints
# the read's wall time, peak RSS (GNU time's "Maximum resident set size") and the
# output's check against the input (cmp): a figure only counts when the output is the
# stream, byte for byte.
# Usage: bench/read/run.sh [size-mib] [repeats] [bytes|json]   (defaults: 100, 3, bytes)
# json: a JSON stream of 100-byte lines (one JSON string each), read with --json (every
# element validated, printed as one array).
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib="${1:-100}"
repeats="${2:-3}"
mode="${3:-bytes}"
scripts/install-deps.sh >/dev/null
cmake --preset default >/dev/null
cmake --build --preset default --target prodsm >/dev/null
prodsm=build/default/tools/prodsm
[ -x /usr/bin/time ] || { echo "bench/read: needs GNU time (/usr/bin/time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill "$SERVER_PID" 2>/dev/null || true; rm -rf "$work"' EXIT
# SIZE MiB of 100-byte lines.
lines=$(( size_mib * 1048576 / 100 ))
if [ "$mode" = json ]; then
  seq -f '"%097g"' "$lines" > "$work/input"
  flags=(--json)
  { printf '['; paste -sd, "$work/input" | tr -d '\n'; printf ']\n'; } > "$work/expected"
else
  seq -f 'line %094g' "$lines" > "$work/input"
  flags=()
  cp "$work/input" "$work/expected"
fi
coproc SERVER { exec node scripts/ds-server.mjs; }
read -r url <&"${SERVER[0]}"
stream="$url/bench-read-$(date +%s%N)"
"$prodsm" produce "$stream" --create "${flags[@]}" -i "$work/input" --progress never -q >/dev/null
bytes=$(stat -c %s "$work/input")
echo "stream ($mode): $bytes bytes ($lines lines) at $stream"
for i in $(seq "$repeats"); do
  /usr/bin/time -v "$prodsm" read "$stream" "${flags[@]}" -o "$work/output" 2>"$work/time" >/dev/null
  rss_kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")
  if cmp -s "$work/expected" "$work/output"; then ok=ok; else ok=BAD; fi
  printf 'run %d: wall %s, peak RSS %d KiB (%.1f MiB), output %s\n' "$i" "$wall" "$rss_kib" \
    "$(awk -v k="$rss_kib" 'BEGIN { print k / 1024 }')" "$ok"
  rm -f "$work/output"
done
