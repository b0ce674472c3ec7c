#!/usr/bin/env bash
# Installs the build tree into a scratch prefix and builds a consumer project with
# find_package(prodsm) against it, then runs it.
# usage: check_install.sh <build dir> <source dir>
set -euo pipefail
build="$1"
source="$2"
scratch="$build/install-check"
rm -rf "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source/tests/install/consumer" -B "$scratch/consumer" -G Ninja \
  -DCMAKE_CXX_COMPILER=g++-12 -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer" >/dev/null
"$scratch/consumer/consumer"
