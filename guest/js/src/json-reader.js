// The token layer of the decision-input reader: whitespace, strings,
// numbers and keywords, and where an error is reported, all as serde_json
// does it (see json.js for why JSON.parse is not used).

import { debugString } from './text.js';

/** Bad input, with where serde_json would say it went wrong. */
export class JsonError extends Error {
  constructor(message) {
    super(message);
    this.at = null; // index into the text, once known
    this.peek = false; // true: the position is that of the next character
  }
}

// A run of string characters that need no attention, skipped natively.
const PLAIN = /[^"\\\x00-\x1f]*/y;
const ESCAPES = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** The rest of a string whose opening quote was read. */
export function readStringBody(r) {
  const { text } = r;
  let out = '';
  for (;;) {
    PLAIN.lastIndex = r.index;
    PLAIN.test(text);
    out += text.slice(r.index, PLAIN.lastIndex);
    r.index = PLAIN.lastIndex;
    if (r.index >= text.length) throw r.error('EOF while parsing a string');
    const c = text[r.index];
    r.index += 1;
    if (c === '"') return out;
    if (c !== '\\') throw r.error('control character (\\u0000-\\u001F) found while parsing a string');
    if (r.index >= text.length) throw r.error('EOF while parsing a string');
    const escape = text[r.index];
    r.index += 1;
    if (escape in ESCAPES) out += ESCAPES[escape];
    else if (escape === 'u') out += readUnicodeEscape(r);
    else throw r.error('invalid escape');
  }
}

function readUnicodeEscape(r) {
  const first = readHex4(r);
  if (first >= 0xdc00 && first <= 0xdfff) throw r.error('lone leading surrogate in hex escape');
  if (first < 0xd800 || first > 0xdbff) return String.fromCharCode(first);
  // A leading surrogate must be followed by an escaped trailing one.
  for (const expected of '\\u') {
    if (r.index >= r.text.length) throw r.error('EOF while parsing a string');
    r.index += 1;
    if (r.text[r.index - 1] !== expected) throw r.error('unexpected end of hex escape');
  }
  const second = readHex4(r);
  if (second < 0xdc00 || second > 0xdfff) throw r.error('lone leading surrogate in hex escape');
  return String.fromCharCode(first, second);
}

function readHex4(r) {
  if (r.index + 4 > r.text.length) {
    r.index = r.text.length;
    throw r.error('EOF while parsing a string');
  }
  const hex = r.text.slice(r.index, r.index + 4);
  r.index += 4;
  if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw r.error('invalid escape');
  return parseInt(hex, 16);
}

/** A number: `{ kind: 'int', value: bigint }` or `{ kind: 'float', value: number }`. */
export function readNumber(r) {
  const { text } = r;
  const start = r.index;
  if (text[r.index] === '-') r.index += 1;
  const lead = r.index < text.length ? text.charCodeAt(r.index) : -1;
  if (lead === -1) throw r.error('EOF while parsing a value');
  r.index += 1;
  if (!isDigit(lead)) throw r.error('invalid number');
  if (lead === 0x30 && isDigit(r.peekRaw())) throw r.peekError('invalid number');
  while (isDigit(r.peekRaw())) r.index += 1;
  let float = false;
  if (r.peekRaw() === 0x2e) {
    float = true;
    r.index += 1;
    if (!isDigit(r.peekRaw())) {
      throw r.peekError(r.index < text.length ? 'invalid number' : 'EOF while parsing a value');
    }
    while (isDigit(r.peekRaw())) r.index += 1;
  }
  if (r.peekRaw() === 0x65 || r.peekRaw() === 0x45) {
    float = true;
    r.index += 1;
    if (r.peekRaw() === 0x2b || r.peekRaw() === 0x2d) r.index += 1;
    const digit = r.peekRaw();
    if (digit === -1) throw r.error('EOF while parsing a value');
    r.index += 1;
    if (!isDigit(digit)) throw r.error('invalid number');
    while (isDigit(r.peekRaw())) r.index += 1;
  }
  const lexeme = text.slice(start, r.index);
  if (!float) {
    // serde_json keeps whole numbers in i64 (negative) or u64 (positive)
    // as integers; -0 and anything larger become floats.
    const value = BigInt(lexeme);
    const negative = lexeme.startsWith('-');
    if (negative ? value < 0n && value >= -(2n ** 63n) : value < 2n ** 64n) return { kind: 'int', value };
  }
  const value = Number(lexeme);
  if (!Number.isFinite(value)) throw r.error('number out of range');
  return { kind: 'float', value };
}

export function unexpectedNumber(n) {
  return n.kind === 'int' ? `integer \`${n.value}\`` : `floating point \`${formatFloat(n.value)}\``;
}

/**
 * A float as serde_json prints it in an error (the zmij crate): shortest
 * round-trip digits, positional from 1e-5 to below 1e16 (`5.0`, `0.00012`),
 * otherwise in exponent form with a sign (`1e+23`, `1.5e-7`).
 */
function formatFloat(v) {
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  const sign = v < 0 ? '-' : '';
  const [mantissa, exponent] = Math.abs(v).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exp = Number(exponent); // |v| = d.ddd × 10^exp
  let body;
  if (exp < -5 || exp > 15) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    body = `${digits[0]}${fraction}e${exp < 0 ? '-' : '+'}${Math.abs(exp)}`;
  } else if (digits.length - 1 <= exp) {
    body = `${digits}${'0'.repeat(exp + 1 - digits.length)}.0`;
  } else if (exp >= 0) {
    body = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    body = `0.${'0'.repeat(-exp - 1)}${digits}`;
  }
  return sign + body;
}

