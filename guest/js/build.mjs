// Builds policy.wasm: assembles the WIT the component is built against and
// hands src/policy.js to ComponentizeJS (the engine behind `jco componentize`).
//
// Why not the `jco componentize` command: jco 1.35.0 first reads the WIT path
// through a WASI shim (preview2-shim 0.26) that no longer preopens any
// directory, so it fails with "failed to get path metadata" for every WIT
// path; and it would bundle its own ComponentizeJS 0.22 rather than the
// pinned 0.23.0. This script calls the same `componentize` function directly.

import { componentize } from '@bytecodealliance/componentize-js';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'policy.wasm');

// The WIT: this folder's world (the contract's world plus `wasi:cli/run`),
// the contract as the repository defines it, and the WASI 0.2 packages that
// ship inside the pinned jco, so no third-party WIT is kept in the repository.
const wasiWit = join(here, 'node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12');
const wit = await mkdtemp(join(tmpdir(), 'nomos-policy-wit-'));
try {
  await cp(join(here, 'wit/world.wit'), join(wit, 'world.wit'));
  await cp(join(here, '../../wit/policy.wit'), join(wit, 'deps/nomos-continuation/policy.wit'));
  for (const pkg of ['cli', 'io', 'clocks', 'filesystem', 'random', 'sockets']) {
    await cp(join(wasiWit, `wasi-${pkg}`), join(wit, `deps/wasi-${pkg}`), { recursive: true });
  }
  const { component } = await componentize({
    sourcePath: join(here, 'src/policy.js'),
    witPath: wit,
    worldName: 'policy-cli',
    // What the host does not provide a policy anyway: outgoing HTTP and the
    // incoming-request handler. stdio stays: `wasi:cli/run` prints with it,
    // and an uncaught exception is reported on stderr instead of a bare trap.
    disableFeatures: ['http', 'fetch-event', 'clocks', 'random'],
  });
  await writeFile(out, component);
  console.log(`wrote ${out} (${component.length} bytes)`);
} finally {
  await rm(wit, { recursive: true, force: true });
}
