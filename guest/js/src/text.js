// String helpers that behave like Rust's `str` methods.
//
// The reference policy is Rust, whose strings are UTF-8 and whose notion of
// whitespace and case differs from JavaScript's. A policy that must answer
// byte for byte like it cannot use `String.prototype.trim` (which strips
// U+FEFF and keeps U+0085) or `toLowerCase` (which maps non-ASCII letters).

// Unicode White_Space, what Rust's `char::is_whitespace` and `str::trim` use.
const WHITESPACE = '\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const NOT_WHITESPACE = new RegExp(`[^${WHITESPACE}]`);
// The last character that is not whitespace, and the whitespace after it.
// Linear: each try consumes only the whitespace run that follows it.
const LAST_NOT_WHITESPACE = new RegExp(`[^${WHITESPACE}][${WHITESPACE}]*$`);

/** Rust's `char::is_whitespace`. */
export function isWhitespace(code) {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0x85) return false;
  return (
    code === 0x85 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000
  );
}

/** Rust's `str::trim`. */
export function trim(text) {
  // Most text has nothing to trim; a regular expression call costs more
  // than these two checks in an interpreter.
  const last = text.length - 1;
  if (last < 0 || (!isWhitespace(text.charCodeAt(0)) && !isWhitespace(text.charCodeAt(last)))) {
    return text;
  }
  const start = text.search(NOT_WHITESPACE);
  if (start === -1) return '';
  return text.slice(start, text.search(LAST_NOT_WHITESPACE) + 1);
}

/** The index of the first character that is not Rust whitespace, or -1. */
export function firstNonWhitespace(text) {
  return text.search(NOT_WHITESPACE);
}

/** Rust's `char::is_control` (general category Cc). */
export function isControl(codePoint) {
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
}

const encoder = new TextEncoder();
// A byte-order mark is text like any other here, as it is to Rust: kept.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** The UTF-8 bytes of a string. */
export function utf8(text) {
  return encoder.encode(text);
}

/** The string of well-formed UTF-8 bytes. */
export function fromUtf8(bytes) {
  return decoder.decode(bytes);
}

/** Rust's `{:?}` for a string: quoted, with quotes, backslashes and controls escaped. */
export function debugString(text) {
  let out = '"';
  for (const c of text) {
    const code = c.codePointAt(0);
    if (c === '"' || c === '\\') out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c === '\0') out += '\\0';
    else if (isControl(code)) out += `\\u{${code.toString(16)}}`;
    else out += c;
  }
  return `${out}"`;
}
