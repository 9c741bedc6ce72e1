#!/usr/bin/env bash
# Load benchmark of `nomos-continue serve`'s ingestion routes, driven by wrk.
# A benchmark only: no test or CI step runs it.
#
# What it does, in order:
#   - installs wrk with apt-get when it is missing;
#   - recreates the PostgreSQL database nomos_bench_ingest on 127.0.0.1:5432 (or --pg-port)
#     (user postgres, trust auth), or with --sqlite uses a file in a temp dir;
#   - starts a webhook receiver on loopback that answers 200 at once, so the
#     worker's continuations and notices succeed and cost the agent nothing;
#   - starts `BINARY serve` on a free loopback port with that webhook as its
#     agent and the worker running, and approves --sessions sessions through
#     the API (30-minute windows, longer than any run);
#   - runs wrk against POST /v1/sessions/{id}/tool-results
#     (tests/bench/wrk/tool_results.lua: each names a fresh execution in one
#     of those sessions), then against PUT /v1/executions/{id}
#     (tests/bench/wrk/status.lua: "completed" for a random uuid v4). The two
#     scripts draw ids from the same seeded sequence, so the status run first
#     finishes the executions the tool-results run linked and the worker
#     continues them during it, as it would in production; --unpaired makes
#     every status report one for an execution nobody linked;
#   - after each run, waits for the worker to settle what became ready;
#   - prints, per route: requests/s, p50 and p99 latency, and the CPU the
#     serve process and PostgreSQL used during the run, in ms per request
#     (paired, the status run's CPU includes the worker's continuations: that
#     is what a report costs in production; --unpaired isolates ingestion),
#     and the cores processes outside the benchmark took meanwhile, since a
#     2-core machine shared with a compiler gives other figures;
#   - fails if wrk saw any non-2xx answer or socket error, if the worker did
#     not settle, or if fewer executions were committed than status reports
#     were answered 2xx (an answer is a promise that the report is stored).
# Everything it started is stopped on exit. The database is left for
# inspection (the next run recreates it); the temp dir is kept on failure.
#
# Examples:
#   tests/bench/ingest.sh --binary target/release/nomos-continue
#   tests/bench/ingest.sh --binary /tmp/nc-after --seconds 60 --connections 64
#   tests/bench/ingest.sh --binary /tmp/nc-before --sqlite --sessions 200
#   tests/bench/ingest.sh --binary /tmp/nc-before --with-token --unpaired
#
# Options:
#   --binary PATH      the nomos-continue binary to measure (required)
#   --seconds N        wrk duration per route (20)
#   --connections N    wrk connections (32)
#   --threads N        wrk threads (2)
#   --sessions N       sessions approved before the runs (1000)
#   --sqlite           SQLite in a temp dir instead of PostgreSQL
#   --with-token       give serve a runtime token and send it (loopback needs
#                      none; this measures the authenticated path)
#   --unpaired         status reports never hit a linked execution
#   --drain-timeout N  seconds to wait for the worker after a run (300)
#   --pg-port N        the PostgreSQL on 127.0.0.1 to use (5432); give a
#                      cluster of the benchmark's own, with autovacuum on
#   --serve-arg ARG    one more argument for serve (repeat it), such as
#                      --access-log, or --log-format json
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

binary=""
seconds=20
connections=32
threads=2
sessions=1000
use_sqlite=0
with_token=0
unpaired=0
drain_timeout=300
pg_port=5432
extra_serve_args=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --sessions) sessions="$2"; shift 2 ;;
    --sqlite) use_sqlite=1; shift ;;
    --with-token) with_token=1; shift ;;
    --unpaired) unpaired=1; shift ;;
    --drain-timeout) drain_timeout="$2"; shift 2 ;;
    --pg-port) pg_port="$2"; shift 2 ;;
    --serve-arg) extra_serve_args+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option: $1" >&2; usage ;;
  esac
done
[[ -n "$binary" ]] || { echo "--binary PATH is required" >&2; usage; }
[[ -x "$binary" ]] || { echo "not an executable: $binary" >&2; exit 2; }
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"

say() { printf '\n== %s\n' "$*"; }

if ! command -v wrk >/dev/null; then
  say "installing wrk"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk
fi
# wrk --version exits non-zero after printing.
echo "wrk: $( (wrk --version 2>&1 || true) | head -1)"
echo "binary: $binary (sha256 $(sha256sum "$binary" | cut -c1-12), $("$binary" --version))"
echo "wrk -t$threads -c$connections -d${seconds}s, $sessions sessions, $([[ $use_sqlite == 1 ]] && echo sqlite || echo postgresql), cores: $(nproc)"

