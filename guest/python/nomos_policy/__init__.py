"""The default nomos-continue continuation policy, in Python.

The same judgement as the Rust policy in guest/src, module for module:

- types: the contract's data and RFC 3339 times; jsonform: its JSON form.
- links: what a tool result names: protocol tasks in its JSON, execution ids.
- extract: which execution ids a tool result's text names.
- classify: which status strings are terminal, and which wait for a person.
- decide: wait / continue / drop for one execution, and the loop guards.
- note: the text the agent is re-invoked with.
- soul: the text appended to the agent's system prompt.
- cli: the stdin/stdout commands of `wasmtime run policy.wasm CMD`.

Nothing here imports the componentize-py bindings: app.py (the component)
adapts these functions to the WIT exports, so the logic also runs under a
plain CPython for quick tests (see test_golden.py).
"""

from .types import PolicyInfo

# The contract this policy implements; the host refuses other majors.
CONTRACT = "nomos:continuation@0.2.0"
# The name and version this policy reports in `describe`.
POLICY_NAME = "nomos-default-python"
POLICY_VERSION = "0.1.0"


def describe() -> PolicyInfo:
    """The policy's name, version and contract."""
    return PolicyInfo(name=POLICY_NAME, version=POLICY_VERSION, contract=CONTRACT)
