#!/usr/bin/env bash
# The whole test command: installs what is missing, builds the default preset (g++-12),
# runs every test with ctest and prints ctest's summary. Exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default
ctest --preset default
