#!/usr/bin/env python3
"""Runs the workspace's tests with their binaries side by side.

`cargo test --workspace` runs one test binary after another, so its wall
time is the sum of the suites (delivery, policies, service, storage and
the small ones), and each leaves cores idle at times: a test waiting for
a PostgreSQL cluster to start or a child process to answer, a suite's
last slow tests running alone. This builds exactly what
`cargo test --workspace` builds (`--no-run`, same features, same
profile), then runs every test binary cargo would run, and the doc
tests, two at a time, longest first, each from its package's directory
as cargo runs it. Every test of `cargo test --workspace` runs, once;
nothing is skipped or split.

Each binary's output goes to target/test-logs/NAME.log; a failed one is
printed whole. At the end: each binary's time and counts, written also to
target/test-logs/summary.txt (`.ci/run` prints it in its breakdown).

    tests/run.py                     # everything
    tests/run.py -- hot_plans        # arguments after -- go to every binary
    NOMOS_TEST_JOBS=1 tests/run.py   # binaries at once (default 2)

Exits non-zero when a build, a binary or the doc tests fail. Python 3.8+,
standard library only.
"""

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "target" / "test-logs"

# The suites' order on a two-core machine, slowest first (BENCHMARKS.md,
# "A newcomer's first test run"): starting the long ones first bounds the
# wall time by the longest, not by an unlucky last one. Binaries not named
# here follow, in cargo's order.
SLOWEST_FIRST = ["delivery", "policies", "service", "storage"]


def build(cargo_args):
    """`cargo test --workspace --no-run`; the test binaries cargo would run,
    as (name, path, package directory)."""
    cmd = ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.Popen(cmd + cargo_args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    binaries = []
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        # Examples are built (to check they compile) but not run, as by
        # `cargo test`: only targets built in test mode run.
        if not msg["profile"]["test"]:
            continue
        target = msg["target"]
        name = target["name"]
        if "lib" in target["kind"] or "bin" in target["kind"]:
            name = f"{name} ({target['kind'][0]})"
        binaries.append((name, msg["executable"], str(Path(msg["manifest_path"]).parent)))
    if proc.wait() != 0:
        sys.exit(f"tests/run.py: {' '.join(cmd)} failed")
    rank = {n: i for i, n in enumerate(SLOWEST_FIRST)}
    binaries.sort(key=lambda b: rank.get(b[0], len(rank)))
    return binaries


def counts(log):
    """The totals of the `test result:` lines of a binary's output."""
    total = {"passed": 0, "failed": 0, "ignored": 0}
    for m in re.finditer(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", log, re.M):
        for key, value in zip(("passed", "failed", "ignored"), m.groups()):
            total[key] += int(value)
    return total


def run(name, argv, cwd):
    """Runs one binary (or the doc tests) to its end; its log, status, time."""
    log_path = LOGS / (re.sub(r"[^\w.-]+", "_", name).strip("_") + ".log")
    started = time.monotonic()
    with open(log_path, "w") as log:
        status = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    return name, status, time.monotonic() - started, log_path.read_text(errors="replace")


def main():
    args = sys.argv[1:]
    cargo_args, test_args = (args[: args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
    started = time.monotonic()
    binaries = build(cargo_args)
    built = time.monotonic() - started
    LOGS.mkdir(parents=True, exist_ok=True)
    # Two at a time: each binary already runs a test per core, and the
    # suites are mostly busy cores; four at once on two cores made every
    # suite twice as slow and tests with a deadline (a 1 s insert wait, a
    # 34 s schemathesis run) miss it, where two filled the cores' idle
    # time without that.
    jobs = int(os.environ.get("NOMOS_TEST_JOBS", "2"))
    print(f"tests/run.py: {len(binaries)} test binaries and the doc tests, {jobs} at a time", flush=True)
    work = [(name, [path, *test_args], cwd) for name, path, cwd in binaries]
    # Doc tests are compiled by rustdoc when they run; cargo takes them
    # alone with --doc, as `cargo test --workspace` takes them last.
    work.append(("doc tests", ["cargo", "test", "--workspace", "--doc", *cargo_args, "--", *test_args], str(ROOT)))
    results = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run, *w) for w in work]
        for future in as_completed(futures):
            name, status, secs, log = future.result()
            c = counts(log)
            results.append((name, status, secs, c))
            verdict = "ok" if status == 0 else f"FAILED ({status})"
            print(f"  {verdict:<6} {name:<28} {secs:6.0f} s  {c['passed']} passed, "
                  f"{c['failed']} failed, {c['ignored']} ignored", flush=True)
            if status != 0:
                print(f"---- {name} ----\n{log}---- end of {name} ----", flush=True)
    wall = time.monotonic() - started
    total = {k: sum(r[3][k] for r in results) for k in ("passed", "failed", "ignored")}
    lines = [f"test build (cargo test --workspace --no-run): {built:.0f} s",
             f"tests: {wall - built:.0f} s wall, {jobs} binaries at a time; "
             f"{total['passed']} passed, {total['failed']} failed, {total['ignored']} ignored"]
    for name, status, secs, c in sorted(results, key=lambda r: -r[2]):
        lines.append(f"  {name:<28} {secs:6.0f} s  {c['passed']} passed"
                     + ("" if status == 0 else "  FAILED"))
    summary = "\n".join(lines) + "\n"
    (LOGS / "summary.txt").write_text(summary)
    print(summary, end="")
    failed = [r[0] for r in results if r[1] != 0]
    if failed:
        sys.exit(f"tests/run.py: failed: {', '.join(failed)} (logs in {LOGS})")


if __name__ == "__main__":
    main()
