// Which status strings are terminal.
//
// Runtimes spell states differently, so the match ignores ASCII case and
// surrounding whitespace and accepts the usual synonyms. Anything unknown
// is still running: waiting too long is visible and harmless, continuing too
// early would feed the agent a result that does not exist yet.

import { trim } from './text.js';

const OUTCOMES = new Map([
  ...['completed', 'complete', 'succeeded', 'success', 'done'].map((s) => [s, 'completed']),
  ...['failed', 'failure', 'error', 'errored', 'timed_out', 'timeout'].map((s) => [s, 'failed']),
  ...['cancelled', 'canceled', 'aborted'].map((s) => [s, 'cancelled']),
]);

// The longest status word above.
const LONGEST = 9;

/**
 * Classifies a runtime's status string, as the contract's `status-class`:
 * `{ tag: 'terminal', val: outcome }` or `{ tag: 'non-terminal' }`.
 */
export function classify(status) {
  const word = trim(status);
  // Only ASCII letters may differ in case (Rust's `to_ascii_lowercase`);
  // `toLowerCase` would also map, say, the Kelvin sign to "k".
  const outcome =
    word.length <= LONGEST && !/[^\x00-\x7f]/.test(word) ? OUTCOMES.get(word.toLowerCase()) : undefined;
  return outcome === undefined ? { tag: 'non-terminal' } : { tag: 'terminal', val: outcome };
}
