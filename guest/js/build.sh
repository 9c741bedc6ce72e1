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

# Up to date: a component newer than every input is not built again (CI
# builds it once, beside the Rust build; the tests then find it ready).
inputs=(src wit ../../wit build.mjs build.sh package-lock.json)
if [[ -f policy.wasm && -z "$(find "${inputs[@]}" -newer policy.wasm -print -quit)" ]]; then
  echo "$(pwd)/policy.wasm is up to date" >&2
  exit 0
fi

node build.mjs
