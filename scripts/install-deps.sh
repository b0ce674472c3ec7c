#!/usr/bin/env bash
# Installs what prodsm needs and is missing: the Debian packages of the build and the
# npm packages pinned in package.json / package-lock.json. Idempotent: a second run
# installs nothing. Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++-12 clang-14 libfuzzer-14-dev libclang-rt-14-dev
  googletest libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libasio-dev libhttp-parser-dev nlohmann-json3-dev libcli11-dev libexpected-dev libsimdjson-dev libssl-dev openssl pkgconf librdkafka-dev
  nodejs npm
)

missing=()
for p in "${packages[@]}"; do
  if [ "$p" = nodejs ] || [ "$p" = npm ]; then
    command -v "${p/nodejs/node}" >/dev/null 2>&1 && continue
  fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: Debian packages present"
fi

# npm packages: reinstall only when the lock file changed since the last install.
stamp=node_modules/.prodsm-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: npm ci (package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
else
  echo "install-deps: npm packages present"
fi
