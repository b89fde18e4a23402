// The GPU backend's wasm memory: the matrices go to the GPU as the load reads them, so a model
// on the GPU never holds its weights in wasm memory (docs/memory.md "On the GPU"). The synthetic
// benchlike model in F32 with 20 layers (170 MB of weights, well past the engine's initial
// 64 MiB of wasm memory)
// loads on each backend; the assertions come from its byte sizes. Also what estimateMemory
// says for the GPU. Skipped, saying so, without a software adapter (as gpu-engine.test.mjs).
import assert from 'node:assert/strict';
import { estimateMemory, loadModel } from '../../js/main/index.js';
import { synth, tmpDir } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';
import { GPU, gpuTests } from './webgpu_adapter.mjs';

const MiB = 2 ** 20;
const dir = tmpDir('gpu-memory');
const gpuTest = await gpuTests(dir);

gpuTest('on the GPU the weights never enter wasm memory; the same greedy tokens as the CPU', async () => {
  const file = synth(dir, { preset: 'benchlike', type: 'f32', extra: ['--layers', '20'] });
  const greedy = { maxTokens: 4, temperature: 0, stopIds: [] };
  const prompt = [2, 10, 11, 12, 13];
  const run = async (backend) => {
    const m = await loadModel(file, { threads: 1, maxContext: 64, ...(backend === 'cpu' ? { backend } : GPU) });
    try {
      assert.equal(m.backend, backend, m.info.backendNote);
      const loaded = await m.stats();
      const { tokens } = await collect(m.generate(prompt, greedy));
      return { loaded, tokens };
    } finally {
      await m.unload();
    }
  };
  const cpu = await run('cpu');
  const gpu = await run('webgpu');
  const weights = gpu.loaded.gpuMemory.weights; // every matrix and vector, as uploaded
  assert.ok(weights > 160e6, `${weights} bytes of weights on the GPU`);
  // the CPU holds them in wasm memory, the GPU model only its vectors
  assert.ok(cpu.loaded.residentBytes >= 0.99 * weights, `CPU resident ${cpu.loaded.residentBytes}`);
  assert.ok(gpu.loaded.residentBytes < 0.01 * weights, `GPU model resident ${gpu.loaded.residentBytes}`);
  assert.ok(cpu.loaded.wasmMemoryBytes >= weights, `CPU wasm memory ${cpu.loaded.wasmMemoryBytes}`);
  // wasm memory never grew by the weights: what it holds is the runtime's
  assert.ok(
    gpu.loaded.wasmMemoryBytes < 0.5 * weights &&
      gpu.loaded.wasmMemoryBytes < cpu.loaded.wasmMemoryBytes - 0.5 * weights,
    `GPU wasm memory ${gpu.loaded.wasmMemoryBytes / MiB} MiB, CPU ${cpu.loaded.wasmMemoryBytes / MiB} MiB`,
  );
  assert.deepEqual(gpu.tokens, cpu.tokens);

  // estimateMemory with backend 'webgpu': the device's bytes as the load and a full context took
  // them; in wasm memory only the vectors, no KV caches
  const est = await estimateMemory(file, { backend: 'webgpu', context: 64, threads: 1 });
  const estCpu = await estimateMemory(file, { context: 64, threads: 1 });
  assert.equal(est.backend, 'webgpu');
  assert.equal(estCpu.backend, 'cpu');
  assert.equal(estCpu.gpu, null);
  assert.ok(Math.abs(est.gpu.weights - weights) <= 0.001 * weights, `estimate ${est.gpu.weights}, GPU ${weights}`);
  assert.equal(est.kv, 0);
  assert.equal(est.weights, gpu.loaded.residentBytes);
  assert.equal(estCpu.weights, cpu.loaded.residentBytes);
  assert.ok(est.total < estCpu.total - 0.9 * weights);
});

gpuTest(
  'estimateMemory on the GPU: the KV caches and step buffers of a full context as the GPU holds them',
  async () => {
    const file = synth(dir, { preset: 'tiny', type: 'f32' });
    const est = await estimateMemory(file, { backend: 'webgpu', context: 64, threads: 1 });
    const m = await loadModel(file, { threads: 1, maxContext: 64, ...GPU });
    try {
      assert.equal(m.backend, 'webgpu', m.info.backendNote);
      await m.logits(Array.from({ length: 60 }, (_, i) => (i ? 5 + i : 2)));
      const s = await m.stats();
      assert.ok(Math.abs(est.gpu.weights - s.gpuMemory.weights) <= 0.01 * s.gpuMemory.weights);
      assert.equal(est.gpu.kv, s.gpuMemory.kv);
      assert.ok(s.gpuMemory.scratch <= est.gpu.scratch, `scratch ${s.gpuMemory.scratch} > ${est.gpu.scratch}`);
    } finally {
      await m.unload();
    }
  },
);

gpuTest('memoryBudget on a GPU model counts the GPU memory and takes no CPU KV caches', async () => {
  const file = synth(dir, { preset: 'benchlike', type: 'f32', extra: ['--layers', '20'] });
  const est = await estimateMemory(file, { backend: 'webgpu', context: 1024, threads: 1 });
  const all = est.total + est.gpu.weights + est.gpu.kv + est.gpu.scratch;
  const m = await loadModel(file, { threads: 1, maxContext: 1024, memoryBudget: { bytes: all }, ...GPU });
  try {
    assert.equal(m.backend, 'webgpu', m.info.backendNote);
    assert.equal(m.info.context, 1024);
    assert.deepEqual(m.info.memory.gpu, est.gpu);
    assert.equal(m.info.memory.kv, 0);
    // no CPU KV caches were preallocated: the resident bytes are the vectors'
    assert.ok((await m.stats()).residentBytes < 0.01 * est.gpu.weights);
  } finally {
    await m.unload();
  }
  // one byte less: the context is what gives
  const fit = await loadModel(file, {
    threads: 1,
    maxContext: 1024,
    memoryBudget: { bytes: all - 1, fit: 'context' },
    ...GPU,
  });
  try {
    assert.ok(fit.info.context < 1024 && fit.info.context >= 256, `context ${fit.info.context}`);
  } finally {
    await fit.unload();
  }
});