export function isDigit(c) {
  return c >= 0x30 && c <= 0x39;
}

/** The text and how much of it was consumed. */
export class Reader {
  constructor(text) {
    this.text = text;
    this.index = 0;
  }

  /** Skips JSON whitespace; the next character's code, or -1 at the end. */
  peek() {
    const { text } = this;
    while (this.index < text.length) {
      const c = text.charCodeAt(this.index);
      if (c !== 0x20 && c !== 0x0a && c !== 0x09 && c !== 0x0d) return c;
      this.index += 1;
    }
    return -1;
  }

  /** The next character's code without skipping whitespace, or -1. */
  peekRaw() {
    return this.index < this.text.length ? this.text.charCodeAt(this.index) : -1;
  }

  /** Consumes a keyword's remaining letters, as serde_json's parse_ident. */
  ident(rest) {
    for (const expected of rest) {
      if (this.index >= this.text.length) throw this.error('EOF while parsing a value');
      this.index += 1;
      if (this.text[this.index - 1] !== expected) throw this.error('expected ident');
    }
  }

  /** An error at the last consumed character. */
  error(message) {
    return this.fix(new JsonError(message));
  }

  /** An error at the next character. */
  peekError(message) {
    const err = new JsonError(message);
    err.at = this.index;
    err.peek = true;
    return err;
  }

  /** Places an error that does not know its position yet where the reader is. */
  fix(err) {
    if (err instanceof JsonError && err.at === null) err.at = this.index;
    return err;
  }

  /** serde_json's "invalid type" for the value ahead, consuming it if it is a scalar. */
  invalidType(expected) {
    const c = this.peek();
    let unexpected;
    if (c === 0x6e || c === 0x74 || c === 0x66) {
      const word = c === 0x6e ? 'null' : c === 0x74 ? 'true' : 'false';
      this.index += 1;
      this.ident(word.slice(1));
      unexpected = c === 0x6e ? 'null' : `boolean \`${word}\``;
    } else if (c === 0x2d || isDigit(c)) {
      unexpected = unexpectedNumber(readNumber(this));
    } else if (c === 0x22) {
      this.index += 1;
      unexpected = `string ${debugString(readStringBody(this))}`;
    } else if (c === 0x5b || c === 0x7b) {
      unexpected = c === 0x5b ? 'sequence' : 'map';
    } else {
      return this.peekError('expected value');
    }
    return this.error(`invalid type: ${unexpected}, expected ${expected}`);
  }

  /** `line L column C`, counting lines from 1 and columns in UTF-8 bytes. */
  describe(err) {
    let at = err.at ?? this.index;
    const { text } = this;
    let extra = 0;
    if (err.peek && at < text.length) {
      // The next character is counted as consumed, as serde_json's peek position does.
      if (text[at] === '\n') at += 1;
      else extra = 1;
    }
    let line = 1;
    for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) line += 1;
    const lineStart = text.lastIndexOf('\n', at - 1) + 1;
    const column = new TextEncoder().encode(text.slice(lineStart, at)).length + extra;
    return `line ${line} column ${column}`;
  }
}
