// String helpers that behave like Rust's `str` methods.
//
// The reference policy is Rust, whose strings are UTF-8 and whose notion of
// whitespace and case differs from JavaScript's. A policy that must answer
// byte for byte like it cannot use `String.prototype.trim` (which strips
// U+FEFF and keeps U+0085) or `toLowerCase` (which maps non-ASCII letters).

// Unicode White_Space, what Rust's `char::is_whitespace` and `str::trim` use.
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
  const start = firstNonWhitespace(text);
  if (start === -1) return '';
  const end = endOfNonWhitespace(text, start);
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

// JavaScript's own trimming (native, so fast on long text) strips the same
// characters as Rust's except two: it also strips U+FEFF, which Rust keeps,
// and keeps U+0085, which Rust strips. These two functions correct for both.

/** The index of the first character at or after `from` that is not Rust whitespace, or -1. */
export function firstNonWhitespace(text, from = 0) {
  let at = from;
  while (at < text.length && isWhitespace(text.charCodeAt(at))) {
    const rest = text.slice(at);
    const skipped = rest.length - rest.trimStart().length;
    const mark = rest.slice(0, skipped).indexOf('\uFEFF');
    if (mark !== -1) return at + mark;
    at += skipped;
    if (text.charCodeAt(at) === 0x85) at += 1;
  }
  return at < text.length ? at : -1;
}

/** The index after the last character that is not Rust whitespace, at or after `start`. */
function endOfNonWhitespace(text, start) {
  let end = text.length;
  while (end > start && isWhitespace(text.charCodeAt(end - 1))) {
    const head = text.slice(start, end);
    const kept = head.trimEnd().length;
    const mark = head.slice(kept).lastIndexOf('\uFEFF');
    if (mark !== -1) return start + kept + mark + 1;
    end = start + kept;
    if (text.charCodeAt(end - 1) === 0x85) end -= 1;
  }
  return end;
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
