// Which status strings are terminal, and which wait for a person.
//
// Runtimes spell states differently, so the match ignores ASCII case and
// surrounding whitespace and accepts the usual synonyms, among them the task
// states of MCP Tasks and of A2A (0.3's `input-required`, 1.0's
// `TASK_STATE_*`, whose name is classified like the bare word). Anything unknown
// is still running: waiting too long is visible and harmless, continuing too
// early would feed the agent a result that does not exist yet.

import { trim } from './text.js';

const CLASSES = new Map([
  ...['completed', 'complete', 'succeeded', 'success', 'done'].map((s) => [s, { tag: 'terminal', val: 'completed' }]),
  ...['failed', 'failure', 'error', 'errored', 'timed_out', 'timeout', 'rejected'].map((s) => [
    s,
    { tag: 'terminal', val: 'failed' },
  ]),
  ...['cancelled', 'canceled', 'aborted'].map((s) => [s, { tag: 'terminal', val: 'cancelled' }]),
  ...['input_required', 'input-required'].map((s) => [s, { tag: 'awaiting-person', val: 'input' }]),
  ...['auth_required', 'auth-required'].map((s) => [s, { tag: 'awaiting-person', val: 'authorization' }]),
]);

// A2A 1.0 writes each state as TASK_STATE_<NAME>.
const A2A_PREFIX = 'task_state_';

// The longest status spelling classified: the prefix and the longest word.
const LONGEST = A2A_PREFIX.length + 'input_required'.length;

/**
 * Classifies a runtime's status string, as the contract's `status-class`:
 * `{ tag: 'terminal', val: outcome }`, `{ tag: 'awaiting-person', val: need }`
 * or `{ tag: 'non-terminal' }`.
 */
export function classify(status) {
  const text = trim(status);
  // Only ASCII letters may differ in case (Rust's `to_ascii_lowercase`);
  // `toLowerCase` would also map, say, the Kelvin sign to "k".
  if (text.length > LONGEST || /[^\x00-\x7f]/.test(text)) return { tag: 'non-terminal' };
  const lower = text.toLowerCase();
  const word = lower.startsWith(A2A_PREFIX) ? lower.slice(A2A_PREFIX.length) : lower;
  return CLASSES.get(word) ?? { tag: 'non-terminal' };
}
