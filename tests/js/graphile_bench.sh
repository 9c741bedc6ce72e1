#!/usr/bin/env bash
# Benchmarks graphile-worker (the Node.js PostgreSQL job queue) on this
# machine, so the Rust worker's figures can be set beside it in the same run.
# A benchmark only: no test or CI step runs it.
#
# Installs graphile-worker at the exact version pinned in
# tests/js/graphile-bench/package.json, with `npm ci` from the lock file
# beside it, into target/node-graphile (or $NOMOS_GRAPHILE_DIR); skipped when
# that lock file is already installed there; a lock keeps two runs from
# installing at once. Then runs graphile-bench/bench.mjs there with the
# arguments given. Needs node, npm and a PostgreSQL server; the bench drops
# and recreates the database nomos_bench_graphile on it.
#
#   tests/js/graphile_bench.sh latency --samples 200 --scheduled 1000
#   tests/js/graphile_bench.sh latency --samples 200 --scheduled 10000
#   tests/js/graphile_bench.sh throughput --jobs 10000 --concurrency 1
#   tests/js/graphile_bench.sh throughput --jobs 10000 --concurrency 24 --local-queue 500
#   tests/js/graphile_bench.sh throughput --jobs 10000 --concurrency 24 --async-commit
#   tests/js/graphile_bench.sh latency --samples 50 --scheduled 0 \
#       --database-url postgres://postgres@127.0.0.1:5432/postgres
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
src="$here/graphile-bench"
dir="${NOMOS_GRAPHILE_DIR:-$root/target/node-graphile}"
version="$(sed -n 's/^ *"graphile-worker": *"\([^"]*\)".*/\1/p' "$src/package.json")"
# The version names the install; the lock file's hash catches a changed
# dependency beside it.
stamp="graphile-worker $version $(sha256sum < "$src/package-lock.json" | cut -c1-16)"

mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9

if [[ -f "$dir/node_modules/graphile-worker/package.json" \
        && "$(cat "$dir/.built-from" 2>/dev/null)" == "$stamp" ]]; then
    echo "$dir has graphile-worker $version" >&2
else
    echo "installing graphile-worker $version into $dir" >&2
    started=$SECONDS
    rm -rf "$dir/node_modules" "$dir/.built-from"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
    [[ -f "$dir/node_modules/graphile-worker/package.json" ]] \
        || { echo "npm installed no graphile-worker in $dir" >&2; exit 1; }
    # Written last: an interrupted install has no stamp and is done again.
    echo "$stamp" > "$dir/.built-from"
    echo "installed graphile-worker in $((SECONDS - started)) s" >&2
fi

# ES module imports ignore NODE_PATH: the script runs from the install
# directory so that `import "graphile-worker"` finds its node_modules.
cp "$src/bench.mjs" "$dir/bench.mjs"
exec 9>&-
exec node "$dir/bench.mjs" "$@"
