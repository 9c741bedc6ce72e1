// The JSON form of decision inputs, read as strictly as the reference reads
// it (serde_json with `deny_unknown_fields`): unknown and duplicate keys,
// missing required fields, numbers that are not whole u32s, lone surrogate
// escapes and trailing text are refused, and the message names the line and
// column (in UTF-8 bytes) where serde_json would report it.
//
// `JSON.parse` is not used because it accepts all of those, and it would
// read `5.0` as a count of 5 where the reference refuses it.
//
// The reader yields the shapes the contract's records have in JavaScript
// (camelCase fields, bigint seconds), so the command line and the typed
// exports run the same `decide`.

import { debugString } from './text.js';
import { parseTimestamp, TimestampError } from './time.js';
import { isDigit, JsonError, Reader, readNumber, readStringBody, unexpectedNumber } from './json-reader.js';

export { JsonError };

/** Reads a decision input. Throws JsonError. */
export function readDecisionInput(text) {
  return readDocument(text, (r) => readStruct(r, DECISION_INPUT));
}

/** Reads a JSON array of decision inputs. Throws JsonError. */
export function readDecisionInputs(text) {
  return readDocument(text, (r) => readSeq(r, (item) => readStruct(item, DECISION_INPUT)));
}

function readDocument(text, read) {
  const r = new Reader(text);
  try {
    const value = read(r);
    if (r.peek() !== -1) throw r.peekError('trailing characters');
    return value;
  } catch (err) {
    if (err instanceof JsonError) err.message = `${err.message} at ${r.describe(err)}`;
    throw err;
  }
}

// --- The decision input's fields, in declaration order. ---------------------

const field = (name, key, read, fallback) => ({ name, key, read, fallback });
const WINDOW = {
  name: 'Window',
  fields: [
    field('opened_at', 'openedAt', readTimestamp),
    field('expires_at', 'expiresAt', readTimestamp),
    field('route', 'route', (r) => readUnitEnum(r, ['button', 'chat', 'api'])),
  ],
};
const TASK_REF = {
  name: 'TaskRef',
  fields: [
    field('protocol', 'protocol', (r) => readUnitEnum(r, ['mcp', 'a2a'])),
    field('id', 'id', readString),
  ],
};
const EXECUTION = {
  name: 'Execution',
  fields: [
    field('id', 'id', readString),
    field('status', 'status', readString),
    // `"result": null` is the same fact as no result: the empty string.
    field('result', 'result', (r) => readOption(r, readString) ?? '', () => ''),
    field('finished_at', 'finishedAt', (r) => readOption(r, readTimestamp), () => undefined),
    field('task', 'task', (r) => readOption(r, (o) => readStruct(o, TASK_REF)), () => undefined),
  ],
};
const SESSION = {
  name: 'Session',
  fields: [
    field('id', 'id', readString),
    field('window', 'window', (r) => readOption(r, (o) => readStruct(o, WINDOW)), () => undefined),
    // Required: a missing count must not read as zero and defeat the loop guard.
    field('continuations_in_window', 'continuationsInWindow', readU32),
    field('still_running', 'stillRunning', (r) => readSeq(r, readString), () => []),
  ],
};
const DECISION_INPUT = {
  name: 'DecisionInput',
  fields: [
    field('now', 'now', readTimestamp),
    field('execution', 'execution', (r) => readStruct(r, EXECUTION)),
    field('session', 'session', (r) => readStruct(r, SESSION)),
    field('attempts', 'attempts', readU32, () => 0),
  ],
};

// --- Typed readers, each as serde_json's deserialize_* does it. ------------

/** A struct from an object, or (as serde also allows) from an array of its fields in order. */
function readStruct(r, type) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a value');
  if (c !== 0x7b && c !== 0x5b) throw r.invalidType(`struct ${type.name}`);
  r.index += 1;
  const values = new Map();
  let failure = null;
  try {
    if (c === 0x7b) readFields(r, type, values);
    else readFieldSeq(r, type, values);
  } catch (err) {
    failure = err;
  }
  // The closing bracket is looked for even after a failure: the error is
  // then reported past it, as serde_json does.
  try {
    if (c === 0x7b) endObject(r);
    else endArray(r);
  } catch (err) {
    failure ??= err;
  }
  if (failure !== null) throw r.fix(failure);
  return Object.fromEntries(type.fields.map((f) => [f.key, values.get(f.name)]));
}

function readFields(r, type, values) {
  for (let first = true; nextKey(r, first); first = false) {
    r.index += 1;
    const key = readStringBody(r);
    const f = type.fields.find((candidate) => candidate.name === key);
    if (f === undefined) {
      throw new JsonError(`unknown field \`${key}\`, ${oneOf(type.fields.map((x) => x.name), 'there are no fields')}`);
    }
    if (values.has(key)) throw new JsonError(`duplicate field \`${key}\``);
    const c = r.peek();
    if (c !== 0x3a) throw r.peekError(c === -1 ? 'EOF while parsing an object' : 'expected `:`');
    r.index += 1;
    values.set(key, f.read(r));
  }
  for (const f of type.fields) {
    if (values.has(f.name)) continue;
    if (f.fallback === undefined) throw new JsonError(`missing field \`${f.name}\``);
    values.set(f.name, f.fallback());
  }
}

