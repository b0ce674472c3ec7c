#!/usr/bin/env bash
# The whole test command. Installs what is missing, then:
#   1. default preset (g++-12): build, every test (unit, codec, conformance properties and
#      vectors, integration against the reference server, install);
#   2. asan-ubsan preset (clang-14, ASan + UBSan): build, every test again;
#   3. tsan preset (clang-14, ThreadSanitizer): the integration tests (threads, sockets);
#   4. fuzz preset (clang-14, libFuzzer + ASan + UBSan): each fuzz target for 20 s.
# Prints ctest's summary of every stage; the exit status is non-zero if any stage failed.
# PRODSM_TEST_STAGES="default asan-ubsan tsan fuzz" selects stages (default: all).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

stages="${PRODSM_TEST_STAGES:-default asan-ubsan tsan fuzz}"
fuzz_seconds="${PRODSM_FUZZ_SECONDS:-20}"
summary=""
failures=""
status=0
log_dir=$(mktemp -d)

# Builds a preset, showing only what is not a progress line (errors, warnings).
build() {  # preset [targets...]
  local preset="$1"
  shift
  cmake --preset "$preset" >/dev/null || return 1
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake --build --preset "$preset" "${targets[@]}" | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
  return "${PIPESTATUS[0]}"
}
export -f build

# The tsan stage builds only the test executables that need ThreadSanitizer. A test
# executable it does not build leaves ctest one unlabelled placeholder test, which the
# preset's label filter drops without a word: so every executable left unbuilt must be
# one of these (none labelled integration), or the stage fails naming it.
tsan_unbuilt_allowed="prodsm_core_tests prodsm_codec_tests prodsm_tools_tests prodsm_conformance_tests \
prodsm_http_tests prodsm_s2_codec_tests prodsm_cli_conform_tests"
check_unbuilt() {  # build dir
  local missing=()
  local exe
  for exe in $(ctest --test-dir "$1" -N 2>/dev/null | grep -oE 'Test +#[0-9]+: [A-Za-z0-9_-]+_NOT_BUILT' |
               sed -E 's/.*: //; s/_NOT_BUILT$//'); do
    case " $tsan_unbuilt_allowed " in
      *" $exe "*) ;;
      *) missing+=("$exe") ;;
    esac
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: the tsan stage does not build ${missing[*]}: its tests would be skipped silently" >&2
    return 1
  fi
}
export tsan_unbuilt_allowed
export -f check_unbuilt

run_stage() {  # name, then the command
  local name="$1"
  shift
  local start=$SECONDS
  echo "=== $name"
  if "$@" 2>&1 | tee "$log_dir/$name.log"; then
    local result="ok"
  else
    local result="FAILED"
    status=1
  fi
  local line
  line=$(grep -E 'tests passed|tests failed out of' "$log_dir/$name.log" | tail -n 1)
  [ -z "$line" ] && line=$(grep -E '^(producer_events|http_response|http_transport|config_validation|record_reader|s2_response|stream_reader) ' "$log_dir/$name.log" | tr '\n' ';')
  summary+=$(printf '%-12s %-7s %5ss  %s' "$name" "$result" "$((SECONDS - start))" "$line")$'\n'
  if [ "$result" = FAILED ]; then failures+=$(failure_excerpt "$name" "$log_dir/$name.log")$'\n'; fi
}

# What failed in a stage, kept short so that it survives in the last lines of a CI log:
# ctest's list of failed tests, and from each test's output the lines that say why
# (GoogleTest's failure lines and what follows them, a sanitizer's first report line),
# each line cut at 300 characters (a failed string comparison prints whole streams).
failure_excerpt() {  # name, log
  echo "--- $1: what failed"
  sed -n '/^The following tests FAILED:/,/^$/p' "$2" | head -n 20 | cut -c1-300
  grep -E -A6 '(: Failure$|^(==|\*\*)[0-9]+==?ERROR|runtime error:|WARNING: ThreadSanitizer|check_install: |^Errors while running CTest|error: )' "$2" |
    grep -vE '^\[ +(RUN|OK) +\]' | head -n 40 | cut -c1-300
}

for stage in $stages; do
  case "$stage" in
    default|asan-ubsan)
      run_stage "$stage" bash -c "build $stage && ctest --preset $stage" ;;
    tsan)
      run_stage tsan bash -c "build tsan prodsm_asio_integration_tests prodsm_blocking_integration_tests prodsm_cli_tests prodsm \
        prodsm_cli_hostile_tests prodsm_s2_integration_tests prodsm_resolver_tests \
        prodsm_ds_conformance_tests prodsm-ds-conformance-adapter prodsm_epoll_producer && check_unbuilt build/tsan \
        && ctest --preset tsan" ;;
    fuzz)
      run_stage fuzz scripts/fuzz.sh --seconds "$fuzz_seconds" ;;
    *) echo "test.sh: unknown stage '$stage'" >&2; status=2 ;;
  esac
done

echo
[ -n "$failures" ] && printf '%s' "$failures"
echo "=== summary"
printf '%s' "$summary"
rm -rf "$log_dir"
exit "$status"
