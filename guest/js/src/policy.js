// The default nomos continuation policy as a WebAssembly component.
//
// Two exports:
// - `policy`: the contract's typed functions (`nomos:continuation/policy`),
//   which the host calls;
// - `run`: `wasi:cli/run`, so the same policy.wasm is a command-line tool for
//   its author: `wasmtime run policy.wasm decide < input.json`.
//
// The logic lives in the other modules and is plain JavaScript, so it also
// runs under Node for quick checks.

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { getStderr } from 'wasi:cli/stderr@0.2.12';
import { getStdin } from 'wasi:cli/stdin@0.2.12';
import { getStdout } from 'wasi:cli/stdout@0.2.12';

import { classify } from './classify.js';
import { CliError, MAX_INPUT, runCli } from './cli.js';
import { decide, decideBatch } from './decide.js';
import { describe } from './describe.js';
import { extractLinks } from './links.js';
import { SOUL } from './soul.js';

keepByteOrderMarks();
warmUp();

export const policy = {
  extractLinks,
  classify,
  decide,
  decideBatch,
  soul: () => SOUL,
  describe,
};

export const run = {
  /** Returning is success; throwing is `err`, which wasmtime reports as exit status 1. */
  run() {
    let output;
    try {
      output = runCli(getArguments().slice(1), readStdin);
    } catch (err) {
      // Bad input, or a bug: either way one line on stderr and a failure.
      const line = err instanceof CliError ? err.line() : `error: internal: ${String(err).replaceAll('\n', ' ')}`;
      write(getStderr(), `${line}\n`);
      throw err;
    }
    write(getStdout(), output);
  },
};

/** All of stdin, or a byte more than MAX_INPUT if there is more. */
function readStdin() {
  const stdin = getStdin();
  const chunks = [];
  let total = 0;
  while (total <= MAX_INPUT) {
    let chunk;
    try {
      chunk = stdin.blockingRead(BigInt(Math.min(65536, MAX_INPUT + 1 - total)));
    } catch (err) {
      // An import's error arrives as an Error whose `payload` is the WIT value.
      if (err?.payload?.tag === 'closed') break; // end of input
      throw err;
    }
    chunks.push(chunk);
    total += chunk.length;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/** Writes text to a WASI output stream, in the pieces one blocking write allows. */
function write(stream, text) {
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length; at += 4096) {
    stream.blockingWriteAndFlush(bytes.subarray(at, at + 4096));
  }
}

/**
 * Makes strings the host passes in keep a leading U+FEFF.
 *
 * ComponentizeJS 0.23.0 turns each incoming string into JavaScript with a
 * default `TextDecoder`, which drops a byte-order mark at the start of the
 * string, so a status "\uFEFFdone" would arrive as "done" and be read as
 * terminal where the Rust policy waits. Its decoder is created before this
 * module runs, so the fix goes on the prototype: when a decoder that strips
 * marks decodes bytes that begin with one, the mark is put back.
 */
function keepByteOrderMarks() {
  const { decode } = TextDecoder.prototype;
  TextDecoder.prototype.decode = function decodeKeepingMark(input, options) {
    const text = decode.call(this, input, options);
    // The bindings pass a Uint8Array (of their own realm, so no instanceof).
    const marked =
      ArrayBuffer.isView(input) && input.BYTES_PER_ELEMENT === 1 &&
      input[0] === 0xef && input[1] === 0xbb && input[2] === 0xbf;
    if (!marked || this.ignoreBOM || options?.stream || this.encoding !== 'utf-8') return text;
    return `\uFEFF${text}`;
  };
}

/**
 * Runs each function once while the component is built. The engine's state
 * after this module is evaluated is what every sandbox starts from, so the
 * functions are already compiled and the host's first call in a fresh
 * sandbox does not pay for it.
 */
function warmUp() {
  const at = (seconds) => ({ seconds: BigInt(seconds), nanoseconds: 0 });
  const input = {
    now: at(1000),
    execution: {
      id: '3f2504e0-4f89-11d3-9a0c-0305e82c3301',
      status: ' Failed ',
      result: '\x1b[31mERROR\x1b[0m: `x`\r\n'.repeat(300),
      finishedAt: undefined,
    },
    session: {
      id: '9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d',
      window: { openedAt: at(0), expiresAt: at(1800), route: 'button' },
      continuationsInWindow: 0,
      stillRunning: ['6fa459ea-ee8a-3ca4-894e-db77e160355e'],
    },
    attempts: 0,
  };
  decideBatch([input, { ...input, now: at(5000) }, { ...input, execution: { ...input.execution, status: 'running' } }]);
  extractLinks('running, execution_id: 3F2504E0-4F89-11D3-9A0C-0305E82C3301 and {"execution": {"id": "x"}}');
  extractLinks('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"task\\":{\\"taskId\\":\\"t\\"}}"}]}}');
  decide({ ...input, execution: { ...input.execution, status: 'done', task: { protocol: 'a2a', id: 'warm' } } });
  describe();
}
