"""The runtime's webhook: what nomos-continue POSTs (`docs/webhooks.md`),
verified the Standard Webhooks way and read into a typed event.

`Receiver.verify` checks the timestamp (five minutes either way) and the
signatures (any configured secret, so a rotation has two), refuses an
envelope `type` it does not know, and answers a `Continuation` or a
`Notice`. `Receiver.handle` is the whole receiver, independent of any
framework: bytes and headers in, status and body out, answering as the
service expects (2xx once accepted, 409 while the same key is being
handled, 401 for a bad signature, 400 for an unknown type, 503 when the
runtime's own handler failed, so the delivery is tried again). `asgi` and
`wsgi` wrap it for those servers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Union

from .errors import NomosError, SignatureError

#: How far a request's timestamp may be from this clock, either way.
TOLERANCE_SECONDS = 300


@dataclass(frozen=True)
class ExecutionReport:
    """One finished execution folded into a continuation."""

    id: str
    status: str
    outcome: str
    result: str


@dataclass(frozen=True)
class Continuation:
    """`continuation.v1`: re-invoke the session's agent with `note` after
    the history (as context, not a typed turn) and `soul` in its system
    prompt."""

    session_id: str
    idempotency_key: str
    executions: list[ExecutionReport]
    note: str
    soul: str
    timestamp: str
    traceparent: Optional[str] = None


@dataclass(frozen=True)
class Notice:
    """`notice.v1`: show `notice` to the session's operator; do not run
    the agent."""

    session_id: str
    idempotency_key: str
    notice: str
    timestamp: str
    traceparent: Optional[str] = None


Event = Union[Continuation, Notice]


@dataclass
class Answer:
    """What to answer nomos-continue."""

    status: int
    body: bytes = b"{}"
    headers: list[tuple[str, str]] = field(
        default_factory=lambda: [("content-type", "application/json")]
    )


class Receiver:
    """Verifies and reads the webhook's requests for the given secrets
    (`whsec_…`, as `serve --webhook-secret` has them; two while one is
    rotated)."""

    def __init__(self, secrets: Iterable[str], *, tolerance: int = TOLERANCE_SECONDS) -> None:
        self._keys = [_key(s) for s in secrets]
        if not self._keys:
            raise ValueError("at least one webhook secret (whsec_...)")
        self._tolerance = tolerance
        self._lock = threading.Lock()
        self._accepted: set[str] = set()
        self._handling: set[str] = set()

    def verify(
        self, body: bytes, headers: Mapping[str, str], *, now: Optional[float] = None
    ) -> Event:
        """The event of one request, or `SignatureError`."""
        lower = {k.lower(): v for k, v in headers.items()}
        webhook_id = lower.get("webhook-id")
        stamp = lower.get("webhook-timestamp")
        signatures = lower.get("webhook-signature")
        if not (webhook_id and stamp and signatures):
            raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
        try:
            sent = int(stamp)
        except ValueError as error:
            raise SignatureError(f"webhook-timestamp {stamp!r} is not Unix seconds") from error
        if abs((time.time() if now is None else now) - sent) > self._tolerance:
            raise SignatureError("webhook-timestamp is outside the tolerance (a replay?)")
        signed = f"{webhook_id}.{stamp}.".encode() + body
        expected = [
            base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()) for key in self._keys
        ]
        offered = [
            entry.split(",", 1)[1].encode()
            for entry in signatures.split()
            if entry.startswith("v1,")
        ]
        if not any(hmac.compare_digest(o, e) for o in offered for e in expected):
            raise SignatureError("no signature matches a configured secret")
        return parse(body, lower.get("traceparent"))

    def handle(
        self,
        body: bytes,
        headers: Mapping[str, str],
        on_event: Callable[[Event], None],
    ) -> Answer:
        """The whole receiver: verify, refuse, de-duplicate by key, call
        `on_event` once per key (it should store or queue the agent's turn,
        not run it), and answer. Keys are remembered in memory; a runtime
        with several processes keeps them where all can see them."""
        try:
            event = self.verify(body, headers)
        except UnknownEvent as error:
            return _answer(400, str(error))
        except SignatureError as error:
            return _answer(401, str(error))
        key = event.idempotency_key
        with self._lock:
            if key in self._accepted:
                return Answer(200)
            if key in self._handling:
                return _answer(409, "this key is being handled")
            self._handling.add(key)
        try:
            on_event(event)
        except Exception as error:  # the runtime's own failure: try again later
            with self._lock:
                self._handling.discard(key)
            return _answer(503, f"the runtime could not take it: {error}")
        with self._lock:
            self._handling.discard(key)
            self._accepted.add(key)
        return Answer(200)


class UnknownEvent(NomosError):
    """A verified request of a `type` this client does not know (a later
    version): refused rather than guessed at."""


def parse(body: bytes, traceparent: Optional[str] = None) -> Event:
    """The typed event of a verified body."""
    try:
        envelope = json.loads(body)
        kind = envelope["type"]
        data = envelope["data"]
        stamp = envelope.get("timestamp", "")
    except (ValueError, KeyError, TypeError) as error:
        raise UnknownEvent(f"not a nomos-continue envelope: {error}") from error
    if kind == "continuation.v1":
        return Continuation(
            session_id=data["session_id"],
            idempotency_key=data["idempotency_key"],
            executions=[ExecutionReport(**e) for e in data["executions"]],
            note=data["note"],
            soul=data["soul"],
            timestamp=stamp,
            traceparent=traceparent,
        )
    if kind == "notice.v1":
        return Notice(
            session_id=data["session_id"],
            idempotency_key=data["idempotency_key"],
            notice=data["notice"],
            timestamp=stamp,
            traceparent=traceparent,
        )
    raise UnknownEvent(f"unknown event type {kind!r}")


def asgi(receiver: Receiver, on_event: Callable[[Event], Any]) -> Callable[..., Awaitable[None]]:
    """An ASGI application for the webhook's URL."""

    async def app(
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        answer = receiver.handle(b"".join(chunks), headers, on_event)
        raw = [(k.encode(), v.encode()) for k, v in answer.headers]
        await send({"type": "http.response.start", "status": answer.status, "headers": raw})
        await send({"type": "http.response.body", "body": answer.body})

    return app


def wsgi(receiver: Receiver, on_event: Callable[[Event], Any]) -> Callable[..., Iterable[bytes]]:
    """A WSGI application for the webhook's URL."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        answer = receiver.handle(body, headers, on_event)
        start_response(f"{answer.status} {_REASONS.get(answer.status, '')}", answer.headers)
        return [answer.body]

    return app


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 409: "Conflict",
            503: "Service Unavailable"}


def _answer(status: int, detail: str) -> Answer:
    return Answer(status, json.dumps({"detail": detail}).encode())


def _key(secret: str) -> bytes:
    if not secret.startswith("whsec_"):
        raise ValueError("a webhook secret starts with whsec_")
    return base64.b64decode(secret[len("whsec_"):])
