// probe-node.mjs — the wasm read-bandwidth ceiling in Node: loads dist/oxinfer-mt.js directly
// (no model) and runs src/wasm/probe.c's ox_probe_read_bandwidth on the engine's own pool.
//   node tools/bench/probe-node.mjs THREADS [MBYTES] [REPS]  -> prints {"bytes_per_s": ...}
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const [threads = 2, mbytes = 512, reps = 5] = process.argv.slice(2).map(Number);
const glue = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'oxinfer-mt.js');
const factory = createRequire(glue)(glue);
const M = await factory({
  oxPoolSize: Math.max(1, threads - 1),
  wasmBinary: fs.readFileSync(glue.replace(/\.js$/, '.wasm')),
});
if (typeof M._ox_probe_read_bandwidth !== 'function')
  throw new Error(`${glue}: no ox_probe_read_bandwidth export (rebuild: make -f Makefile.emscripten)`);
const r = M._ox_probe_read_bandwidth(threads, mbytes, reps);
if (!(r > 0)) throw new Error(`ox_probe_read_bandwidth(${threads}, ${mbytes}, ${reps}) failed: ${r}`);
process.stdout.write(JSON.stringify({ bytes_per_s: r, threads, mbytes, reps }) + '\n');
process.exit(0);
