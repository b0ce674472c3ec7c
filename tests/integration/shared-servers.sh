#!/usr/bin/env bash
# One Durable Streams reference server (scripts/ds-server.mjs) and one hostile server
# (tests/hostile-server/server.mjs) for all the integration tests of one ctest run: the
# ctest fixture "shared_servers" (tests/CMakeLists.txt). ctest runs every test in a
# process of its own, and a server started per process costs about 0.3 s each time.
#
#   shared-servers.sh start DIR NODE SOURCE_DIR
#       Starts both on free 127.0.0.1 ports; writes DIR/<name>.url (the base URL line),
#       DIR/<name>.pid and DIR/<name>.log for <name> ds-server and hostile-server (its
#       store in DIR/hostile-store); returns once both printed their URL (at most 30 s),
#       exit 1 naming the server and its log otherwise. The servers also stop by
#       themselves within a second of the process that ran this script ending (ctest).
#       Refuses (exit 1) while DIR holds the servers of another ctest run that is still
#       running (two runs in one build directory); a killed run's are stopped first.
#   shared-servers.sh stop DIR
#       Prints each one's peak memory, stops them by PID (SIGTERM, then SIGKILL after
#       5 s), and removes their URL and PID files and the hostile server's store; the
#       logs stay. Servers of another ctest run still running are left alone.
#
# The tests find DIR through PRODSM_TEST_SERVERS_DIR (reference_server.cpp).
set -uo pipefail
servers="ds-server hostile-server"

# Whether process PID is still running: not gone, and not a zombie that the process it
# was handed to (it outlived its parent, this script) has yet to reap.
running() {  # pid
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# The pid of DIR/<name>.pid when it is a server of DIR still running (its working
# directory is DIR, and it watches a process: --exit-with-pid); nothing otherwise (no
# file, gone, or a reused pid that is some other process).
server_pid() {  # dir name
  local pid
  pid=$(cat "$1/$2.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && running "$pid" || return 1
  [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$(cd "$1" && pwd -P)" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--exit-with-pid" || return 1
  echo "$pid"
}

# The process a server watches (its --exit-with-pid: the ctest run it serves).
watched_pid() {  # pid
  tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -A1 -x -- "--exit-with-pid" | tail -n 1
}

# Stops DIR/<name>.pid's server (if it still is one), then removes its files.
stop_one() {  # dir name
  local pid
  if pid=$(server_pid "$1" "$2"); then
    echo "$2 (pid $pid): peak memory $(awk '/^VmHWM/ {print $2, $3}' "/proc/$pid/status" 2>/dev/null)"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do
      running "$pid" || break
      sleep 0.1
    done
    running "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$1/$2.pid" "$1/$2.url"
}

start() {  # dir node source
  local dir="$1" node="$2" source="$3"
  local watch=$PPID
  mkdir -p "$dir" || exit 1
  local name pid
  # Servers another ctest run still uses (two runs in one build directory) are left
  # alone: stopping them would fail that run's tests, with nothing saying why.
  for name in $servers; do
    if pid=$(server_pid "$dir" "$name"); then
      local owner
      owner=$(watched_pid "$pid")
      if [ -n "$owner" ] && [ "$owner" != "$watch" ] && running "$owner"; then
        echo "shared-servers.sh: $dir holds the $name of another ctest run (ctest pid $owner, still" \
          "running): wait for it to end, or run this one in a build directory of its own" >&2
        exit 1
      fi
    fi
  done
  for name in $servers; do stop_one "$dir" "$name"; done  # a killed run's, or ours from --repeat
  rm -rf "$dir/hostile-store"
  # Started in DIR (their working directory identifies them as this DIR's servers).
  (cd "$dir" && exec "$node" "$source/scripts/ds-server.mjs" --ignore-stdin --exit-with-pid "$watch" \
    </dev/null >"$dir/ds-server.url" 2>"$dir/ds-server.log") &
  echo $! >"$dir/ds-server.pid"
  (cd "$dir" && exec "$node" "$source/tests/hostile-server/server.mjs" --store-dir "$dir/hostile-store" \
    --ignore-stdin --exit-with-pid "$watch" </dev/null >"$dir/hostile-server.url" 2>"$dir/hostile-server.log") &
  echo $! >"$dir/hostile-server.pid"
  local give_up=$((SECONDS + 30))  # for both together
  for name in $servers; do
    pid=$(cat "$dir/$name.pid")
    until grep -q . "$dir/$name.url" 2>/dev/null; do
      if ! running "$pid"; then
        echo "shared-servers.sh: $name exited before printing its URL; its log ($dir/$name.log):" >&2
        cat "$dir/$name.log" >&2
        exit 1
      fi
      if [ "$SECONDS" -ge "$give_up" ]; then
        echo "shared-servers.sh: $name printed no URL within 30 s; its log ($dir/$name.log):" >&2
        cat "$dir/$name.log" >&2
        exit 1
      fi
      sleep 0.1
    done
    echo "$name: $(head -n 1 "$dir/$name.url") (pid $pid)"
  done
}

case "${1:-}" in
  start)
    [ $# -eq 4 ] || { echo "usage: $0 start DIR NODE SOURCE_DIR" >&2; exit 2; }
    start "$2" "$3" "$4"
    ;;
  stop)
    [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    for name in $servers; do
      if pid=$(server_pid "$2" "$name"); then
        owner=$(watched_pid "$pid")
        if [ -n "$owner" ] && [ "$owner" != "$PPID" ] && running "$owner"; then
          echo "$name (pid $pid) left running: it serves another ctest run (pid $owner)"
          exit 0
        fi
      fi
    done
    for name in $servers; do stop_one "$2" "$name"; done
    rm -rf "$2/hostile-store"
    ;;
  *)
    echo "usage: $0 start DIR NODE SOURCE_DIR | stop DIR" >&2
    exit 2
    ;;
esac
