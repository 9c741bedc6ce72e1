// Wait, continue or drop: the decision for one execution.
//
// The rules, in order: an execution that is not terminal is waited for; a
// terminal one is dropped when the session has no open assent window (the
// operator's approval is what lets the system act on its own), when the
// window has already caused CONTINUATION_CAP continuations (the loop guard),
// or when delivery has failed MAX_ATTEMPTS times; otherwise the agent is
// continued with the note.
//
// Inputs and answers have the shapes of the contract's records and variants
// as they arrive in JavaScript: camelCase fields, `bigint` for s64, an absent
// option as `undefined` (or `null`), and `{ tag, val }` for a variant.

import { classify } from './classify.js';
import { formatNote } from './note.js';
import { compareTimestamps, formatTimestamp } from './time.js';

/** Continuations one assent window may cause before the operator must step in. */
export const CONTINUATION_CAP = 20;
/** Failed deliveries after which a continuation is given up. */
export const MAX_ATTEMPTS = 5;

/** Decides about one execution: `{ tag: 'wait' | 'continue' | 'drop', val? }`. */
export function decide(input) {
  const status = classify(input.execution.status);
  if (status.tag !== 'terminal') return { tag: 'wait' };
  const { session } = input;
  const window = session.window;
  if (window == null) {
    return drop('assent window closed: the session has no approved plan in flight');
  }
  if (compareTimestamps(input.now, window.openedAt) < 0) {
    return drop(`assent window closed: it opens at ${formatTimestamp(window.openedAt)}`);
  }
  if (compareTimestamps(input.now, window.expiresAt) >= 0) {
    return drop(`assent window closed: it expired at ${formatTimestamp(window.expiresAt)}`);
  }
  if (session.continuationsInWindow >= CONTINUATION_CAP) {
    return drop(
      `loop guard: ${session.continuationsInWindow} automatic continuations already in this assent window ` +
        `(cap ${CONTINUATION_CAP}); waiting for the operator`,
    );
  }
  if (input.attempts >= MAX_ATTEMPTS) {
    return drop(
      `delivery failed ${input.attempts} times (limit ${MAX_ATTEMPTS}); giving up on this continuation`,
    );
  }
  return { tag: 'continue', val: formatNote(input.execution, status.val, session.stillRunning) };
}

function drop(reason) {
  return { tag: 'drop', val: reason };
}

/** Decides about several executions, in order. */
export function decideBatch(inputs) {
  return inputs.map(decide);
}
