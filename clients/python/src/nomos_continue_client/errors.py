"""What the API refuses with, as one typed error."""

from __future__ import annotations

from typing import Any, Mapping, Optional


class NomosError(Exception):
    """Anything this client raises."""


class ProblemError(NomosError):
    """An answer of the API that is not a success: its problem document
    (RFC 9457, `application/problem+json`), read into fields.

    `kind` is the problem type after `urn:nomos-continue:problem:`
    (`bad-request`, `conflict`, `session-task-limit`, ...), the key a
    caller branches on; `type` keeps the whole URN.
    """

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = dict(body or {})

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def retryable(self) -> bool:
        """A condition that passes (the API sends `Retry-After` with each)."""
        return self.status in (429, 503) and self.retry_after is not None


class TransportError(NomosError):
    """No answer at all: the connection failed or timed out."""


class SignatureError(NomosError):
    """A webhook request whose signature, timestamp or envelope is not one
    nomos-continue sent."""
