// gpu-bench.mjs — the WebGPU rows of `npm run bench` without its harness (no npm packages but the
// `webgpu` one, no Chromium): for tools/device/h200-gpu.sh on a machine with a GPU and no npm.
// One model file; per backend (cpu, webgpu) a load, a warm-up, `reps` timed greedy generations
// (tools/bench/measure.mjs) and the memory; for WebGPU the GPU's read bandwidth
// (js/gpu/probe.js) and decode GB/s as a share of it. Prints a markdown table, writes JSON.
//
//   node tools/device/gpu-bench.mjs FILE --threads 16 --reps 3 --n-prompt 64 --n-gen 64
//        [--backends cpu,webgpu] [--fallback] [--json OUT.json]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadModel } from '../../js/main/index.js';
import { nodeGpu, openDevice } from '../../js/gpu/device.js';
import { gpuReadBandwidth } from '../../js/gpu/probe.js';
import { timeGenerate } from '../bench/measure.mjs';
import { fmtMB, markdownTable, modelMeta, prompt, summary, weightsPerToken } from '../bench/lib.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(`--${k}`);
  return i < 0 ? d : args[i + 1];
};
const file = args[0];
if (!file || !fs.existsSync(file)) throw new Error(`gpu-bench: no model file ${file}`);
const threads = Number(opt('threads', Math.min(16, os.cpus().length)));
const reps = Number(opt('reps', 3));
const nPrompt = Number(opt('n-prompt', 64));
const nGen = Number(opt('n-gen', 64));
const fallback = args.includes('--fallback');
const backends = opt('backends', 'cpu,webgpu').split(',');
const meta = modelMeta(file);
const per = weightsPerToken(file);
const log = (s) => console.error(s);

async function probe() {
  const gpu = await nodeGpu();
  const { device, caps } = await openDevice(gpu, { allowFallback: fallback });
  try {
    return { ...(await gpuReadBandwidth(device, { mbytes: 1024 })), adapter: caps.description };
  } finally {
    await device.queue.onSubmittedWorkDone();
    device.destroy();
  }
}

const results = {
  file,
  bytes: fs.statSync(file).size,
  bytes_per_token: per.bytes,
  threads,
  reps,
  nPrompt,
  nGen,
  rows: {},
};
if (backends.includes('webgpu')) {
  results.gpu_read = await probe();
  log(`GPU read bandwidth: ${(results.gpu_read.bytesPerSec / 1e9).toFixed(1)} GB/s on ${results.gpu_read.adapter}`);
}
for (const backend of backends) {
  const t0 = performance.now();
  const model = await loadModel(file, { threads, maxContext: 1024, backend, allowFallbackAdapter: fallback });
  const loadMs = performance.now() - t0;
  if (model.backend !== backend)
    throw new Error(`${backend}: the model runs on ${model.backend}: ${model.info.backendNote}`);
  const loaded = await model.stats();
  const runs = [];
  for (let r = -1; r < reps; r++) {
    const p = prompt(meta, nPrompt, 1000 + r);
    const x = await timeGenerate(model, p.tokens, r < 0 ? 8 : nGen);
    log(
      `${backend} ${r < 0 ? 'warm-up' : `rep ${r + 1}`}: prefill ${x.prefill_tps.toFixed(1)} tok/s, decode ${x.decode_tps.toFixed(1)} tok/s`,
    );
    if (r >= 0) runs.push(x);
  }
  results.rows[backend] = {
    load_ms: loadMs,
    adapter: model.info.gpu?.adapter ?? null,
    fallbackAdapter: model.info.gpu?.fallbackAdapter ?? null,
    wasm_bytes: loaded.wasmMemoryBytes,
    gpu_memory: loaded.gpuMemory,
    prefill: summary(runs.map((x) => x.prefill_tps)),
    decode: summary(runs.map((x) => x.decode_tps)),
    runs,
  };
  await model.unload();
}

// the rows as tools/bench.mjs prints them
const rows = Object.entries(results.rows).map(([b, r]) => {
  const bw = per.bytes * r.decode.med;
  const share = b === 'webgpu' ? ` (${Math.round((100 * bw) / results.gpu_read.bytesPerSec)} %)` : '';
  return {
    engine:
      b === 'webgpu'
        ? `oxinfer (WebGPU on ${r.adapter}${r.fallbackAdapter ? ', a software adapter' : ''}, Node)`
        : 'oxinfer (wasm, Node)',
    weights: `${path.basename(file)} ${fmtMB(results.bytes)}`,
    threads,
    load: summary([r.load_ms]),
    prefill: r.prefill,
    decode: r.decode,
    bandwidth: `${(bw / 1e9).toFixed(1)} GB/s${share}`,
    mem: `wasm ${fmtMB(r.wasm_bytes)}${r.gpu_memory ? `, GPU ${fmtMB(r.gpu_memory.weights + r.gpu_memory.kv + r.gpu_memory.scratch)}` : ''}`,
  };
});
const table = markdownTable(rows);
console.log(table);
const out = opt('json', null);
if (out) fs.writeFileSync(out, JSON.stringify({ ...results, table }, null, 1));
process.exit(0);