function readFieldSeq(r, type, values) {
  const count = type.fields.length;
  let first = true;
  type.fields.forEach((f, i) => {
    if (nextElement(r, first)) {
      first = false;
      values.set(f.name, f.read(r));
    } else if (f.fallback !== undefined) {
      values.set(f.name, f.fallback());
    } else {
      throw new JsonError(`invalid length ${i}, expected struct ${type.name} with ${count} element${count === 1 ? '' : 's'}`);
    }
  });
}

function readSeq(r, readItem) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a value');
  if (c !== 0x5b) throw r.invalidType('a sequence');
  r.index += 1;
  const items = [];
  let failure = null;
  try {
    for (let first = true; nextElement(r, first); first = false) items.push(readItem(r));
  } catch (err) {
    failure = err;
  }
  try {
    endArray(r);
  } catch (err) {
    failure ??= err;
  }
  if (failure !== null) throw r.fix(failure);
  return items;
}

function readOption(r, readSome) {
  if (r.peek() !== 0x6e) return readSome(r);
  r.index += 1;
  r.ident('ull');
  return undefined;
}

function readString(r) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a value');
  if (c !== 0x22) throw r.invalidType('a string');
  r.index += 1;
  return readStringBody(r);
}

function readTimestamp(r) {
  const text = readString(r);
  try {
    return parseTimestamp(text);
  } catch (err) {
    if (!(err instanceof TimestampError)) throw err;
    throw new JsonError(
      `invalid timestamp ${debugString(text)} (${err.message}); expected RFC 3339 such as 2026-11-30T04:00:00Z`,
    );
  }
}

function readU32(r) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a value');
  if (c !== 0x2d && !isDigit(c)) throw r.invalidType('u32');
  const n = readNumber(r);
  if (n.kind === 'float') throw r.fix(new JsonError(`invalid type: ${unexpectedNumber(n)}, expected u32`));
  if (n.value < 0n || n.value > 0xffffffffn) {
    throw r.fix(new JsonError(`invalid value: ${unexpectedNumber(n)}, expected u32`));
  }
  return Number(n.value);
}

/** A fieldless enum, from `"name"` or `{"name": null}`. */
function readUnitEnum(r, names) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a value');
  if (c !== 0x22 && c !== 0x7b) throw r.peekError('expected value');
  r.index += 1;
  if (c === 0x22) return variant(r, readStringBody(r), names);
  const name = variant(r, readString(r), names);
  const colon = r.peek();
  if (colon !== 0x3a) throw r.peekError(colon === -1 ? 'EOF while parsing an object' : 'expected `:`');
  r.index += 1;
  const unit = r.peek();
  if (unit === -1) throw r.peekError('EOF while parsing a value');
  if (unit !== 0x6e) throw r.invalidType('unit');
  r.index += 1;
  r.ident('ull');
  const end = r.peek();
  if (end !== 0x7d) throw r.error(end === -1 ? 'EOF while parsing an object' : 'expected value');
  r.index += 1;
  return name;
}

function variant(r, name, names) {
  if (names.includes(name)) return name;
  throw r.fix(new JsonError(`unknown variant \`${name}\`, ${oneOf(names, 'there are no variants')}`));
}

function oneOf(names, none) {
  const quoted = names.map((n) => `\`${n}\``);
  if (quoted.length === 0) return none;
  if (quoted.length === 1) return `expected ${quoted[0]}`;
  if (quoted.length === 2) return `expected ${quoted[0]} or ${quoted[1]}`;
  return `expected one of ${quoted.join(', ')}`;
}

// --- Structure: commas, colons and brackets, as serde_json checks them. ----

function nextKey(r, first) {
  let c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing an object');
  if (c === 0x7d) return false;
  if (!first) {
    if (c !== 0x2c) throw r.peekError('expected `,` or `}`');
    r.index += 1;
    c = r.peek();
    if (c === 0x7d) throw r.peekError('trailing comma');
    if (c === -1) throw r.peekError('EOF while parsing a value');
  }
  if (c !== 0x22) throw r.peekError('key must be a string');
  return true;
}

function nextElement(r, first) {
  const c = r.peek();
  if (c === -1) throw r.peekError('EOF while parsing a list');
  if (c === 0x5d) return false;
  if (first) return true;
  if (c !== 0x2c) throw r.peekError('expected `,` or `]`');
  r.index += 1;
  const after = r.peek();
  if (after === 0x5d) throw r.peekError('trailing comma');
  if (after === -1) throw r.peekError('EOF while parsing a value');
  return true;
}

function endObject(r) {
  const c = r.peek();
  if (c === 0x7d) r.index += 1;
  else if (c === 0x2c) throw r.peekError('trailing comma');
  else throw r.peekError(c === -1 ? 'EOF while parsing an object' : 'trailing characters');
}

function endArray(r) {
  const c = r.peek();
  if (c === 0x5d) {
    r.index += 1;
  } else if (c === 0x2c) {
    r.index += 1;
    throw r.peekError(r.peek() === 0x5d ? 'trailing comma' : 'trailing characters');
  } else {
    throw r.peekError(c === -1 ? 'EOF while parsing a list' : 'trailing characters');
  }
}