work="$(mktemp -d /tmp/nomos-bench-ingest.XXXXXX)"
serve_pid=""
receiver_pid=""

stop() {
  # SIGTERM first: serve shuts down gracefully (frees its worker id, closes
  # its pools); a kill after 15 s only if it hangs.
  local pid="$1"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop "$serve_pid"
  stop "$receiver_pid"
  if [[ $rc -eq 0 ]]; then
    rm -rf "$work"
  else
    echo "exit $rc; logs kept in $work (serve.log, receiver.log, wrk-*.txt)" >&2
  fi
}
trap cleanup EXIT

# --- database -----------------------------------------------------------------

db=nomos_bench_ingest
if [[ $use_sqlite == 1 ]]; then
  db_url="sqlite:$work/bench.db"
else
  # FORCE: a serve left over from an interrupted run may still hold
  # connections, and a plain DROP would then fail.
  PGOPTIONS="-c client_min_messages=warning" psql -h 127.0.0.1 -p "$pg_port" -U postgres -v ON_ERROR_STOP=1 -q \
    -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
  db_url="postgres://postgres@127.0.0.1:$pg_port/$db"
fi
echo "database: $db_url"

# --- webhook receiver ---------------------------------------------------------

# Answers every POST with 200 and an empty body at once (HTTP/1.1 with a
# Content-Length, so serve's client keeps its connections), and counts what it
# got by payload type for GET /counts; the counts let the report say whether
# every continuation the ledger calls delivered did reach the agent.
cat > "$work/receiver.py" <<'PY'
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}
lock = threading.Lock()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # The type is the first member serve writes; a full JSON parse would
        # cost the benchmark's two cores for nothing.
        kind = body[9:40].split(b'"', 1)[0].decode(errors="replace") if body.startswith(b'{"type":"') else "other"
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            out = json.dumps(counts).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$work/receiver.py" > "$work/receiver.port" 2> "$work/receiver.log" &
receiver_pid=$!
for _ in $(seq 100); do [[ -s "$work/receiver.port" ]] && break; sleep 0.1; done
receiver="http://127.0.0.1:$(cat "$work/receiver.port")"
echo "webhook receiver: $receiver (pid $receiver_pid)"

# --- serve --------------------------------------------------------------------

# Signed like a production deployment, so the HMAC is part of what is measured.
echo "whsec_$(head -c 32 /dev/urandom | base64)" > "$work/webhook.secret"
serve_args=(serve --database-url "$db_url" --listen 127.0.0.1:0
  --agent-webhook "$receiver/hooks/nomos" --webhook-secret-file "$work/webhook.secret")
auth=()
export BENCH_TOKEN=""
if [[ $with_token == 1 ]]; then
  BENCH_TOKEN="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  echo "$BENCH_TOKEN" > "$work/runtime.token"
  serve_args+=(--token-file "$work/runtime.token")
  auth=(-H "Authorization: Bearer $BENCH_TOKEN")
fi
serve_args+=("${extra_serve_args[@]}")
# Not exec'd through a subshell, so $! is serve itself and /proc/$!/stat is
# its CPU.
NO_COLOR=1 "$binary" "${serve_args[@]}" > "$work/serve.out" 2> "$work/serve.log" &
serve_pid=$!

api=""
for _ in $(seq 600); do
  kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; echo "serve exited" >&2; exit 1; }
  # serve prints the address it bound (the port is chosen by the kernel).
  api="$(grep -o 'listening on http://[0-9.:]*' "$work/serve.out" | sed 's/listening on //' || true)"
  [[ -n "$api" ]] && curl -fsS -o /dev/null "$api/healthz" 2>/dev/null && break
  api=""
  sleep 0.1
done
[[ -n "$api" ]] || { cat "$work/serve.log" >&2; echo "serve did not answer /healthz in 60 s" >&2; exit 1; }
echo "serve: $api (pid $serve_pid)"

# --- approvals ----------------------------------------------------------------

# One keep-alive connection; a curl per session would spend seconds on
# process start-up alone.
BENCH_API="$api" BENCH_SESSIONS="$sessions" python3 - > "$work/sessions.txt" <<'PY'
import http.client, os, urllib.parse, uuid
url = urllib.parse.urlsplit(os.environ["BENCH_API"])
conn = http.client.HTTPConnection(url.hostname, url.port)
headers = {"Content-Type": "application/json"}
if os.environ.get("BENCH_TOKEN"):
    headers["Authorization"] = "Bearer " + os.environ["BENCH_TOKEN"]
