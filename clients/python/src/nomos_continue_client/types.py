"""The answers of the writes a runtime makes, as docs/openapi.json
describes them (`TypedDict`s: the JSON objects as received, with their
fields typed for a type checker). Times are RFC 3339 strings."""

from __future__ import annotations

from typing import List, Literal, Optional, TypedDict


class Window(TypedDict):
    opened_at: str
    expires_at: str
    open: bool
    route: Literal["button", "chat", "api"]
    continuations: int
    closed_at: Optional[str]


class ApprovalAnswer(TypedDict):
    window: Optional[Window]


class LinkedTask(TypedDict):
    execution_id: str
    protocol: str
    task_id: str


class LinkedElsewhere(TypedDict):
    execution_id: str
    session_id: str


class LinkAnswer(TypedDict):
    linked: List[str]
    already_linked: List[str]
    linked_elsewhere: List[LinkedElsewhere]
    tasks: List[LinkedTask]
    policy_revision: str


class Execution(TypedDict):
    id: str
    status: str
    result: str
    terminal: bool
    updated_at: str
    finished_at: Optional[str]


class ExecutionRecorded(TypedDict):
    execution: Execution
    applied: bool
    note: Optional[str]


class ExecutionView(TypedDict):
    execution: Optional[Execution]
    session_id: Optional[str]


class PushAuthentication(TypedDict):
    scheme: str
    credentials: str


class TaskPush(TypedDict):
    url: str
    token: str
    authentication: PushAuthentication
    expires_at: str


class TaskRegistered(TypedDict):
    execution_id: str
    linked: bool
    push: Optional[TaskPush]


class SessionPush(TypedDict):
    url: str
    token: str
    authentication: PushAuthentication
    links_until: str
    max_tasks: int


class McpTaskRecorded(TypedDict):
    execution_id: str
    execution: Optional[Execution]
    applied: bool
    note: Optional[str]


class Delivery(TypedDict):
    id: str
    session_id: str
    kind: Literal["continuation", "notice"]
    idempotency_key: str
    execution_ids: List[str]
    note: str
    policy_revision: str
    state: Literal["pending", "delivered", "failed", "dropped"]
    failed_attempts: int
    next_attempt_at: str
    created_at: str
    updated_at: str
    delivered_at: Optional[str]
    last_error: Optional[str]


class RetryAnswer(TypedDict):
    delivery: Delivery
