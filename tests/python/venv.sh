#!/usr/bin/env bash
# Builds one of the tests' Python environments from its requirements file
# beside this script, and prints the path of its interpreter on the last
# line.
#
# The main environment (no name) is built from requirements.txt at
# target/python-venv (or $NOMOS_PYTHON_VENV): every Python check the tests
# run, and the real SDKs the protocol tests talk to. A named one is built
# from requirements-NAME.txt at target/python-venv-NAME (or
# $NOMOS_PYTHON_VENV-NAME), for packages that cannot share it (an older
# major of an SDK the main one pins). CI builds each once per run, beside
# the Rust build. Skipped when it exists and was built from the same
# requirements by the same python3; a lock keeps two test processes from
# building it at once. Needs python3 (3.10+) with venv and pip, and the
# package index.
#
#   tests/python/venv.sh                  # build (or find) the main one
#   tests/python/venv.sh a2a03            # ... the one of requirements-a2a03.txt
#   PIP_NO_CACHE_DIR=1 tests/python/venv.sh   # as a fresh machine would
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
name="${1:-}"
if [[ -n "$name" && ! "$name" =~ ^[a-z0-9]+$ ]]; then
    echo "usage: $0 [NAME]  (lower-case letters and digits)" >&2
    exit 2
fi
requirements="$here/requirements${name:+-$name}.txt"
venv="${NOMOS_PYTHON_VENV:-$root/target/python-venv}${name:+-$name}"
[[ -f "$requirements" ]] || { echo "no $requirements" >&2; exit 2; }
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
