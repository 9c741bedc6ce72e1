#!/usr/bin/env bash
# Pickup latency and throughput of the worker beside graphile-worker (the
# PostgreSQL job queue an operator would compare it with), interleaved in
# one run on this machine, so each comparison is a ratio measured under the
# same conditions. Optionally an earlier build of worker_bench beside the
# current one (--before), so a change is measured against what it replaced
# in the same run too. A benchmark only: no test or CI step runs it.
#
# The peer is given as many rows that are not ready as the worker has
# executions still running: 1,000 scheduled jobs beside 1,000 open sessions,
# 11,000 beside 1,000 sessions and 10,000 stuck executions.
#
#   cargo build --release -p nomos-continue --features test-support --example worker_bench
#   tests/bench/side_by_side.sh                        # 2 rounds, current build
#   tests/bench/side_by_side.sh --rounds 3 --before /tmp/worker_bench-before
#   tests/bench/side_by_side.sh --database-url postgres://postgres@127.0.0.1:5444/postgres
#
# Needs PostgreSQL (127.0.0.1:5432 unless --database-url names another
# server; the benches recreate databases of their own on it), node and npm
# (tests/js/graphile_bench.sh installs the peer). A server of the bench's
# own with the defaults is the one to measure on: a CI machine's shared one
# may run without autovacuum.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
after="$root/target/release/examples/worker_bench"
before=""
rounds=2
samples=200
url=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --samples) samples="$2"; shift 2 ;;
        --before) before="$2"; shift 2 ;;
        --after) after="$2"; shift 2 ;;
        --database-url) url=(--database-url "$2"); shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -x "$after" ]] || { echo "no $after: build worker_bench in release first" >&2; exit 1; }
graphile="$root/tests/js/graphile_bench.sh"

# Each line says what ran, at what load, and its figure.
run() {
    local name="$1"; shift
    printf '%-8s load %s | ' "$name" "$(cut -d' ' -f1 /proc/loadavg)"
    "$@" "${url[@]}" 2>/dev/null | grep -E '^(latency|throughput|graphile|CPU)' | paste -sd' ' -
}
# Both builds of ours, the current one first.
ours() {
    run after "$after" "$@"
    if [[ -n "$before" ]]; then run before "$before" "$@"; fi
}

for round in $(seq "$rounds"); do
    echo "== round $round"
    run peer "$graphile" latency --samples "$samples" --scheduled 1000
    ours latency --sessions 1000 --samples "$samples"
    run peer "$graphile" latency --samples "$samples" --scheduled 11000
    ours latency --sessions 1000 --running 10000 --samples "$samples"
    ours latency --sessions 1000 --running 10000 --samples "$samples" --sqlite
    run peer "$graphile" throughput --jobs 10000 --concurrency 1
    run peer "$graphile" throughput --jobs 10000 --concurrency 24 --local-queue 500
    ours throughput --sessions 10000
    ours throughput --sessions 10000 --sqlite
done
