"""Prints how long this disk takes to make a small write durable (the
median of 200 `fdatasync` calls after an 8 KiB write, as a database's
commit does), in the directory given (default: target/). Disks differ
twofold in this, and the PostgreSQL and SQLite tests commit thousands of
times: `.ci/run` prints it beside the machine's cores so that a run's
times can be compared with another machine's."""

import os
import statistics
import sys
import time
from pathlib import Path

directory = Path(sys.argv[1] if len(sys.argv) > 1 else "target")
directory.mkdir(parents=True, exist_ok=True)
probe = directory / ".fsync-probe"
fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
try:
    block = b"\0" * 8192
    samples = []
    for i in range(200):
        os.pwrite(fd, block, (i % 16) * len(block))
        started = time.perf_counter()
        os.fdatasync(fd)
        samples.append(time.perf_counter() - started)
finally:
    os.close(fd)
    probe.unlink()
print(f"{statistics.median(samples) * 1e6:.0f} µs")
