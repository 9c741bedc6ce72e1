// The commands of `wasmtime run policy.wasm CMD < input`.
//
// Each command reads all of stdin, calls the same function the typed export
// calls, and writes one JSON document (or, for `soul`, the text) and a
// newline. Bad input is a CliError: the caller prints its one line on
// stderr and fails.

import { classify } from './classify.js';
import { decide, decideBatch } from './decide.js';
import { extractLinks } from './links.js';
import { JsonError, readDecisionInput, readDecisionInputs } from './json.js';
import { describe } from './describe.js';
import { SOUL } from './soul.js';
import { debugString, fromUtf8 } from './text.js';

/** Stdin is refused beyond this size, so a runaway pipe cannot exhaust memory. */
export const MAX_INPUT = 4 * 1024 * 1024;

export const USAGE =
  'usage: policy.wasm <extract-links|classify|decide|decide-batch|soul|describe> < input';

/** Why a command could not run. */
export class CliError extends Error {
  /** The one line printed on stderr. */
  line() {
    return `error: ${this.message.replaceAll('\n', ' ')}`;
  }
}

const COMMANDS = {
  'extract-links': (input) => toJson(extractLinks(input).map(linkJson)),
  classify: (input) => toJson(statusClassJson(classify(input))),
  decide: (input) => toJson(decisionJson(decide(parse(readDecisionInput, input, 'input')))),
  'decide-batch': (input) =>
    toJson(decideBatch(parse(readDecisionInputs, input, 'inputs')).map(decisionJson)),
  soul: null,
  describe: null,
};

/**
 * Runs the command line `args` (without the program name). `readInput` is
 * called only by commands that read stdin and returns its bytes. Returns
 * what goes to stdout; throws CliError.
 */
export function runCli(args, readInput) {
  if (args.length === 0) throw new CliError(USAGE);
  if (args.length > 1) throw new CliError(`unexpected argument ${debugString(args[1])}; ${USAGE}`);
  const [name] = args;
  if (!Object.hasOwn(COMMANDS, name)) {
    throw new CliError(`unknown command ${debugString(name)}; ${USAGE}`);
  }
  if (name === 'soul') return SOUL;
  if (name === 'describe') return `${toJson(describe())}\n`;
  return `${COMMANDS[name](decodeInput(readInput()))}\n`;
}

function parse(read, input, what) {
  try {
    return read(input);
  } catch (err) {
    if (err instanceof JsonError) throw new CliError(`invalid decision ${what}: ${err.message}`);
    throw err;
  }
}

/** The answers' JSON forms, with the reference's key order. */
function statusClassJson(status) {
  if (status.tag === 'terminal') return { terminal: true, outcome: status.val };
  if (status.tag === 'awaiting-person') return { terminal: false, person: status.val };
  return { terminal: false };
}

function linkJson(link) {
  return link.tag === 'execution'
    ? { execution: link.val }
    : { task: { protocol: link.val.protocol, id: link.val.id } };
}

function decisionJson(decision) {
  switch (decision.tag) {
    case 'continue':
      return { decision: 'continue', note: decision.val };
    case 'drop':
      return { decision: 'drop', reason: decision.val };
    default:
      return { decision: 'wait' };
  }
}

// JSON.stringify escapes exactly what serde_json escapes (quote, backslash,
// control characters, with \b \f \n \r \t and lowercase \u00xx) and leaves
// the rest of Unicode as it is, so the bytes match.
function toJson(value) {
  return JSON.stringify(value);
}

/** Stdin as text: at most MAX_INPUT bytes of UTF-8. */
function decodeInput(bytes) {
  if (bytes.length > MAX_INPUT) throw new CliError(`input is larger than ${MAX_INPUT} bytes`);
  const bad = firstInvalidUtf8(bytes);
  if (bad !== null) throw new CliError(`input is not UTF-8: ${bad}`);
  return fromUtf8(bytes);
}

/** Rust's Utf8Error message for the first invalid sequence, or null if there is none. */
function firstInvalidUtf8(bytes) {
  let i = 0;
  while (i < bytes.length) {
    const first = bytes[i];
    if (first < 0x80) {
      i += 1;
      continue;
    }
    const width = first >= 0xc2 && first <= 0xdf ? 2 : first >= 0xe0 && first <= 0xef ? 3 : first >= 0xf0 && first <= 0xf4 ? 4 : 0;
    // The range the second byte must be in depends on the first.
    const [low, high] =
      first === 0xe0 ? [0xa0, 0xbf] : first === 0xed ? [0x80, 0x9f] : first === 0xf0 ? [0x90, 0xbf] : first === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    for (let k = 1; k < Math.max(width, 1); k += 1) {
      if (i + k >= bytes.length) return `incomplete utf-8 byte sequence from index ${i}`;
      const byte = bytes[i + k];
      const ok = k === 1 ? byte >= low && byte <= high : (byte & 0xc0) === 0x80;
      if (!ok) return `invalid utf-8 sequence of ${k} bytes from index ${i}`;
    }
    if (width === 0) return `invalid utf-8 sequence of 1 bytes from index ${i}`;
    i += width;
  }
  return null;
}
