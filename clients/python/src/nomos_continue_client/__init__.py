"""The runtime's side of nomos-continue: the HTTP API (`Client`), the
signed webhook (`webhooks.Receiver`) and the A2A push configurations in
the SDKs' shapes (`a2a`)."""

from .client import Client
from .errors import NomosError, ProblemError, SignatureError, TransportError
from .webhooks import Continuation, ExecutionReport, Notice, Receiver

__all__ = [
    "Client",
    "Continuation",
    "ExecutionReport",
    "NomosError",
    "Notice",
    "ProblemError",
    "Receiver",
    "SignatureError",
    "TransportError",
]
