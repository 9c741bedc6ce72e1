#!/usr/bin/env bash
# Builds policy.wasm, the Python continuation policy, beside this script.
#
# Needs python3 (3.10+) with venv and pip, and the package index; nothing
# else. The pinned tools go into .venv/ and .cache/ here (both gitignored),
# so a second run reuses them and only rebuilds the component.
#
#   guest/python/build.sh              # writes guest/python/policy.wasm
#   BINDINGS=1 guest/python/build.sh   # also writes bindings/ (editor stubs)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The tool that turns app.py and CPython into a component.
COMPONENTIZE_PY_VERSION=0.25.1
# componentize-py ships no WASI WIT files, and `wasmtime run` needs the
# component to export wasi:cli/run. The Spin SDK wheel carries the standard
# WASI 0.2.0 packages; only those files are unpacked from it (the SDK itself
# is not installed, so none of its code or worlds reach the component).
SPIN_SDK_VERSION=5.0.0
WASI_PACKAGES=(io clocks random filesystem sockets cli)
WASI_VERSION=0.2.0

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# The venv is used by path, never activated; componentize-py would otherwise
# add an unrelated active venv's site-packages to the component's path.
unset VIRTUAL_ENV

venv=.venv
if [[ "$("$venv/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]]; then
    echo "installing componentize-py $COMPONENTIZE_PY_VERSION into guest/python/$venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "componentize-py==$COMPONENTIZE_PY_VERSION"
fi

wasi_wit=.cache/wasi-wit-$WASI_VERSION
if [[ ! -f "$wasi_wit/.complete" ]]; then
    echo "unpacking the WASI $WASI_VERSION WIT files from spin-sdk $SPIN_SDK_VERSION" >&2
    rm -rf "$wasi_wit" .cache/wheel
    "$venv/bin/pip" download --quiet --no-deps --only-binary=:all: \
        --dest .cache/wheel "spin-sdk==$SPIN_SDK_VERSION"
    "$venv/bin/python" - "$wasi_wit" "$WASI_VERSION" "${WASI_PACKAGES[@]}" <<'EOF'
import glob, pathlib, sys, zipfile

dest, version, packages = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
(wheel,) = glob.glob(".cache/wheel/*.whl")
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        parts = name.split("/")  # spin_sdk/wit/deps/<package>@<version>/<file>.wit
        if len(parts) == 5 and parts[:3] == ["spin_sdk", "wit", "deps"] and name.endswith(".wit"):
            package, _, found = parts[3].partition("@")
            if package in packages and found == version:
                target = dest / parts[3] / parts[4]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
missing = [p for p in packages if not (dest / f"{p}@{version}").is_dir()]
if missing:
    sys.exit(f"spin-sdk wheel lacks WASI {version} packages: {missing}")
EOF
    touch "$wasi_wit/.complete"
fi

# Every WIT package in dependency order: WASI, the contract (read from the
# repository, never copied), then this policy's world.
wit_args=()
for package in "${WASI_PACKAGES[@]}"; do
    wit_args+=(-d "$wasi_wit/$package@$WASI_VERSION")
done
wit_args+=(-d ../../wit -d wit -w nomos:default-python/policy-cli)

if [[ "${BINDINGS:-0}" == 1 ]]; then
    rm -rf bindings
    "$venv/bin/componentize-py" --quiet "${wit_args[@]}" bindings bindings
fi

# Up to date: a component newer than every input is not built again (CI
# builds it once, beside the Rust build; the tests then find it ready).
inputs=(app.py nomos_policy wit ../../wit build.sh)
if [[ "${BINDINGS:-0}" != 1 && -f policy.wasm && -z "$(find "${inputs[@]}" -newer policy.wasm -not -path '*/__pycache__*' -print -quit)" ]]; then
    echo "$(pwd)/policy.wasm is up to date" >&2
    exit 0
fi

# Only this folder is on the component's Python path: app.py, nomos_policy/.
"$venv/bin/componentize-py" --quiet "${wit_args[@]}" componentize app \
    --python-path . --output policy.wasm.tmp
mv policy.wasm.tmp policy.wasm
echo "wrote $(pwd)/policy.wasm ($(wc -c < policy.wasm) bytes)" >&2
