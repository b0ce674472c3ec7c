#!/usr/bin/env bash
# D1: the core does no I/O, reads no clock, starts no thread, takes no lock and calls no
# user code. Checked two ways: the sources include nothing that could, and the built
# library references no such symbol.
# usage: d1_no_io.sh <core source dir> <path to libprodsm_core.a>
set -euo pipefail
src="$1"
lib="$2"
status=0

forbidden_includes='<(thread|mutex|condition_variable|future|atomic|fstream|iostream|cstdio|stdio\.h|unistd\.h|sys/socket\.h|ctime|time\.h|random|functional)>'
if grep -rnE "#include ${forbidden_includes}" "$src"; then
  echo "D1 violated: the core includes a header for I/O, threads, clocks or callbacks" >&2
  status=1
fi
# Comment lines may name what the core avoids; code lines may not.
if grep -rnE '(steady_clock|system_clock|high_resolution_clock)::now|std::function|std::thread|getenv|rand\(' "$src" \
    | grep -vE '^[^:]+:[0-9]+:\s*//'; then
  echo "D1 violated: the core reads a clock, the environment or calls user code" >&2
  status=1
fi

# Undefined symbols the library needs from outside: none may be I/O, clock or thread.
undefined=$(nm -u --demangle "$lib" | awk '{print $NF}' | sort -u)
bad=$(printf '%s\n' "$undefined" | grep -E '^(clock_gettime|gettimeofday|time|read|write|send|recv|sendto|recvfrom|socket|connect|poll|epoll_.*|select|open|open64|fopen|fwrite|fread|printf|puts|pthread_create|pthread_mutex_lock|getenv|std::chrono::_V2::(steady|system)_clock::now\(\))$' || true)
if [ -n "$bad" ]; then
  echo "D1 violated: $(basename "$lib") references: $bad" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "D1 ok: no I/O, clock, thread or callback in $(basename "$lib") ($(printf '%s\n' "$undefined" | wc -l) undefined symbols checked)"
exit "$status"
