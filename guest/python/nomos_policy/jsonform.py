"""Reading decision inputs from JSON and writing answers as JSON.

Reading is strict, like the Rust policy's serde: every record refuses keys it
does not know and keys given twice, a required key may not be missing, and a
count must be a whole number that fits a u32. `null` is accepted where the
Rust policy accepts it (an absent window or finish time, an empty result) and
refused elsewhere.

Writing gives the bytes serde_json gives: no spaces, keys in a fixed order,
non-ASCII text as is, and control characters escaped (`\\n`, `\\u001b`).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .types import (
    ApprovalRoute,
    Continue,
    Decision,
    DecisionInput,
    Drop,
    Execution,
    ExecutionLink,
    InputError,
    LinkRef,
    Outcome,
    PersonNeed,
    PolicyInfo,
    Session,
    TaskProtocol,
    TaskRef,
    Timestamp,
    Wait,
    Window,
    parse_rfc3339,
)

_U32_MAX = 2**32 - 1


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept, as serde_json writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Any:
    """Parses JSON, refusing what serde_json refuses and Python allows."""
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except InputError:
        raise
    except RecursionError:
        raise InputError("recursion limit exceeded") from None
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        raise InputError(str(e)) from None


def _no_constant(name: str) -> Any:
    raise InputError(f"expected value, found {name}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise InputError(f"duplicate field `{key}`")
        record[key] = value
    return record


# --- reading ---------------------------------------------------------------


def decision_input(value: Any) -> DecisionInput:
    fields = _record(value, "DecisionInput", ("now", "execution", "session"), ("attempts",))
    return DecisionInput(
        now=_timestamp(fields["now"]),
        execution=_execution(fields["execution"]),
        session=_session(fields["session"]),
        attempts=_u32(fields.get("attempts", 0)),
    )


def decision_inputs(value: Any) -> list[DecisionInput]:
    if not isinstance(value, list):
        raise InputError(f"invalid type: {_kind(value)}, expected a sequence")
    return [decision_input(item) for item in value]


def _execution(value: Any) -> Execution:
    fields = _record(value, "Execution", ("id", "status"), ("result", "finished_at", "task"))
    result = fields.get("result")
    finished = fields.get("finished_at")
    task = fields.get("task")
    return Execution(
        id=_string(fields["id"]),
        status=_string(fields["status"]),
        # A runtime writes `"result": null` for an execution with no output yet:
        # the same fact as no result at all, so it decides like "".
        result="" if result is None else _string(result),
        finished_at=None if finished is None else _timestamp(finished),
        task=None if task is None else _task(task),
    )


def _task(value: Any) -> TaskRef:
    fields = _record(value, "TaskRef", ("protocol", "id"), ())
    return TaskRef(protocol=_variant(fields["protocol"], TaskProtocol), id=_string(fields["id"]))


def _session(value: Any) -> Session:
    fields = _record(
        value,
        "Session",
        # Required: a missing count must not read as zero and defeat the loop guard.
        ("id", "continuations_in_window"),
        ("window", "still_running"),
    )
    window = fields.get("window")
    return Session(
        id=_string(fields["id"]),
        continuations_in_window=_u32(fields["continuations_in_window"]),
        window=None if window is None else _window(window),
        still_running=_strings(fields.get("still_running", [])),
    )


def _window(value: Any) -> Window:
    fields = _record(value, "Window", ("opened_at", "expires_at", "route"), ())
    return Window(
        opened_at=_timestamp(fields["opened_at"]),
        expires_at=_timestamp(fields["expires_at"]),
        route=_route(fields["route"]),
    )


def _route(value: Any) -> ApprovalRoute:
    return _variant(value, ApprovalRoute)


def _variant(value: Any, kind: Any) -> Any:
    """The member of an enum its JSON word names."""
    text = _string(value)
    for member in kind:
        if member.value == text:
            return member
    expected = ", ".join(f"`{m.value}`" for m in kind)
    raise InputError(f"unknown variant `{text}`, expected one of {expected}")


def _record(value: Any, name: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    """The keys of a JSON object that must hold exactly these fields."""
    if not isinstance(value, dict):
        raise InputError(f"invalid type: {_kind(value)}, expected struct {name}")
    known = required + optional
    for key in value:
        if key not in known:
            expected = ", ".join(f"`{k}`" for k in known)
            raise InputError(f"unknown field `{key}`, expected one of {expected}")
    for key in required:
        if key not in value:
            raise InputError(f"missing field `{key}`")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise InputError(f"invalid type: {_kind(value)}, expected a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # json.loads lets "\ud800" through; serde_json and the WIT do not.
        raise InputError("lone surrogate in hex escape") from None
    return value


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise InputError(f"invalid type: {_kind(value)}, expected a sequence")
    return [_string(item) for item in value]


def _u32(value: Any) -> int:
    # bool is an int in Python, never in JSON's sense.
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"invalid type: {_kind(value)}, expected u32")
    if not 0 <= value <= _U32_MAX:
        raise InputError(f"invalid value: integer `{value}`, expected u32")
    return value


def _timestamp(value: Any) -> Timestamp:
    return parse_rfc3339(_string(value))


def _kind(value: Any) -> str:
    """How serde names the JSON type it found."""
    kinds: list[tuple[type, Callable[[Any], str]]] = [
        (bool, lambda v: f"boolean `{'true' if v else 'false'}`"),
        (int, lambda v: f"integer `{v}`"),
        (float, lambda v: f"floating point `{v}`"),
        (str, lambda v: f"string {dumps(v)}"),
        (list, lambda v: "sequence"),
        (dict, lambda v: "map"),
    ]
    for kind, describe in kinds:
        if isinstance(value, kind):
            return describe(value)
    return "null"


# --- writing ---------------------------------------------------------------


def status_class(outcome: Outcome | None, person: PersonNeed | None = None) -> dict[str, Any]:
    """`{"terminal":false}`, `{"terminal":true,"outcome":"failed"}` or
    `{"terminal":false,"person":"input"}`."""
    if outcome is not None:
        return {"terminal": True, "outcome": outcome.value}
    if person is not None:
        return {"terminal": False, "person": person.value}
    return {"terminal": False}


def link(found: LinkRef) -> dict[str, Any]:
    """`{"execution":"<uuid>"}` or `{"task":{"protocol":"mcp","id":...}}`."""
    if isinstance(found, ExecutionLink):
        return {"execution": found.id}
    return {"task": {"protocol": found.task.protocol.value, "id": found.task.id}}


def decision(answer: Decision) -> dict[str, Any]:
    """`{"decision":"wait"}`, `{"decision":"continue","note":...}` or `{"decision":"drop","reason":...}`."""
    if isinstance(answer, Continue):
        return {"decision": "continue", "note": answer.note}
    if isinstance(answer, Drop):
        return {"decision": "drop", "reason": answer.reason}
    assert isinstance(answer, Wait)
    return {"decision": "wait"}


def policy_info(info: PolicyInfo) -> dict[str, Any]:
    return {"name": info.name, "version": info.version, "contract": info.contract}
