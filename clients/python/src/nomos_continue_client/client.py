"""The HTTP API, as a runtime calls it (`docs/api.md`, `docs/openapi.json`).

Every method is one operation of the document, named after its
`operationId`; answers are the document's JSON objects, typed for the
writes (`types`) and as plain `dict`s for the reads. Writes the API calls safe
to repeat are retried on a connection failure, a 503 or a 429 that says
when (`Retry-After`); those that need an `Idempotency-Key` get one
generated once per call and sent with every try.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Mapping, Optional, Union, cast

import httpx

from . import types as t
from .errors import ProblemError, TransportError

Id = Union[str, uuid.UUID]
JSON = dict[str, Any]

class Client:
    """One runtime's connection to nomos-continue.

    `base_url` is the API's (`http://127.0.0.1:7300`), `token` the runtime
    token (`serve --token`). `timeout` bounds each try; `retries` the tries
    after the first for writes that are safe to repeat.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        max_backoff: float = 5.0,
        http: Optional[httpx.Client] = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = http or httpx.Client(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = headers
        self._retries = retries
        self._max_backoff = max_backoff

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------

    def link_tool_result(
        self, session_id: Id, text: str, *, traceparent: Optional[str] = None
    ) -> t.LinkAnswer:
        """Posts a tool's answer; the policy links the executions it names."""
        answer = self._write(
            "POST", f"/v1/sessions/{session_id}/tool-results", {"text": text}, trace=traceparent
        )
        return cast(t.LinkAnswer, answer)

    def decide_approval(
        self,
        session_id: Id,
        decision: str,
        *,
        route: Optional[str] = None,
        minutes: Optional[int] = None,
    ) -> t.ApprovalAnswer:
        """`approve` opens (or extends) the assent window, `deny` closes it."""
        body: JSON = {"decision": decision}
        if route is not None:
            body["route"] = route
        if minutes is not None:
            body["minutes"] = minutes
        return cast(t.ApprovalAnswer, self._write("POST", f"/v1/sessions/{session_id}/approvals", body))

    def approve(
        self, session_id: Id, minutes: Optional[int] = None, route: str = "api"
    ) -> t.ApprovalAnswer:
        return self.decide_approval(session_id, "approve", route=route, minutes=minutes)

    def deny(self, session_id: Id) -> t.ApprovalAnswer:
        return self.decide_approval(session_id, "deny")

    def record_turn(self, session_id: Id, role: str, content: str) -> JSON:
        """A chat turn for `chatWith` to replay; sent with an Idempotency-Key
        (the same words may be said twice)."""
        body = {"role": role, "content": content}
        return self._write("POST", f"/v1/sessions/{session_id}/turns", body, keyed=True)

    def sessions(self, **query: Any) -> JSON:
        return self._read("/v1/sessions", query)

    def session(self, session_id: Id) -> JSON:
        return self._read(f"/v1/sessions/{session_id}")

    def links(self, session_id: Id, **query: Any) -> JSON:
        return self._read(f"/v1/sessions/{session_id}/links", query)

    def deliveries(self, session_id: Id, **query: Any) -> JSON:
        return self._read(f"/v1/sessions/{session_id}/deliveries", query)

    def notices(self, session_id: Id, **query: Any) -> JSON:
        return self._read(f"/v1/sessions/{session_id}/notices", query)

    def overview(self) -> JSON:
        return self._read("/v1/overview")

    # -- executions -------------------------------------------------------

    def record_execution(
        self,
        execution_id: Id,
        status: str,
        result: Optional[str] = None,
        *,
        traceparent: Optional[str] = None,
    ) -> t.ExecutionRecorded:
        """Reports an execution's state (`running`, `completed`, `failed`, ...)."""
        body: JSON = {"status": status}
        if result is not None:
            body["result"] = result
        answer = self._write("PUT", f"/v1/executions/{execution_id}", body, trace=traceparent)
        return cast(t.ExecutionRecorded, answer)

    def execution(self, execution_id: Id) -> t.ExecutionView:
        return cast(t.ExecutionView, self._read(f"/v1/executions/{execution_id}"))

    # -- protocol tasks ---------------------------------------------------

    def register_task(
        self,
        session_id: Id,
        protocol: str,
        task_id: str,
        *,
        agent_url: Optional[str] = None,
        agent_version: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
    ) -> t.TaskRegistered:
        """Links a protocol task (`a2a`, `mcp`) to the session; for A2A the
        answer's `push` is its push configuration."""
        body: JSON = {"protocol": protocol, "task_id": task_id}
        if agent_url is not None:
            body["agent"] = {"url": agent_url, "version": agent_version or "1.0"}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return cast(t.TaskRegistered, self._write("POST", f"/v1/sessions/{session_id}/tasks", body))

    def mint_session_push(
        self, session_id: Id, *, ttl_seconds: Optional[int] = None
    ) -> t.SessionPush:
        """A push configuration for every A2A task the session's agent will
        create (see `nomos_continue_client.a2a` for the SDKs' shapes)."""
        body: JSON = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        answer = self._write("POST", f"/v1/sessions/{session_id}/push-configs", body)
        return cast(t.SessionPush, answer)

    def record_mcp_task(
        self,
        answer: Mapping[str, Any],
        *,
        task_id: Optional[str] = None,
        traceparent: Optional[str] = None,
    ) -> t.McpTaskRecorded:
        """Forwards what the runtime's MCP client got about a task."""
        params = {"task_id": task_id} if task_id else None
        recorded = self._write(
            "POST", "/v1/mcp/tasks", dict(answer), params=params, trace=traceparent
        )
        return cast(t.McpTaskRecorded, recorded)

    # -- deliveries, policy, service --------------------------------------

    def delivery(self, delivery_id: Id) -> t.Delivery:
        return cast(t.Delivery, self._read(f"/v1/deliveries/{delivery_id}"))

    def retry(self, delivery_id: Id) -> t.RetryAnswer:
        """Sends a failed delivery again under its key; with an Idempotency-Key."""
        answer = self._write("POST", f"/v1/deliveries/{delivery_id}/retry", {}, keyed=True)
        return cast(t.RetryAnswer, answer)

    def policy_info(self) -> JSON:
        return self._read("/v1/policy")

    def healthz(self) -> JSON:
        return self._read("/healthz")

    def readyz(self) -> JSON:
        return self._read("/readyz")

    # -- the wire ---------------------------------------------------------

    def _read(self, path: str, query: Optional[Mapping[str, Any]] = None) -> JSON:
        return self._send("GET", path, None, dict(query or {}), {}, tries=1 + self._retries)

    def _write(
        self,
        method: str,
        path: str,
        body: JSON,
        *,
        keyed: bool = False,
        params: Optional[Mapping[str, Any]] = None,
        trace: Optional[str] = None,
    ) -> JSON:
        headers = {}
        if keyed:
            # One key for every try of this one call.
            headers["Idempotency-Key"] = str(uuid.uuid4())
        if trace:
            headers["traceparent"] = trace
        return self._send(method, path, body, dict(params or {}), headers, tries=1 + self._retries)

    def _send(
        self,
        method: str,
        path: str,
        body: Optional[JSON],
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        tries: int,
    ) -> JSON:
        wait = 0.2
        for attempt in range(tries):
            last = attempt == tries - 1
            try:
                response = self._http.request(
                    method,
                    self._base + path,
                    json=body,
                    params=params or None,
                    headers={**self._headers, **headers},
                )
            except httpx.TransportError as error:
                if last:
                    raise TransportError(f"{method} {path}: {error}") from error
                time.sleep(wait)
                wait = min(wait * 2, self._max_backoff)
                continue
            if response.is_success:
                return response.json() if response.content else {}
            problem = _problem(response)
            if last or not problem.retryable:
                raise problem
            time.sleep(min(problem.retry_after or wait, self._max_backoff))
            wait = min(wait * 2, self._max_backoff)
        raise AssertionError("unreachable: the last try returns or raises")


def _problem(response: httpx.Response) -> ProblemError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    retry_after = response.headers.get("retry-after")
    return ProblemError(
        status=response.status_code,
        type=str(body.get("type", "about:blank")),
        title=str(body.get("title", response.reason_phrase)),
        detail=str(body.get("detail", response.text[:200])),
        request_id=body.get("request_id") or response.headers.get("x-request-id"),
        retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None,
        body=body,
    )
