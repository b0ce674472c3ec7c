#!/usr/bin/env bash
# The installed package works for a downstream project, and is relocatable:
#  1. the build tree's `library` component installed into a scratch prefix; a consumer
#     project built with find_package(prodsm) against it, and run;
#  2. the same consumer built with pkg-config (prodsm.pc, static libraries), and run;
#  3. no installed CMake or pkg-config file names an absolute path outside the prefix;
#  4. a library-only build (tools, conformance, tests, bench, examples off; RapidCheck,
#     CLI11, nlohmann_json, GoogleTest and Google Benchmark made unfindable) of shared
#     libraries configures, builds and installs; its prefix is moved elsewhere, and the
#     consumer built against the moved prefix runs;
#  5. the CLI installed reads the conformance vectors installed with it.
# usage: check_install.sh <build dir> <source dir>
set -euo pipefail
build="$1"
source="$2"
scratch="$build/install-check"
rm -rf "$scratch"
mkdir -p "$scratch"
cxx=g++-12

# Runs a step with its output kept aside; a failing step prints the output's tail and
# the command, so the test's log says why it failed.
quiet() {
  local log="$scratch/step.log"
  if ! "$@" >"$log" 2>&1; then
    echo "check_install: failed: $*" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

# 1. find_package from the build tree's install.
quiet cmake --install "$build" --prefix "$scratch/prefix" --component library
quiet cmake -S "$source/tests/install/consumer" -B "$scratch/consumer" -G Ninja \
  -DCMAKE_CXX_COMPILER=$cxx -DCMAKE_PREFIX_PATH="$scratch/prefix"
quiet cmake --build "$scratch/consumer"
"$scratch/consumer/consumer"

# 2. pkg-config.
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs --static prodsm)
# shellcheck disable=SC2086  # flags are words
$cxx -o "$scratch/consumer-pc" "$source/tests/install/consumer/main.cpp" $flags
"$scratch/consumer-pc"

# 3. No absolute path outside the prefix in the installed package files.
check_paths() {
  local prefix="$1"
  local bad
  bad=$(grep -HnoE '(^|[ ";=(])/[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*' \
          "$prefix"/lib/cmake/prodsm/*.cmake "$prefix"/lib/pkgconfig/prodsm.pc |
        grep -v -F "$prefix" || true)
  if [ -n "$bad" ]; then
    echo "check_install: absolute paths outside $prefix in the installed package:" >&2
    echo "$bad" >&2
    exit 1
  fi
}
check_paths "$scratch/prefix"

# 4. Library-only, shared, relocated. No build type (no optimisation, no debug info): what is
#    checked is the configuration, the build and the installed files, and it compiles fastest.
quiet cmake -S "$source" -B "$scratch/libonly" -G Ninja -DCMAKE_CXX_COMPILER=$cxx -DCMAKE_BUILD_TYPE= \
  -DBUILD_SHARED_LIBS=ON -DPRODSM_BUILD_TESTS=OFF -DPRODSM_BUILD_BENCH=OFF -DPRODSM_BUILD_TOOLS=OFF \
  -DPRODSM_BUILD_CONFORMANCE=OFF -DPRODSM_BUILD_EXAMPLES=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON --no-warn-unused-cli
quiet cmake --build "$scratch/libonly" -j2
quiet cmake --install "$scratch/libonly" --prefix "$scratch/shared-prefix"
quiet ls "$scratch"/shared-prefix/lib/libprodsm_http.so.*
mv "$scratch/shared-prefix" "$scratch/moved-prefix"
check_paths "$scratch/moved-prefix"
quiet cmake -S "$source/tests/install/consumer" -B "$scratch/consumer-shared" -G Ninja \
  -DCMAKE_CXX_COMPILER=$cxx -DCMAKE_PREFIX_PATH="$scratch/moved-prefix"
quiet cmake --build "$scratch/consumer-shared"
LD_LIBRARY_PATH="$scratch/moved-prefix/lib" "$scratch/consumer-shared/consumer"
# 5. The CLI installed (the tools component) finds its conformance data under the prefix,
#    not in the source tree: a vector planted in the installed copy is the one it reads.
quiet cmake --install "$build" --prefix "$scratch/tools-prefix" --component tools
quiet ls "$scratch"/tools-prefix/share/prodsm/conformance/findings/ds-ts.verdicts.json
quiet "$scratch/tools-prefix/bin/prodsm" conform --skip-properties
echo '{not json' > "$scratch/tools-prefix/share/prodsm/conformance/vectors/planted.json"
if "$scratch/tools-prefix/bin/prodsm" conform --skip-properties >"$scratch/step.log" 2>&1; then
  echo "check_install: the installed prodsm did not read its installed vectors" >&2
  exit 1
fi
if ! grep -q "$scratch/tools-prefix/share/prodsm/conformance/vectors/planted.json: malformed vector" "$scratch/step.log"; then
  echo "check_install: the installed prodsm read vectors elsewhere:" >&2
  tail -n 5 "$scratch/step.log" >&2
  exit 1
fi
echo "check_install: ok"
