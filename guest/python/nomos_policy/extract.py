"""Which execution ids a tool result names.

A tool that starts asynchronous work answers with text such as
`running, execution 3f2504e0-4f89-11d3-9a0c-0305e82c3301`. Only a UUID
introduced by the word "execution" is linked: a bare UUID in a tool result is
as likely a container, a session or a request id, and linking it would make
the system re-invoke the agent for something it never started.

The scan works on the UTF-8 bytes, as the Rust policy does, so "a word byte"
and "whitespace" mean the ASCII ones. The keyword is found with `bytes.find`
(C speed, which matters for a megabyte of log output inside the host's time
budget), and each hit is checked with a bounded amount of work.
"""

from __future__ import annotations

import re

# At most this many ids are taken from one tool result; the rest are ignored,
# which bounds the links one tool result can create.
MAX_IDS = 64

# At most this many separator bytes may stand between the keyword (with its
# optional `id` suffix) and the UUID.
MAX_SEPARATORS = 6

_KEYWORD = b"execution"
_UUID_LEN = 36
_NIL_UUID = "00000000-0000-0000-0000-000000000000"
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Rust's `u8::is_ascii_whitespace` (no vertical tab) and the quote, brace and
# key-value marks that surround an id in logs, JSON and Markdown.
_SEPARATORS = frozenset(b" \t\n\x0c\r:=#\"'`{}")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def extract_execution_ids(text: str) -> list[str]:
    """The execution ids in `text`: canonical lowercase, de-duplicated, in the
    order they first appear, at most MAX_IDS."""
    # Every test below is blind to ASCII case, so one lowered copy serves
    # them all (bytes.lower() folds ASCII letters only).
    folded = text.encode("utf-8").lower()
    ids: list[str] = []
    start_from = 0
    while len(ids) < MAX_IDS:
        at = folded.find(_KEYWORD, start_from)
        if at < 0:
            break
        start_from = at + len(_KEYWORD)
        if at > 0 and folded[at - 1] in _WORD:
            continue  # "reexecution", "pre_execution": not the keyword
        start = _skip_separators(folded, _skip_id_suffix(folded, start_from))
        # `"execution": {"id": "..."}`: the id key may follow the separators.
        if _uuid_at(folded, start) is None:
            after_id = _skip_id_word(folded, start)
            if after_id != start:
                start = _skip_separators(folded, after_id)
        found = _uuid_at(folded, start)
        if found is None:
            continue
        start_from = start + _UUID_LEN
        if found != _NIL_UUID and found not in ids:
            ids.append(found)
    return ids


def _skip_id_suffix(folded: bytes, at: int) -> int:
    """Skips `id`, `_id`, `-id` or ` id` right after the keyword (as in
    `executionId`, `execution_id`, `execution id`), if it is a whole word."""
    skip = 1 if folded[at : at + 1] in (b"_", b"-", b" ") else 0
    after = at + skip + 2
    if folded[at + skip : after] == b"id" and not _is_word_at(folded, after):
        return after
    return at


def _skip_id_word(folded: bytes, at: int) -> int:
    """Skips a whole word `id` at `at`, as the key of a nested object."""
    if folded[at : at + 2] == b"id" and not _is_word_at(folded, at + 2):
        return at + 2
    return at


def _skip_separators(folded: bytes, at: int) -> int:
    limit = min(at + MAX_SEPARATORS, len(folded))
    while at < limit and folded[at] in _SEPARATORS:
        at += 1
    return at


def _is_word_at(folded: bytes, at: int) -> bool:
    return at < len(folded) and folded[at] in _WORD


def _uuid_at(folded: bytes, at: int) -> str | None:
    """The UUID in 8-4-4-4-12 hex starting at `at`, lowercase, if it is not
    part of a longer word or hex run."""
    if _UUID.match(folded, at) is None:
        return None
    end = at + _UUID_LEN
    if end < len(folded) and (folded[end] in _WORD or folded[end] == ord("-")):
        return None
    return folded[at:end].decode("ascii")


def is_canonical_uuid(text: str) -> bool:
    """True if `text` is a canonical lowercase UUID (the form ids are stored in)."""
    return len(text) == _UUID_LEN and text.isascii() and _uuid_at(text.encode("ascii"), 0) == text
