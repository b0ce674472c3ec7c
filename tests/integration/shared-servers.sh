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
#   shared-servers.sh stop DIR
#       Prints each one's peak memory, stops them by PID (SIGTERM, then SIGKILL after
#       5 s), and removes their URL and PID files and the hostile server's store; the
#       logs stay.
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

# Stops DIR/<name>.pid's process if it is still one of ours (a stale PID file from an
# interrupted run may name a process that is not), then removes the files.
stop_one() {  # dir name
  local pid_file="$1/$2.pid"
  if [ -f "$pid_file" ]; then
    local pid
    pid=$(cat "$pid_file")
    if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--exit-with-pid"; then
      echo "$2 (pid $pid): peak memory $(awk '/^VmHWM/ {print $2, $3}' "/proc/$pid/status" 2>/dev/null)"
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 50); do
        running "$pid" || break
        sleep 0.1
      done
      running "$pid" && kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$1/$2.pid" "$1/$2.url"
}

start() {  # dir node source
  local dir="$1" node="$2" source="$3"
  local watch=$PPID
  mkdir -p "$dir" || exit 1
  local name
  for name in $servers; do stop_one "$dir" "$name"; done
  rm -rf "$dir/hostile-store"
  "$node" "$source/scripts/ds-server.mjs" --ignore-stdin --exit-with-pid "$watch" \
    </dev/null >"$dir/ds-server.url" 2>"$dir/ds-server.log" &
  echo $! >"$dir/ds-server.pid"
  "$node" "$source/tests/hostile-server/server.mjs" --store-dir "$dir/hostile-store" --ignore-stdin \
    --exit-with-pid "$watch" </dev/null >"$dir/hostile-server.url" 2>"$dir/hostile-server.log" &
  echo $! >"$dir/hostile-server.pid"
  for name in $servers; do
    local pid
    pid=$(cat "$dir/$name.pid")
    for _ in $(seq 300); do
      grep -q . "$dir/$name.url" 2>/dev/null && break
      if ! running "$pid"; then
        echo "shared-servers.sh: $name exited before printing its URL; its log ($dir/$name.log):" >&2
        cat "$dir/$name.log" >&2
        exit 1
      fi
      sleep 0.1
    done
    if ! grep -q . "$dir/$name.url" 2>/dev/null; then
      echo "shared-servers.sh: $name printed no URL within 30 s; its log ($dir/$name.log):" >&2
      cat "$dir/$name.log" >&2
      exit 1
    fi
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
    for name in $servers; do stop_one "$2" "$name"; done
    rm -rf "$2/hostile-store"
    ;;
  *)
    echo "usage: $0 start DIR NODE SOURCE_DIR | stop DIR" >&2
    exit 2
    ;;
esac
