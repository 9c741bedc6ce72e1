"""Runs every golden case through the policy's command line under a plain
CPython, without building the component: the quick loop while editing.

    python3 test_golden.py            # or: python3 -m unittest test_golden

The component itself is checked by the host (`nomos-continue policy test`)
and by `wasmtime run`; see README.md.
"""

import io
import json
import unittest
from pathlib import Path

from nomos_policy import CONTRACT, cli

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"


def run_case(command: str, stdin: bytes) -> tuple[int, bytes, bytes]:
    out, err = io.BytesIO(), io.BytesIO()
    status = cli.main([command], io.BytesIO(stdin), out, err)
    return status, out.getvalue(), err.getvalue()


class Golden(unittest.TestCase):
    def test_every_case(self):
        cases = sorted(GOLDEN.glob("*/*.in"))
        self.assertTrue(cases, f"no golden cases under {GOLDEN}")
        for case in cases:
            command = case.parent.name
            with self.subTest(case=f"{command}/{case.stem}"):
                status, out, err = run_case(command, case.read_bytes())
                expected_out = case.with_suffix(".out")
                if command == "describe":
                    # Each policy names itself; only the contract is shared.
                    self.assertEqual(status, 0, err)
                    self.assertEqual(json.loads(out)["contract"], CONTRACT)
                elif expected_out.exists():
                    self.assertEqual(status, 0, err)
                    self.assertEqual(out.decode(), expected_out.read_text(encoding="utf-8"))
                else:
                    # A bad input: one line starting "error:", worded our own way.
                    self.assertEqual(status, cli.EXIT_BAD_INPUT)
                    self.assertEqual(out, b"")
                    self.assertTrue(err.startswith(b"error: ") and err.count(b"\n") == 1, err)


if __name__ == "__main__":
    unittest.main()
