"""The contract's data, mirrored from `wit/policy.wit`, with its JSON form.

The records here have the same attribute names as the ones componentize-py
generates from the WIT (`input.execution.status`, `window.opened_at.seconds`,
...), so the policy functions read either kind: the host's typed values are
passed straight through, and the command line builds these from JSON.

The JSON form is what golden files hold and `wasmtime run policy.wasm decide`
reads: snake_case keys, times in RFC 3339, unknown or repeated keys refused so
that a typo is an error rather than a silent default.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union


class InputError(ValueError):
    """Bad input on the command line; its message becomes `error: ...`."""


@dataclass(frozen=True)
class Timestamp:
    """Seconds and nanoseconds since the Unix epoch, UTC."""

    seconds: int
    nanoseconds: int


def instant(ts: Any) -> tuple[int, int]:
    """The sort key of a timestamp (ours or the binding's): later is larger."""
    return (ts.seconds, ts.nanoseconds)


class Outcome(enum.Enum):
    """How a terminal execution ended; the value is the word in notes and JSON."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class PersonNeed(enum.Enum):
    """What a paused execution waits for from a person; the value is its JSON word."""

    INPUT = "input"
    AUTHORIZATION = "authorization"


class TaskProtocol(enum.Enum):
    """The protocol a task belongs to; the value is its JSON word."""

    MCP = "mcp"
    A2A = "a2a"


@dataclass(frozen=True)
class TaskRef:
    """A protocol's task, by the id the protocol gave it."""

    protocol: TaskProtocol
    id: str


@dataclass(frozen=True)
class ExecutionLink:
    """A tool result names this execution id."""

    id: str


@dataclass(frozen=True)
class TaskLink:
    """A tool result names this protocol task."""

    task: TaskRef


LinkRef = Union[ExecutionLink, TaskLink]


class ApprovalRoute(enum.Enum):
    """How the operator approved the plan that opened a window."""

    BUTTON = "button"
    CHAT = "chat"
    API = "api"


@dataclass
class Window:
    """An assent window; open while `opened_at <= now < expires_at`."""

    opened_at: Timestamp
    expires_at: Timestamp
    route: ApprovalRoute


@dataclass
class Execution:
    """One asynchronous execution as the runtime last reported it."""

    id: str
    status: str
    result: str = ""
    finished_at: Optional[Timestamp] = None
    task: Optional[TaskRef] = None


@dataclass
class Session:
    """The chat session an execution is linked to."""

    id: str
    continuations_in_window: int
    window: Optional[Window] = None
    still_running: list[str] = field(default_factory=list)


@dataclass
class DecisionInput:
    """Everything a policy needs to decide about one execution."""

    now: Timestamp
    execution: Execution
    session: Session
    attempts: int = 0


@dataclass(frozen=True)
class Wait:
    """Not finished yet: look again when it changes."""


@dataclass(frozen=True)
class Continue:
    """Re-invoke the agent with this note."""

    note: str


@dataclass(frozen=True)
class Drop:
    """Do not continue; the operator is told why."""

    reason: str


Decision = Union[Wait, Continue, Drop]


@dataclass(frozen=True)
class PolicyInfo:
    """Who a policy is."""

    name: str
    version: str
    contract: str


# --- RFC 3339 -------------------------------------------------------------
#
# Times are formatted the way the Rust policy's chrono does (the golden
# files pin its bytes): UTC with `Z`, and a fraction of 3, 6 or 9 digits only
# when the nanoseconds need it. Python's `datetime` stops at year 9999 and
# knows no leap second, so the calendar arithmetic is done here.

_SECONDS_PER_DAY = 86_400
_NANOS = 1_000_000_000
# The years chrono can represent; outside them a time is shown as raw seconds.
_MIN_YEAR, _MAX_YEAR = -262_143, 262_142


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, proleptic Gregorian."""
    days += 719_468
    era, day_of_era = divmod(days, 146_097)
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = year_of_era + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    year -= 1 if month <= 2 else 0
    era, year_of_era = divmod(year, 400)
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def format_rfc3339(ts: Any) -> str:
    """RFC 3339 in UTC, or `@seconds.nanoseconds` when out of range."""
    days, second_of_day = divmod(ts.seconds, _SECONDS_PER_DAY)
    nanos = ts.nanoseconds
    year, month, day = _civil_from_days(days)
    # A leap second is carried as 1e9 or more nanoseconds of a :59 second.
    valid = nanos < _NANOS or (nanos < 2 * _NANOS and second_of_day % 60 == 59)
    if not (_MIN_YEAR <= year <= _MAX_YEAR and valid):
        return f"@{ts.seconds}.{nanos:09}"
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    if nanos >= _NANOS:
        second, nanos = second + 1, nanos - _NANOS
    year_text = f"{year:04}" if 0 <= year <= 9999 else f"{year:+05}"
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03}"
    elif nanos % 1_000 == 0:
        fraction = f".{nanos // 1_000:06}"
    else:
        fraction = f".{nanos:09}"
    return f"{year_text}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}Z"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+\-\u2212])(\d{2}):(\d{2}))",
    re.ASCII,
)


def parse_rfc3339(text: str) -> Timestamp:
    """Parses an RFC 3339 time with any offset, as chrono accepts it."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise InputError(_bad_time(text, "not RFC 3339"))
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    # Digits past the ninth are ignored, as chrono does.
    digits = (match.group(7) or "")[:9]
    nanos = int(digits.ljust(9, "0")) if digits else 0
    if second == 60:  # a leap second: :59 plus a whole second of nanoseconds
        second, nanos = 59, nanos + _NANOS
    offset = 0
    if match.group(8) is None:
        off_hours, off_minutes = int(match.group(10)), int(match.group(11))
        if off_minutes > 59:
            raise InputError(_bad_time(text, "offset minutes out of range"))
        offset = off_hours * 3600 + off_minutes * 60
        offset = -offset if match.group(9) != "+" else offset
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        raise InputError(_bad_time(text, "date out of range"))
    if hour > 23 or minute > 59 or second > 59:
        raise InputError(_bad_time(text, "time out of range"))
    if abs(offset) >= _SECONDS_PER_DAY:
        raise InputError(_bad_time(text, "offset out of range"))
    local = _days_from_civil(year, month, day) * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
    return Timestamp(local - offset, nanos)


def _bad_time(text: str, why: str) -> str:
    return f"invalid timestamp {_quote(text)} ({why}); expected RFC 3339 such as 2026-11-30T04:00:00Z"


def _quote(text: str) -> str:
    """A string quoted for an error message (JSON-style, one line)."""
    return json.dumps(text, ensure_ascii=False)