for _ in range(int(os.environ["BENCH_SESSIONS"])):
    session = str(uuid.uuid4())
    conn.request("POST", f"/v1/sessions/{session}/approvals", b'{"decision":"approve","minutes":30}', headers)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise SystemExit(f"approval of {session}: {answer.status} {body[:300]!r}")
    print(session)
PY
echo "approved $(wc -l < "$work/sessions.txt") sessions"
export BENCH_SESSIONS_FILE="$work/sessions.txt"
BENCH_SEED=$(( $(date +%s) % 1000000 ))
export BENCH_SEED

# --- measuring ----------------------------------------------------------------

clk_tck="$(getconf CLK_TCK)"

# PostgreSQL's CPU in ticks: every process whose command line starts with
# "postgres:" (backends, checkpointer, walwriter, autovacuum, ...), plus the
# postmaster with its reaped children, so a backend that exits during the run
# still counts. Prints "all ours": ours is the backends connected to the
# benchmark's database, apart from anyone else's tests on the same server.
pg_ticks() {
  local all=0 ours=0 postmaster="" arg0 t stat
  for dir in /proc/[0-9]*; do
    IFS= read -r -d '' arg0 < "$dir/cmdline" 2>/dev/null || [[ -n "${arg0:-}" ]] || continue
    [[ "$arg0" == postgres:* ]] || continue
    stat="$(cat "$dir/stat" 2>/dev/null)" || continue
    set -- ${stat##*) }
    t=$(( ${12} + ${13} ))
    all=$(( all + t ))
    [[ "$arg0" == *" $db "* ]] && ours=$(( ours + t ))
    postmaster="$2"
  done
  if [[ -n "$postmaster" ]]; then
    stat="$(cat "/proc/$postmaster/stat" 2>/dev/null)" || stat=""
    if [[ -n "$stat" ]]; then
      set -- ${stat##*) }
      all=$(( all + ${12} + ${13} + ${14} + ${15} ))
    fi
  fi
  echo "$all $ours"
}

serve_ticks() {
  local stat
  stat="$(cat "/proc/$serve_pid/stat")"
  set -- ${stat##*) }
  echo $(( ${12} + ${13} ))
}

# Busy and total jiffies of the whole machine, for how saturated it was.
machine_ticks() {
  awk '/^cpu / { total = 0; for (i = 2; i <= NF; i++) total += $i; print total - $5 - $6, total }' /proc/stat
}

receiver_ticks() {
  local stat
  stat="$(cat "/proc/$receiver_pid/stat")"
  set -- ${stat##*) }
  echo $(( ${12} + ${13} ))
}

# CPU this shell's reaped children used, in ticks: read around the wrk
# pipeline, it is wrk's own CPU, the load generator's share of the two cores.
# `times` must run in this shell, not in a $(...) subshell, which would
# report only its own children: hence the file.
children_ticks() {
  times > "$work/times"
  awk -v hz="$clk_tck" 'NR == 2 {
    split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%d\n", ((u[1] + s[1]) * 60 + u[2] + s[2]) * hz
  }' "$work/times"
}

metrics() { curl -fsS "${auth[@]}" "$api/metrics"; }
# Sum of a /metrics series, matched on its name and labels as printed.
metric() { awk -v m="$1" 'index($0, m) == 1 && substr($0, length(m) + 1, 1) ~ /[ {]/ { s += $NF } END { printf "%d\n", s }' <<< "$2"; }
overview_field() { sed -n "s/.*\"$1\":\\([0-9]*\\).*/\\1/p" <<< "$2"; }

# wrk prints times as 812.00us, 1.23ms, 2.01s; all in ms for the report.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    f = (u == "us") ? 0.001 : (u == "ms") ? 1 : (u == "s") ? 1000 : (u == "m") ? 60000 : -1
    if (f < 0) { print "?" } else { printf "%.2f", n * f }
  }'
}

summary=()
failures=()

# Rows in a table, read on a connection of our own: only committed rows.
committed_rows() {
  if [[ $use_sqlite == 1 ]]; then
    python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM " + sys.argv[2]).fetchone()[0])' \
      "$work/bench.db" "$1"
  else
    psql -h 127.0.0.1 -p "$pg_port" -U postgres -d "$db" -Atc "SELECT count(*) FROM $1"
  fi
}

# run_route NAME SCRIPT [TABLE]: with TABLE, every 2xx answer must have left
# a committed row there (each request names a new id), or the figures are
# those of writes that never became durable.
run_route() {
  local name="$1" script="$2" table="${3:-}" out="$work/wrk-$1.txt"
  say "$name: $(cat /proc/loadavg) (load average before the run)"

  local m0 s0 p0 c0 r0 w0
  m0="$(metrics)"
  s0="$(serve_ticks)"; p0="$(pg_ticks)"; c0="$(machine_ticks)"; r0="$(receiver_ticks)"
  children_ticks > "$work/w0"
  wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency -s "$script" "$api" | tee "$out"
  local s1 p1 c1 r1 w1
  children_ticks > "$work/w1"
  w0="$(cat "$work/w0")"; w1="$(cat "$work/w1")"
  s1="$(serve_ticks)"; p1="$(pg_ticks)"; c1="$(machine_ticks)"; r1="$(receiver_ticks)"

  local requests rps p50 p99 non2xx errors
  requests="$(awk '/ requests in / { print $1 }' "$out")"
  rps="$(awk '/^Requests\/sec:/ { print $2 }' "$out")"
  p50="$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")"
  p99="$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")"
  non2xx="$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$out")"; non2xx="${non2xx:-0}"
  errors="$(awk '/Socket errors:/ { sub(/.*Socket errors: */, ""); print }' "$out")"

  local serve_ms pg_ms ours_ms busy pa0 po0 pa1 po1 cb0 ct0 cb1 ct1
  serve_ms="$(awk -v a="$s0" -v b="$s1" -v n="$requests" -v hz="$clk_tck" 'BEGIN { printf "%.3f", (b - a) * 1000 / hz / n }')"
  read -r pa0 po0 <<< "$p0"; read -r pa1 po1 <<< "$p1"
  pg_ms="$(awk -v a="$pa0" -v b="$pa1" -v n="$requests" -v hz="$clk_tck" 'BEGIN { printf "%.3f", (b - a) * 1000 / hz / n }')"
  ours_ms="$(awk -v a="$po0" -v b="$po1" -v n="$requests" -v hz="$clk_tck" 'BEGIN { printf "%.3f", (b - a) * 1000 / hz / n }')"
  read -r cb0 ct0 <<< "$c0"; read -r cb1 ct1 <<< "$c1"
  busy="$(awk -v b="$((cb1 - cb0))" -v t="$((ct1 - ct0))" 'BEGIN { printf "%.0f", t ? 100 * b / t : 0 }')"
  # Whatever else ran (another engineer's build, say), in cores: the busy
  # time no process of this benchmark accounts for. On SQLite, PostgreSQL is
  # someone else's.
  local cores others wrk_cores mine
  cores="$(nproc)"
  mine=$(( (s1 - s0) + (r1 - r0) + (w1 - w0) ))
  [[ $use_sqlite == 1 ]] || mine=$(( mine + pa1 - pa0 ))
  others="$(awk -v b="$((cb1 - cb0))" -v t="$((ct1 - ct0))" -v n="$cores" -v mine="$mine" \
    'BEGIN { printf "%.2f", t ? (b - mine) * n / t : 0 }')"
  wrk_cores="$(awk -v w="$((w1 - w0))" -v t="$((ct1 - ct0))" -v n="$cores" 'BEGIN { printf "%.2f", t ? w * n / t : 0 }')"

  # The worker's share: wait until nothing finished is unsettled and nothing
  # is pending delivery, and charge the CPU that took to the serve process.
  local drained="" t0=$SECONDS d0 d1 ov m1 backlog pending
  d0="$(serve_ticks)"
  while (( SECONDS - t0 <= drain_timeout )); do
    ov="$(curl -fsS "${auth[@]}" "$api/v1/overview")"
    m1="$(metrics)"
    backlog="$(metric nomos_continue_backlog_finished "$m1")"
    pending="$(overview_field pending_deliveries "$ov")"
    if [[ "$backlog" == 0 && "$pending" == 0 ]]; then drained=$(( SECONDS - t0 )); break; fi
    sleep 1
  done
  d1="$(serve_ticks)"

  local decided=() outcome
  for outcome in continue drop wait deferred policy_error; do
    decided+=("$outcome $(( $(metric "nomos_continue_decisions_total{outcome=\"$outcome\"}" "$m1") - $(metric "nomos_continue_decisions_total{outcome=\"$outcome\"}" "$m0") ))")
  done
  local delivered gave_up retried http5xx
  delivered=$(( $(metric 'nomos_continue_deliveries_total{result="delivered"}' "$m1") - $(metric 'nomos_continue_deliveries_total{result="delivered"}' "$m0") ))
  gave_up=$(( $(metric 'nomos_continue_deliveries_total{result="gave_up"}' "$m1") - $(metric 'nomos_continue_deliveries_total{result="gave_up"}' "$m0") ))
  retried=$(( $(metric 'nomos_continue_deliveries_total{result="retry"}' "$m1") - $(metric 'nomos_continue_deliveries_total{result="retry"}' "$m0") ))
  http5xx="$(awk '/^nomos_continue_http_requests_total\{.*status="5[0-9][0-9]"/ { s += $NF } END { print s + 0 }' <<< "$m1")"

  echo
  echo "$name: $requests requests, $rps req/s, p50 $p50 ms, p99 $p99 ms"
  if [[ $use_sqlite == 1 ]]; then
    pg_ms="-"; ours_ms="-"
    echo "  CPU per request: serve $serve_ms ms"
  else
    echo "  CPU per request: serve $serve_ms ms, postgres $pg_ms ms (of which this database's backends $ours_ms ms)"
  fi
  echo "  machine ${busy}% busy; of its $cores cores wrk used $wrk_cores, the webhook receiver $(awk -v r="$((r1 - r0))" -v t="$((ct1 - ct0))" -v n="$cores" 'BEGIN { printf "%.2f", t ? r * n / t : 0 }'), processes outside the benchmark $others"
  echo "  non-2xx: $non2xx; socket errors: ${errors:-none}"
  if [[ -n "$drained" ]]; then
    echo "  worker: settled ${drained}s after the run (serve CPU meanwhile $(( (d1 - d0) * 1000 / clk_tck )) ms)"
  else
    echo "  worker: NOT settled ${drain_timeout}s after the run: backlog_finished $backlog, pending_deliveries $pending"
    failures+=("$name: the worker did not settle its backlog within ${drain_timeout}s")
  fi
  echo "  decisions: ${decided[*]}; deliveries delivered $delivered, retried $retried, gave up $gave_up"
  echo "  pickup over the last hour: $(sed -n 's/.*"pickup":\({[^}]*}\).*/\1/p' <<< "$ov"); receiver got: $(curl -fsS "$receiver/counts")"
  echo "  serve's 5xx answers so far: $http5xx"
  if [[ -n "$table" ]]; then
    local committed answered
    committed="$(committed_rows "$table")"
    answered=$(( requests - non2xx ))
    echo "  durability: $answered answered 2xx, $committed rows committed in $table"
    # Requests still in flight when wrk stopped may add rows, never remove.
    (( committed >= answered )) \
      || failures+=("$name: $((answered - committed)) reports answered 2xx but not committed to $table")
  fi

  summary+=("$(printf '%-13s %9s %9s %8s %8s %12s %10s %10s %5s%% %7s' "$name" "$requests" "$rps" "$p50" "$p99" "$serve_ms" "$pg_ms" "$ours_ms" "$busy" "$others")")
  [[ "$non2xx" == 0 ]] || failures+=("$name: $non2xx non-2xx answers")
  [[ -z "$errors" ]] || failures+=("$name: socket errors: $errors")
  [[ "$gave_up" == 0 ]] || failures+=("$name: $gave_up deliveries gave up")
}

