"""Summarises `cargo build --timings`' report (target/cargo-timings/
cargo-timing.html): the build's wall time, the slowest units, and how much
of it was this workspace's own crates and its binaries' compile-and-link
(the test binaries, the examples, the binary). Printed by .ci/run after the
test build, so each run's log carries its own breakdown."""

import json
import re
import sys
from pathlib import Path

report = Path(sys.argv[1] if len(sys.argv) > 1 else "target/cargo-timings/cargo-timing.html")
html = report.read_text()
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S).group(1))
ends = [u["start"] + u["duration"] for u in units]
print(f"build: {max(ends):.0f} s wall, {len(units)} units, "
      f"{sum(u['duration'] for u in units):.0f} s of unit time")
ours = ("nomos-continue", "nomos-continue-tests", "nomos-policy-default", "nomos-hostile-guest")
own = [u for u in units if u["name"] in ours]
print(f"this workspace's crates: {sum(u['duration'] for u in own):.0f} s over {len(own)} units")
kinds = ('"test"', '"bin"', '"example"', '"bench"', "(test)")
linked = [u for u in own if any(k in u["target"] for k in kinds)]
scripts = [u for u in own if u.get("mode") == "run-custom-build"]
print(f"  of which binaries (tests, examples, the binary): "
      f"{sum(u['duration'] for u in linked):.0f} s over {len(linked)} units")
print(f"  build scripts run (the guests' wasm builds among them): "
      f"{sum(u['duration'] for u in scripts):.0f} s over {len(scripts)} units")
print("slowest units:")
for u in sorted(units, key=lambda u: -u["duration"])[:15]:
    print(f"  {u['duration']:6.1f} s  {u['name']} {u['version']}{u['target']} ({u.get('mode', '')})")
