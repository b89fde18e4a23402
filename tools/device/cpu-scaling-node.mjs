#!/usr/bin/env node
// cpu-scaling-node.mjs — one configuration of tools/device/cpu-scaling.sh in Node: our wasm
// engine (dist/, the public API, as `npm run bench`'s Node rows) on one synthetic model at one
// thread count, with the wasm read ceiling at that count (tools/bench/probe-node.mjs), and the
// machine it ran on. Needs no npm packages (the machine that runs it may have none).
//
//   node tools/device/cpu-scaling-node.mjs FILE THREADS [REPS] [N_GEN]
//     -> one JSON line: {file, threads, cpu_model, cores, ceiling_bytes_per_s, bytes_per_token,
//        runs: [{prefill_tps, decode_tps}], decode_tps (median), decode_share (of the ceiling)}
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../js/main/index.js';
import { timeGenerate } from '../bench/measure.mjs';
import { modelMeta, prompt, weightsPerToken, median } from '../bench/lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const [file, threadsArg, repsArg = '3', nGenArg = '64'] = process.argv.slice(2);
const threads = Number(threadsArg),
  reps = Number(repsArg),
  nGen = Number(nGenArg);
if (!file || !(threads >= 1) || !(reps >= 1) || !(nGen >= 1)) {
  console.error('usage: node tools/device/cpu-scaling-node.mjs FILE THREADS [REPS] [N_GEN]');
  process.exit(2);
}

// the ceiling first, in a process of its own (its 512 MB buffer is not the model's memory)
const probe = spawnSync(
  process.execPath,
  [path.join(ROOT, 'tools', 'bench', 'probe-node.mjs'), String(threads), '512', '8'],
  { encoding: 'utf8' },
);
const ceiling = probe.status === 0 ? JSON.parse(probe.stdout.trim().split('\n').pop()).bytes_per_s : null;

const meta = modelMeta(file);
const per = weightsPerToken(file);
const model = await loadModel({ path: file }, { threads, maxContext: 1024, backend: 'cpu' });
const runs = [];
await timeGenerate(model, prompt(meta, 64, 999).tokens, 8); // warm-up: every weight touched once
for (let r = 0; r < reps; r++) {
  const x = await timeGenerate(model, prompt(meta, 64, 1000 + r).tokens, nGen);
  runs.push({ prefill_tps: x.prefill_tps, decode_tps: x.decode_tps });
}
await model.unload();
const cpus = os.cpus();
const decode = median(runs.map((x) => x.decode_tps));
process.stdout.write(
  JSON.stringify({
    file: path.basename(file),
    threads,
    cpu_model: (cpus[0]?.model ?? '?').trim(),
    cores: cpus.length,
    ceiling_bytes_per_s: ceiling,
    bytes_per_token: per.bytes,
    mix: per.mix,
    runs,
    prefill_tps: median(runs.map((x) => x.prefill_tps)),
    decode_tps: decode,
    decode_share: ceiling ? (decode * per.bytes) / ceiling : null,
  }) + '\n',
);
process.exit(0);