run_route tool-results "$here/wrk/tool_results.lua"
if [[ $unpaired == 1 ]]; then
  # Any other seed: none of the status reports names a linked execution.
  BENCH_SEED=$(( BENCH_SEED + 7777777 ))
fi
run_route status "$here/wrk/status.lua" executions

say "serve's log: warnings and errors"
# The start-up warning about the missing notify channel is expected; anything
# else is worth reading. Timestamps are cut so repeats group together.
grep -E 'WARN|ERROR' "$work/serve.log" | grep -v -e 'no --notify-webhook' \
  | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[0-9TZ:.-]* *//' | sort | uniq -c | sort -rn | head -20 || true
echo "($(grep -E 'WARN|ERROR' "$work/serve.log" | grep -c -v -e 'no --notify-webhook' || true) unexpected warning/error lines; log size $(wc -l < "$work/serve.log") lines)"

say "summary ($binary, $([[ $use_sqlite == 1 ]] && echo sqlite || echo postgresql), wrk -t$threads -c$connections -d${seconds}s)"
# CPU columns: ms of CPU per request during the run; "our db" is the part of
# PostgreSQL's that this database's backends used; "others" is the cores
# processes outside the benchmark took meanwhile (0.00 on a quiet machine).
printf '%-13s %9s %9s %8s %8s %12s %10s %10s %6s %7s\n' route requests "req/s" "p50 ms" "p99 ms" "serve ms/req" "pg ms/req" "our db" busy others
for line in "${summary[@]}"; do echo "$line"; done

if [[ ${#failures[@]} -gt 0 ]]; then
  echo
  for f in "${failures[@]}"; do echo "FAIL: $f" >&2; done
  exit 1
fi
