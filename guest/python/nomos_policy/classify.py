"""Which status strings are terminal, and which wait for a person.

Runtimes spell states differently, so the match ignores ASCII case and
surrounding whitespace, and accepts the usual synonyms, among them the task
states of MCP Tasks and of A2A (0.3's `input-required`, 1.0's
`TASK_STATE_*`, whose name is classified like the bare word). Anything unknown is
treated as still running: waiting too long is visible and harmless, while
continuing too early would feed the agent a result that does not exist yet.
"""

from __future__ import annotations

from typing import Optional

from .text import strip_whitespace
from .types import Outcome, PersonNeed

_OUTCOMES = {
    **dict.fromkeys(("completed", "complete", "succeeded", "success", "done"), Outcome.COMPLETED),
    **dict.fromkeys(
        ("failed", "failure", "error", "errored", "timed_out", "timeout", "rejected"), Outcome.FAILED
    ),
    **dict.fromkeys(("cancelled", "canceled", "aborted"), Outcome.CANCELLED),
}

_PERSON_NEEDS = {
    **dict.fromkeys(("input_required", "input-required"), PersonNeed.INPUT),
    **dict.fromkeys(("auth_required", "auth-required"), PersonNeed.AUTHORIZATION),
}

# A2A 1.0 writes each state as TASK_STATE_<NAME>.
_A2A_PREFIX = "task_state_"


def _word(status: str) -> Optional[str]:
    status = strip_whitespace(status)
    # Only ASCII letters are folded: str.lower() would also fold letters such
    # as the Kelvin sign, which the Rust policy leaves alone.
    if not status.isascii():
        return None
    status = status.lower()
    return status[len(_A2A_PREFIX) :] if status.startswith(_A2A_PREFIX) else status


def classify(status: str) -> Optional[Outcome]:
    """The outcome of a terminal status, or None while it may still change."""
    word = _word(status)
    return None if word is None else _OUTCOMES.get(word)


def person_need(status: str) -> Optional[PersonNeed]:
    """What a status that waits for a person asks for, or None."""
    word = _word(status)
    return None if word is None else _PERSON_NEEDS.get(word)
