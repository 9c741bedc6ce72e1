#!/usr/bin/env bash
# Installs axe-core, the accessibility checker the console's browser test
# injects into each view, from the npm registry at the exact version below,
# and prints the path of its axe.min.js on the last line.
#
# Installed once per run at target/node-axe (or $NOMOS_AXE_DIR); skipped
# when that version is already there; a lock keeps two test processes from
# installing it at once. Needs node and npm.
#
#   tests/js/axe.sh        # install (or find) it
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="4.14.1"
dir="${NOMOS_AXE_DIR:-$root/target/node-axe}"
script="$dir/node_modules/axe-core/axe.min.js"

mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9

if [[ -f "$script" && "$(cat "$dir/.built-from" 2>/dev/null)" == "$version" ]]; then
    echo "$dir has axe-core $version" >&2
else
    echo "installing axe-core $version into $dir" >&2
    started=$SECONDS
    rm -rf "$dir/node_modules" "$dir/.built-from"
    npm install --prefix "$dir" --no-save --no-audit --no-fund --no-package-lock \
        --ignore-scripts --loglevel=error "axe-core@$version" >&2
    [[ -f "$script" ]] || { echo "npm installed no $script" >&2; exit 1; }
    # Written last: an interrupted install has no stamp and is done again.
    echo "$version" > "$dir/.built-from"
    echo "installed axe-core in $((SECONDS - started)) s" >&2
fi
echo "$script"
