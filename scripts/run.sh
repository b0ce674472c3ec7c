#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the core demo (a hand-written
# drive loop around the Producer core on virtual time).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default >/dev/null
exec build/default/examples/prodsm_core_demo "$@"
