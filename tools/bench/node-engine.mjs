// node-engine.mjs — our wasm engine in Node through the JS API, in a child process of
// tools/bench.mjs (so its peak RSS is its own). One JSON request per stdin line:
// {op: 'load', src: {path} | {url}, threads, nCtx, backend?, allowFallbackAdapter?} | {op: 'run', tokens, nGen} |
// {op: 'memory'} | {op: 'gpuProbe', mbytes, allowFallbackAdapter} (js/gpu/probe.js) | {op: 'quit'};
// one JSON reply per stdout line: {ok: true, value} or {ok: false, error}.
import readline from 'node:readline';
import { loadModel } from '../../js/main/index.js';
import { timeGenerate } from './measure.mjs';
import { nodeGpu, openDevice } from '../../js/gpu/device.js';
import { gpuReadBandwidth } from '../../js/gpu/probe.js';

let model = null;
const ops = {
  async load({ src, threads, nCtx, backend, allowFallbackAdapter }) {
    const t0 = performance.now();
    model = await loadModel(src, { threads, maxContext: nCtx, ...(backend ? { backend, allowFallbackAdapter } : {}) });
    if (backend === 'webgpu' && model.backend !== 'webgpu')
      throw new Error(`the model runs on the CPU: ${model.info.backendNote}`);
    return { load_ms: performance.now() - t0, build: model.build, threads: model.threads, info: model.info };
  },
  async run({ tokens, nGen }) {
    return timeGenerate(model, tokens, nGen);
  },
  async memory() {
    const s = await model.stats();
    return {
      wasm_bytes: s.wasmMemoryBytes,
      resident_bytes: s.residentBytes,
      host_bytes_read: s.hostBytesRead,
      host_read_calls: s.hostReadCalls,
      host_bytes_all: s.hostBytesReadAll,
      gpu_bytes: s.gpuBytes,
    };
  },
  // the GPU's read bandwidth on a device of its own (the model's is on its GPU thread)
  async gpuProbe({ mbytes, allowFallbackAdapter }) {
    const gpu = await nodeGpu();
    const { device } = await openDevice(gpu, { allowFallback: allowFallbackAdapter });
    try {
      return await gpuReadBandwidth(device, { mbytes });
    } finally {
      await device.queue.onSubmittedWorkDone();
      device.destroy();
    }
  },
  async quit() {
    await model?.unload();
    setImmediate(() => process.exit(0));
    return true;
  },
};

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let chain = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  chain = chain.then(async () => {
    try {
      send({ ok: true, value: await ops[m.op](m) });
    } catch (e) {
      send({ ok: false, error: `${e.code ?? ''} ${e.message ?? e}`.trim() });
    }
  });
});
