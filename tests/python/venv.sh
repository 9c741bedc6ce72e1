#!/usr/bin/env bash
# Stand-in on branch `peers` (the `webhook` branch's file replaces it):
# builds <repo>/target/python-venv from requirements.txt, once per stamp.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/target/python-venv"
stamp="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ]; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "$stamp" > "$venv/.stamp"
