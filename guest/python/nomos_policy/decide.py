"""Wait, continue or drop: the decision for one execution.

The rules, in order: an execution that is not terminal is waited for; a
terminal one is dropped when the session has no open assent window (the
operator's approval is what lets the system act on its own), when the window
has already caused CONTINUATION_CAP continuations (the loop guard), or when
delivery has failed MAX_ATTEMPTS times; otherwise the agent is continued with
the note.

`decide` reads attributes only, so it takes the host's typed input (the
componentize-py binding) and the command line's parsed JSON alike.
"""

from __future__ import annotations

from typing import Any, Iterable

from .classify import classify
from .note import format_note
from .types import Continue, Decision, Drop, Wait, format_rfc3339, instant

# Continuations one assent window may cause; a session that keeps failing and
# retrying stops here and waits for the operator.
CONTINUATION_CAP = 20

# Failed deliveries after which a continuation is given up.
MAX_ATTEMPTS = 5


def decide(input: Any) -> Decision:
    """The decision for one execution."""
    outcome = classify(input.execution.status)
    if outcome is None:
        return Wait()
    session = input.session
    window = session.window
    if window is None:
        return Drop("assent window closed: the session has no approved plan in flight")
    now = instant(input.now)
    if now < instant(window.opened_at):
        return Drop(f"assent window closed: it opens at {format_rfc3339(window.opened_at)}")
    if now >= instant(window.expires_at):
        return Drop(f"assent window closed: it expired at {format_rfc3339(window.expires_at)}")
    if session.continuations_in_window >= CONTINUATION_CAP:
        return Drop(
            f"loop guard: {session.continuations_in_window} automatic continuations already in this "
            f"assent window (cap {CONTINUATION_CAP}); waiting for the operator"
        )
    if input.attempts >= MAX_ATTEMPTS:
        return Drop(
            f"delivery failed {input.attempts} times (limit {MAX_ATTEMPTS}); giving up on this continuation"
        )
    return Continue(format_note(input.execution, outcome, session.still_running))


def decide_batch(inputs: Iterable[Any]) -> list[Decision]:
    """The decisions for several executions, in order."""
    return [decide(one) for one in inputs]
