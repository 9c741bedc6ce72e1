// Which execution ids a tool result names.
//
// A tool that starts asynchronous work answers with text such as
// `running, execution 3f2504e0-4f89-11d3-9a0c-0305e82c3301`. Only a UUID
// introduced by the word "execution" is linked: a bare UUID in a tool result
// is as likely a container, a session or a request id, and linking it would
// re-invoke the agent for something it never started.
//
// The reference scans UTF-8 bytes; this scans UTF-16 code units. Every byte
// or unit the scan looks at for a match is ASCII, and non-ASCII text is
// neither a word character, a separator nor a hex digit in either form, so
// both scans find the same ids.

/** At most this many ids are taken from one tool result. */
export const MAX_IDS = 64;
/** At most this many separators between the keyword (and its `id`) and the UUID. */
export const MAX_SEPARATORS = 6;

const KEYWORD_LENGTH = 'execution'.length;
const UUID_LENGTH = 36;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
// Without the `u` flag, `i` matches ASCII letters against ASCII letters only,
// exactly like Rust's `eq_ignore_ascii_case`; the search itself runs natively.
const KEYWORD = /execution/gi;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The execution ids in `text`: lowercase, de-duplicated, in the order they
 * first appear, at most MAX_IDS.
 */
export function extractExecutionIds(text) {
  const ids = [];
  let from = 0;
  while (ids.length < MAX_IDS) {
    KEYWORD.lastIndex = from;
    const hit = KEYWORD.exec(text);
    if (hit === null) break;
    const at = hit.index;
    from = at + KEYWORD_LENGTH;
    if (at > 0 && isWordUnit(text.charCodeAt(at - 1))) continue;
    let start = skipSeparators(text, skipIdSuffix(text, from));
    // `"execution": {"id": "…"}`: the id key may follow the separators.
    if (uuidAt(text, start) === null) {
      const afterId = skipIdWord(text, start);
      if (afterId !== start) start = skipSeparators(text, afterId);
    }
    const id = uuidAt(text, start);
    if (id === null) continue;
    from = start + UUID_LENGTH;
    if (id !== NIL_UUID && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** Skips `id`, `_id`, `-id` or ` id` right after the keyword, if it is a whole word. */
function skipIdSuffix(text, at) {
  const skip = '_- '.includes(text.charAt(at)) && at < text.length ? 1 : 0;
  return isIdWord(text, at + skip) ? at + skip + 2 : at;
}

/** Skips a whole word `id` at `at`, as the key of a nested object. */
function skipIdWord(text, at) {
  return isIdWord(text, at) ? at + 2 : at;
}

function isIdWord(text, at) {
  if (at + 2 > text.length) return false;
  const i = text.charCodeAt(at);
  const d = text.charCodeAt(at + 1);
  const isId = (i === 0x69 || i === 0x49) && (d === 0x64 || d === 0x44);
  return isId && !(at + 2 < text.length && isWordUnit(text.charCodeAt(at + 2)));
}

function skipSeparators(text, at) {
  const limit = at + MAX_SEPARATORS;
  while (at < limit && at < text.length && isSeparator(text.charCodeAt(at))) at += 1;
  return at;
}

// Rust's `is_ascii_whitespace` (no vertical tab) and the punctuation that
// stands between a key and its value in JSON, logs and Markdown.
function isSeparator(c) {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || ':=#"\'`{}'.includes(String.fromCharCode(c));
}

function isWordUnit(c) {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

/** The lowercased UUID at `at`, if it is not part of a longer word or hex run. */
function uuidAt(text, at) {
  if (at + UUID_LENGTH > text.length) return null;
  const candidate = text.substr(at, UUID_LENGTH);
  if (!UUID.test(candidate)) return null;
  if (at + UUID_LENGTH < text.length) {
    const next = text.charCodeAt(at + UUID_LENGTH);
    if (isWordUnit(next) || next === 0x2d) return null;
  }
  return candidate.toLowerCase();
}
