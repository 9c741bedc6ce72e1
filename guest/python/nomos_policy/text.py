"""Text helpers that behave like Rust's `str` methods the policy was first
written with, where Python's differ."""

# Rust's `char::is_whitespace` (the Unicode White_Space property). Python's
# `str.strip()` also strips U+001C..U+001F, which Rust keeps.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def strip_whitespace(text: str) -> str:
    """`text.trim()` in Rust."""
    return text.strip(WHITESPACE)
