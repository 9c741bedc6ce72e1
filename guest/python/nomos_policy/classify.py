"""Which status strings are terminal.

Runtimes spell states differently, so the match ignores ASCII case and
surrounding whitespace, and accepts the usual synonyms. Anything unknown is
treated as still running: waiting too long is visible and harmless, while
continuing too early would feed the agent a result that does not exist yet.
"""

from __future__ import annotations

from typing import Optional

from .text import strip_whitespace
from .types import Outcome

_OUTCOMES = {
    **dict.fromkeys(("completed", "complete", "succeeded", "success", "done"), Outcome.COMPLETED),
    **dict.fromkeys(("failed", "failure", "error", "errored", "timed_out", "timeout"), Outcome.FAILED),
    **dict.fromkeys(("cancelled", "canceled", "aborted"), Outcome.CANCELLED),
}


def classify(status: str) -> Optional[Outcome]:
    """The outcome of a terminal status, or None while it may still change."""
    status = strip_whitespace(status)
    # Only ASCII letters are folded: str.lower() would also fold letters such
    # as the Kelvin sign, which the Rust policy leaves alone.
    if not status.isascii():
        return None
    return _OUTCOMES.get(status.lower())
