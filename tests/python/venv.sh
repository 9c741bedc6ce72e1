#!/usr/bin/env bash
# Builds the tests' Python environment from requirements.txt beside this
# script, and prints the path of its interpreter on the last line.
#
# One environment for every Python check the tests run, at
# target/python-venv (or $NOMOS_PYTHON_VENV), so CI installs the packages
# once per run. Skipped when it exists and was built from the same
# requirements by the same python3; a lock keeps two test processes from
# building it at once. Needs python3 (3.10+) with venv and pip, and the
# package index.
#
#   tests/python/venv.sh                  # build (or find) it
#   PIP_NO_CACHE_DIR=1 tests/python/venv.sh   # as a fresh machine would
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
requirements="$here/requirements.txt"
venv="${NOMOS_PYTHON_VENV:-$root/target/python-venv}"
python="${PYTHON:-python3}"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# Used by path, never activated; an active environment must not leak in.
unset VIRTUAL_ENV

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

# What the environment was built from: the pins and the interpreter.
wanted="$("$python" --version 2>&1) $(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && "$(cat "$venv/.built-from" 2>/dev/null)" == "$wanted" ]]; then
    echo "$venv is up to date" >&2
else
    echo "building $venv from $requirements" >&2
    started=$SECONDS
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --requirement "$requirements"
    # Written last: an interrupted build has no stamp and is built again.
    echo "$wanted" > "$venv/.built-from"
    echo "built $venv in $((SECONDS - started)) s" >&2
fi
echo "$venv/bin/python"
