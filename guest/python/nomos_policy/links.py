"""What a tool result names for the host to watch: protocol tasks and
execution ids.

The same search as the Rust policy's (guest/src/links.rs, whose doc names
each shape): when the trimmed text is a JSON object or array, it is searched
for MCP task-creating results (2025-11-25 `{"task": {"taskId"}}`, the
2026-07-28 tasks extension's `"resultType": "task"`), A2A Tasks (1.0 with
`contextId`, 0.3 with `"kind": "task"`, bare or under `task`) and A2A
Messages naming a `taskId`, inside JSON-RPC responses and inside the text
blocks and structured content of an MCP CallToolResult, to a bounded depth.
Then execution ids are found in the text as extract.py finds them. Tasks
come first, then execution ids; no link twice, at most MAX_LINKS.
"""

from __future__ import annotations

import json
from typing import Any

from .extract import MAX_IDS, extract_execution_ids
from .text import strip_whitespace
from .types import ExecutionLink, LinkRef, TaskLink, TaskProtocol, TaskRef

# At most this many links from one tool result (the cap on ids).
MAX_LINKS = MAX_IDS

# The longest task id linked; a longer one is ignored (the host refuses it).
MAX_TASK_ID_BYTES = 1024

# How deep results nest inside each other before the search stops.
_MAX_DEPTH = 4

# serde_json refuses nesting deeper than this; the JSON is then no JSON.
_SERDE_DEPTH = 128


def extract_links(text: str) -> list[LinkRef]:
    """What `text` names, in the order the module's doc describes."""
    links: list[LinkRef] = []
    value = _json_of(text)
    if value is not None:
        _find_tasks(value, 0, links)
    for execution_id in extract_execution_ids(text):
        _push(links, ExecutionLink(execution_id))
    return links


class _NotJson(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


def _json_of(text: str) -> Any:
    """The JSON value of `text` if, trimmed, it is a JSON object or array
    that serde_json would read too."""
    text = strip_whitespace(text)
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError, _NotJson):
        return None
    return value if _readable(value, 1) else None


def _readable(value: Any, depth: int) -> bool:
    """Whether serde_json reads it too: not nested past its limit, and no
    lone surrogate (which Python's json lets through)."""
    if isinstance(value, str):
        return _whole(value)
    if isinstance(value, (list, dict)):
        if depth > _SERDE_DEPTH:
            return False
        items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        return all((k is None or _whole(k)) and _readable(v, depth + 1) for k, v in items)
    return True


def _whole(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _push(links: list[LinkRef], found: LinkRef) -> None:
    if len(links) < MAX_LINKS and found not in links:
        links.append(found)


def _push_task(links: list[LinkRef], protocol: TaskProtocol, task_id: str) -> None:
    if task_id and len(task_id.encode("utf-8")) <= MAX_TASK_ID_BYTES:
        _push(links, TaskLink(TaskRef(protocol, task_id)))


def _find_tasks(value: Any, depth: int, links: list[LinkRef]) -> None:
    if depth > _MAX_DEPTH or len(links) >= MAX_LINKS:
        return
    if isinstance(value, list):
        for item in value[:MAX_LINKS]:
            _find_tasks(item, depth + 1, links)
    elif isinstance(value, dict):
        _find_in_object(value, depth, links)


def _text(value: Any, key: str) -> str | None:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def _find_in_object(obj: dict[str, Any], depth: int, links: list[LinkRef]) -> None:
    # A JSON-RPC response: its result is what the tool answered.
    if _text(obj, "jsonrpc") is not None:
        if "result" in obj:
            _find_tasks(obj["result"], depth + 1, links)
        return
    # MCP 2026-07-28: the task's fields beside the discriminator.
    if _text(obj, "resultType") == "task":
        task_id = _text(obj, "taskId")
        if task_id is not None:
            _push_task(links, TaskProtocol.MCP, task_id)
    # MCP 2025-11-25 `task.taskId`; A2A 1.0's SendMessage answer `task`.
    task = obj.get("task")
    if isinstance(task, dict):
        task_id = _text(task, "taskId")
        if task_id is not None:
            _push_task(links, TaskProtocol.MCP, task_id)
        else:
            _a2a_task(task, links)
    _a2a_task(obj, links)
    message = obj.get("message")
    if isinstance(message, dict):
        _a2a_message(message, links)
    _a2a_message(obj, links)
    # An MCP CallToolResult: a tool may return task JSON as its text.
    blocks = obj.get("content")
    if isinstance(blocks, list):
        for block in blocks[:MAX_LINKS]:
            text = _text(block, "text")
            if _text(block, "type") == "text" and text is not None:
                inner = _json_of(text)
                if inner is not None:
                    _find_tasks(inner, depth + 1, links)
    if "structuredContent" in obj:
        _find_tasks(obj["structuredContent"], depth + 1, links)


def _a2a_task(obj: dict[str, Any], links: list[LinkRef]) -> None:
    """An A2A Task: an `id` and a `status` holding a `state`, marked as a task
    by 0.3's `"kind": "task"` or 1.0's `contextId`."""
    has_state = _text(obj.get("status"), "state") is not None
    marked = _text(obj, "kind") == "task" or _text(obj, "contextId") is not None
    task_id = _text(obj, "id")
    if has_state and marked and task_id is not None:
        _push_task(links, TaskProtocol.A2A, task_id)


def _a2a_message(obj: dict[str, Any], links: list[LinkRef]) -> None:
    """An A2A Message (`messageId` and `role`) naming the task it belongs to."""
    is_message = _text(obj, "messageId") is not None and _text(obj, "role") is not None
    task_id = _text(obj, "taskId")
    if is_message and task_id is not None:
        _push_task(links, TaskProtocol.A2A, task_id)
