"""Every operation of docs/openapi.json has a method, or is on the
reviewed list of those left out on purpose (clients/left-out.json, with
why, shared by every client's drift test)."""

import json
import pathlib

from nomos_continue_client import Client

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOCUMENT = ROOT / "docs" / "openapi.json"
LEFT_OUT = json.loads((ROOT / "clients" / "left-out.json").read_text())["left_out"]


def operations():
    document = json.loads(DOCUMENT.read_text())
    return {
        op["operationId"]
        for item in document["paths"].values()
        for method, op in item.items()
        if method in ("get", "put", "post", "delete", "patch")
    }


def test_every_operation_has_a_method_or_a_reason():
    ops = operations()
    assert len(ops) > 20, ops
    missing = sorted(op for op in ops if op not in LEFT_OUT and not hasattr(Client, op))
    assert not missing, f"operations without a client method: {missing}"
    stale = sorted(op for op in LEFT_OUT if op not in ops)
    assert not stale, f"LEFT_OUT names operations the document no longer has: {stale}"
