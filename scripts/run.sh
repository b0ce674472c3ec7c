#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts the Durable Streams reference
# server, produces a real text file (the one you name, or one found on this machine) to a
# new stream with `prodsm produce`, reads it back with `prodsm read`, verifies it is
# byte-for-byte the file, and prints the summary.
# Usage: scripts/run.sh [FILE] [extra `prodsm produce` options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default >/dev/null

file="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$file" ]; then
  for candidate in /usr/share/perl/5.36/unicore/Name.pl /usr/share/common-licenses/GPL-3 /etc/services; do
    if [ -r "$candidate" ]; then file="$candidate"; break; fi
  done
  if [ -z "$file" ]; then
    file=$(find /usr/share/doc -type f -name '*.txt' -size +10k 2>/dev/null | head -n 1)
  fi
fi
[ -r "$file" ] || { echo "run.sh: no readable input file (name one: scripts/run.sh FILE)" >&2; exit 2; }

coproc SERVER { exec node scripts/ds-server.mjs; }
read -r base <&"${SERVER[0]}"
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
stream="$base/prodsm-demo/$(basename "$file")-$$"
echo "reference server: $base"
echo "input:            $file ($(wc -c < "$file") bytes, $(wc -l < "$file") lines)"
echo "stream:           $stream"
echo
build/default/tools/prodsm produce "$stream" --create -i "$file" "$@"
out=$(mktemp)
trap 'rm -f "$out"; kill "$SERVER_PID" 2>/dev/null || true' EXIT
build/default/tools/prodsm read "$stream" -o "$out"
if cmp -s "$file" "$out"; then
  echo "verified:         the stream reads back byte-for-byte identical to $file"
else
  echo "MISMATCH: the stream differs from $file" >&2
  exit 1
fi
