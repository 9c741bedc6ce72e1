#!/usr/bin/env bash
# Builds policy.wasm in this folder from src/ (see README.md).
#
# Installs the pinned tools into ./node_modules with `npm ci`, once: a later
# run reuses them while package-lock.json is unchanged. No ahead-of-time
# compilation (weval): it downloads a binary at build time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

stamp=node_modules/.nomos-lock.sha256
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$lock_sum" ]]; then
  # No package of the lock runs an install script; refusing them keeps the
  # install to what the registry serves.
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > "$stamp"
fi

node build.mjs
