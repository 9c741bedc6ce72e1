"""How long each console view takes in the browser: from the navigation
until the view is in the page, aged and painted (fetch, innerHTML, the
script's ages, layout), in headless chromium through chromedriver.

Run against `console_bench --hold-secs N` (BENCHMARKS.md, "The console"),
with the standard library only:

    python3 tests/python/console_page_timing.py BASE TOKEN BUSY_SESSION [SAMPLES]
"""

import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(driver, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(driver + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)["value"]


# One navigation, timed by the page: the view is shown when the script's
# load has put it in the page; two animation frames later it is painted.
TIMED = """
const done = arguments[arguments.length - 1];
const started = performance.now();
history.replaceState(null, "", arguments[0]);
load(false).then(() => requestAnimationFrame(() => requestAnimationFrame(() => {
  done([performance.now() - started, document.getElementById("view").innerHTML.length]);
})));
"""


def main():
    base, token, busy = sys.argv[1:4]
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    port = free_port()
    profile = tempfile.mkdtemp(prefix="nomos-timing-")
    chromedriver = subprocess.Popen(["chromedriver", f"--port={port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                call(driver, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        session = call(driver, "POST", "/session", {"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": {"args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", f"--user-data-dir={profile}"]}}}})["sessionId"]
        at = f"/session/{session}"
        try:
            call(driver, "POST", at + "/timeouts", {"script": 120000})
            call(driver, "POST", at + "/url", {"url": base + "/ui"})
            call(driver, "POST", at + "/execute/sync", {
                "script": "sessionStorage.setItem('nomos-console-token', arguments[0]);"
                          "sessionStorage.setItem('nomos-console-refresh', 'off');",
                "args": [token]})
            call(driver, "POST", at + "/refresh", {})
            views = [
                ("sessions, first page", "#/sessions"),
                ("timeline, busy session, first page", f"#/session/{busy}"),
                ("policy", "#/policy"),
                ("playground", "#/playground"),
            ]
            print("| view | median | slowest | HTML |")
            print("| --- | ---: | ---: | ---: |")
            for name, hash_ in views:
                times = []
                size = 0
                for i in range(samples + 1):
                    took, size = call(driver, "POST", at + "/execute/async",
                                      {"script": TIMED, "args": [hash_]})
                    if i > 0:
                        times.append(took)
                print(f"| {name} | {statistics.median(times):.0f} ms | {max(times):.0f} ms "
                      f"| {size / 1024:.0f} KiB |")
        finally:
            call(driver, "DELETE", at)
    finally:
        chromedriver.kill()


if __name__ == "__main__":
    main()
