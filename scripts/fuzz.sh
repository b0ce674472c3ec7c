#!/usr/bin/env bash
# Runs the libFuzzer targets (preset `fuzz`: clang-14, -fsanitize=fuzzer,address,undefined).
#   scripts/fuzz.sh [--seconds N] [target ...]   bounded run on a scratch copy of each corpus;
#                                                fails on any crash (the test command uses it)
#   scripts/fuzz.sh --long N [target ...]        run N seconds each, then merge new inputs
#                                                into fuzz/corpus/<target> (minimized)
#   --jobs J                                     targets fuzzed at once (default: nproc)
# Targets: producer_events http_response http_transport config_validation record_reader s2_response stream_reader (default: all).
# Prints, per target, executions per second and total executions.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30
merge=0
jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --long) seconds="$2"; merge=1; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
case "$jobs" in
  '' | *[!0-9]* | 0) echo "fuzz.sh: --jobs wants a whole number of targets at once, at least 1 (got '$jobs')" >&2; exit 2 ;;
esac
[ ${#targets[@]} -gt 0 ] || targets=(producer_events http_response http_transport config_validation record_reader s2_response stream_reader)

cmake --preset fuzz >/dev/null
# Progress lines hidden; a compile error (ninja prints it on stdout) still shows.
cmake --build --preset fuzz --target "${targets[@]/#/fuzz_}" | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
# Sets `dict` to the libFuzzer flag naming fuzz/<target>.dict, or to nothing without one.
set_dict() {  # target
  dict=()
  if [ -f "fuzz/$1.dict" ]; then dict=(-dict="fuzz/$1.dict"); fi
}
# One target's bounded run: its log, its artifacts, and a file saying ok or failed.
fuzz_one() {  # target
  local t="$1"
  local bin="build/fuzz/fuzz/fuzz_$t"
  local dict
  set_dict "$t"
  mkdir -p "$scratch/$t" "$scratch/artifacts-$t"
  # New inputs go to the scratch directory; the committed corpus is only read.
  if "$bin" "$scratch/$t" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" -timeout=20 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$scratch/artifacts-$t/" >"$scratch/$t.log" 2>&1; then
    echo ok >"$scratch/$t.result"
  else
    echo "FAILED (see below)" >"$scratch/$t.result"
  fi
}
# The targets run `jobs` at a time (one per core): each still fuzzes for its full time.
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
printf '%-20s %12s %16s %s\n' target "exec/s" "executions" result
for t in "${targets[@]}"; do
  bin="build/fuzz/fuzz/fuzz_$t"
  log="$scratch/$t.log"
  result=$(cat "$scratch/$t.result" 2>/dev/null || echo "FAILED (no result)")
  [ "$result" = ok ] || status=1
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
  rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
  printf '%-20s %12s %16s %s\n' "$t" "${rate:-?}" "${execs:-?}" "$result"
  if [ "$result" != ok ]; then
    grep -E -A30 'ERROR|==[0-9]+==|Test unit written|SUMMARY' "$log" | head -60 || tail -n 20 "$log"
    if compgen -G "$scratch/artifacts-$t/*" >/dev/null; then
      mkdir -p fuzz/findings && cp "$scratch/artifacts-$t"/* fuzz/findings/
      echo "crash inputs copied to fuzz/findings/ (reproduce: $bin fuzz/findings/<file>)"
    fi
  fi
  if [ "$merge" = 1 ] && [ "$result" = ok ]; then
    set_dict "$t"
    if "$bin" -merge=1 "fuzz/corpus/$t" "$scratch/$t" "${dict[@]}" >"$scratch/$t.merge.log" 2>&1; then
      echo "  merged: fuzz/corpus/$t now has $(ls "fuzz/corpus/$t" | wc -l) inputs"
    else
      echo "  merging into fuzz/corpus/$t FAILED:"
      tail -n 20 "$scratch/$t.merge.log"
      status=1
    fi
  fi
done
exit "$status"
