// For test servers that outlive the command that started them (one per ctest run,
// tests/integration/shared-servers.sh): calls `onEnded` within a second of process
// `pid` ending, a zombie not yet reaped included (a killed ctest whose parent has gone
// too waits for init to reap it). Used by scripts/ds-server.mjs and
// tests/hostile-server/server.mjs (--exit-with-pid).
import { readFileSync } from "node:fs"

function ended(pid) {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return err.code === "ESRCH"
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

export function whenProcessEnds(pid, onEnded) {
  setInterval(() => {
    if (ended(pid)) onEnded()
  }, 1000).unref()
}

/// The process id given to `--exit-with-pid` (`text`); exits 2 naming `program` when it
/// is not one.
export function parseWatchPid(text, program) {
  const pid = Number(text)
  if (!(Number.isInteger(pid) && pid > 0)) {
    console.error(`${program}: --exit-with-pid needs a process id`)
    process.exit(2)
  }
  return pid
}
