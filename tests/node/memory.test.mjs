// The memory estimate and budget (estimateMemory, loadModel({memoryBudget})) on the wasm engine,
// with synthetic models made by `oxinfer synth`: the estimate against the heap really in use
// after a load and a generation that fills the context, header-only reads over HTTP, the
// budget's refusal, its fitted context, and wasm memory that does not grow after a budgeted load.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { defaultMemoryBudget, estimateMemory, loadModel } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startServer } from './hostfile_server.mjs';
import { collect } from './api_collect.mjs';

let dir, server;
const models = {};

before(async () => {
  requireDist();
  dir = tmpDir('memory');
  models.tiny = synth(dir, { preset: 'tiny', type: 'f32' });
  models.bench8 = synth(dir, { preset: 'benchlike', type: 'q8_0' });
  models.bench4 = synth(dir, { preset: 'benchlike', type: 'q4_0' });
  models.moe = synth(dir, { preset: 'moe', type: 'f32' });
  models.moe8 = synth(dir, { preset: 'moe', type: 'q8_0' });
  server = await startServer({ 'bench.gguf': models.bench8 });
});

after(() => {
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const MiB = 2 ** 20;
const tokensOf = (n, vocab) => Array.from({ length: n }, (_, i) => (i === 0 ? 2 : 3 + ((i * 7919) % (vocab - 3))));

// Load at `context`, prefill context - 8 tokens and generate to the end: the weights and KV the
// engine counts equal the estimate's, and the heap in use is within 10 % of its total.
// Streamed weights (streamWeights): the cache counts at its bound, which an evicting run fills.
async function checkAgainstLoad(file, { context, quant, kvType, threads = 2, streamWeights, weightCache }) {
  const label =
    `${path.basename(file)} quant ${quant ?? 'stored'} kv ${kvType ?? 'f32'} context ${context}` +
    (streamWeights ? ` stream ${streamWeights} cache ${weightCache}` : '');
  const est = await estimateMemory(file, { context, quant, kvType, threads, streamWeights, weightCache });
  assert.equal(est.context, context, label);
  assert.equal(est.weightCache, streamWeights ? weightCache : 0, `${label}: weight cache`);
  assert.equal(est.total, est.weights + est.weightCache + est.kv + est.scratch + est.runtime, label);
  const model = await loadModel(file, { maxContext: context, quant, kvType, threads, streamWeights, weightCache });
  try {
    const loaded = await model.stats();
    if (!streamWeights) assert.equal(loaded.residentBytes, est.weights, `${label}: weights`);
    else
      assert.ok(
        loaded.residentBytes >= est.weights && loaded.residentBytes <= est.weights + weightCache,
        `${label}: weights ${loaded.residentBytes}`,
      );
    const prompt = tokensOf(context - 8, model.info.vocab);
    const { stats } = await collect(model.generate(prompt, { maxTokens: 100, temperature: 0, stopIds: [] }));
    assert.equal(stats.reason, 'context', `${label}: the generation ran to the end of the context`);
    const s = await model.stats();
    if (!streamWeights) assert.equal(s.residentBytes - est.weights, est.kv, `${label}: KV`);
    else assert.ok(s.streamMisses > 0, `${label}: the cache evicted`);
    const err = Math.abs(s.heapBytes - est.total) / s.heapBytes;
    assert.ok(
      err < 0.1,
      `${label}: heap in use ${s.heapBytes}, estimated ${est.total} (${(err * 100).toFixed(1)} %): ${JSON.stringify(est)}`,
    );
    console.log(`# ${label}: heap ${s.heapBytes}, estimate ${JSON.stringify(est)}`);
    return { est, heap: s.heapBytes };
  } finally {
    await model.unload();
  }
}

test('estimate vs the heap in use after a load and a full-context generation', async () => {
  await checkAgainstLoad(models.tiny, { context: 200 });
  await checkAgainstLoad(models.tiny, { context: 128, quant: 'q8' });
  await checkAgainstLoad(models.bench8, { context: 300 });
  await checkAgainstLoad(models.bench4, { context: 64, threads: 1 });
  await checkAgainstLoad(models.moe, { context: 96, quant: 'q4' });
  await checkAgainstLoad(models.bench8, { context: 700, kvType: 'q8_0' }); // rings on the sliding layers
  await checkAgainstLoad(models.tiny, { context: 400, kvType: 'f16' });
  await checkAgainstLoad(models.moe8, { context: 96, streamWeights: 'experts', weightCache: 2 * MiB });
});

test("streamed weights leave the estimate's resident weights for its weight cache", async () => {
  const all = await estimateMemory(models.moe8, { context: 96 });
  const streamed = await estimateMemory(models.moe8, { context: 96, streamWeights: 'experts', weightCache: 2 * MiB });
  assert.equal(all.weightCache, 0);
  assert.equal(streamed.weightCache, 2 * MiB);
  assert.ok(
    all.weights - streamed.weights > 2 * MiB,
    `the experts leave the weights: ${all.weights} -> ${streamed.weights}`,
  );
  assert.equal(streamed.kv, all.kv);
});

test('the estimate grows with the context by the KV caches and scratch only', async () => {
  const a = await estimateMemory(models.bench8, { context: 256, threads: 1 });
  const b = await estimateMemory(models.bench8, { context: 512, threads: 1 });
  assert.equal(a.weights, b.weights);
  assert.equal(b.kv, 2 * a.kv);
  assert.ok(b.scratch > a.scratch);
  assert.ok(a.embeddingsOnHost > 0, 'the PLE table stays on the host');
  assert.ok(
    a.weights + a.embeddingsOnHost < a.fileBytes + a.embeddingsOnHost + 1 &&
      a.fileBytes < fs.statSync(models.bench8).size,
  );
  const full = await estimateMemory(models.bench8, { threads: 1 });
  assert.equal(full.context, 4096, "no context: the model's maximum (benchlike's)");
});

test('estimate on a URL reads only the header ranges', async () => {
  const url = `${server.base}/count/bench.gguf`;
  const est = await estimateMemory(url, { context: 1024, threads: 1 });
  const local = await estimateMemory(models.bench8, { context: 1024, threads: 1 });
  for (const k of ['weights', 'embeddingsOnHost', 'kv', 'scratch', 'fileBytes', 'context'])
    assert.equal(est[k], local[k], k);
  const served = Number(await (await fetch(`${server.base}/bytes/bench.gguf`)).text());
  const size = fs.statSync(models.bench8).size;
  const header = size - est.fileBytes - est.embeddingsOnHost; // metadata + tensor infos + padding
  assert.ok(served > 0 && served <= header + 64 * 1024, `served ${served} bytes of ${size} (header ${header})`);
});

test('memoryBudget: refused with what fits, or the context fitted to it', async () => {
  const want = await estimateMemory(models.bench8, { context: 4096, threads: 1 });
  const bytes = Math.round(want.total - want.kv / 2);
  await assert.rejects(loadModel(models.bench8, { maxContext: 4096, threads: 1, memoryBudget: bytes }), (e) => {
    assert.equal(e.code, 'NOMEM');
    assert.match(
      e.message,
      /needs [\d.]+ MiB at a context of 4096, more than the memory budget of [\d.]+ MiB; try context: \d+/,
    );
    return true;
  });
  const fitted = await estimateMemory(models.bench8, {
    context: 4096,
    threads: 1,
    memoryBudget: { bytes, fit: 'context' },
  });
  assert.ok(fitted.context < 4096 && fitted.context >= 256 && fitted.total <= bytes, JSON.stringify(fitted));
  const model = await loadModel(models.bench8, {
    maxContext: 4096,
    threads: 1,
    memoryBudget: { bytes, fit: 'context' },
  });
  try {
    assert.equal(model.info.context, fitted.context);
    assert.equal(model.info.memory.context, fitted.context);
    const before = await model.stats();
    assert.ok(before.wasmBytes <= bytes + 64 * MiB, `wasm memory ${before.wasmBytes} within the budget ${bytes}`);
    assert.equal(
      before.residentBytes,
      fitted.weights + fitted.kv,
      'the KV caches are allocated for the whole context at load',
    );
    const { stats } = await collect(
      model.generate(tokensOf(600, model.info.vocab), { maxTokens: 40, temperature: 0, stopIds: [] }),
    );
    assert.equal(stats.generatedTokens, 40);
    const afterGen = await model.stats();
    assert.equal(afterGen.wasmBytes, before.wasmBytes, 'wasm memory grew once, at load');
    assert.equal(afterGen.residentBytes, before.residentBytes);
  } finally {
    await model.unload();
  }
  await assert.rejects(
    loadModel(models.bench8, { threads: 1, memoryBudget: { bytes: want.weights / 2, fit: 'context' } }),
    /even at a context of 1/,
  );
});

test('memoryBudget below the resident weights: the weights are streamed from the file, or NOMEM names each mode', async () => {
  const cache = 2 * MiB,
    context = 16;
  // over the budget even at a context of 1 with every weight resident; streamed, it fits
  const all = await estimateMemory(models.moe8, { context: 1, threads: 1 });
  const experts = await estimateMemory(models.moe8, {
    context,
    threads: 1,
    streamWeights: 'experts',
    weightCache: cache,
  });
  assert.ok(experts.total < all.total, `streaming the experts takes less: ${experts.total} < ${all.total}`);
  const bytes = Math.round((experts.total + all.total) / 2);
  const est = await estimateMemory(models.moe8, { context, threads: 1, memoryBudget: bytes, weightCache: cache });
  assert.equal(est.streamWeights, 'experts', 'estimateMemory decides as the load does');
  assert.equal(est.total, experts.total);
  assert.equal(all.streamWeights, 'none');
  const model = await loadModel(models.moe8, {
    maxContext: context,
    threads: 1,
    memoryBudget: bytes,
    weightCache: cache,
  });
  try {
    assert.equal(model.info.streamWeights, 'experts', 'the experts are left in the file');
    assert.equal(model.info.memory.total, experts.total);
    assert.equal(model.info.memory.streamWeights, 'experts');
    const { stats } = await collect(
      model.generate(tokensOf(8, model.info.vocab), { maxTokens: 4, temperature: 0, stopIds: [] }),
    );
    assert.equal(stats.generatedTokens, 4);
    assert.ok((await model.stats()).streamMisses > 0, 'expert weights were read from the file');
  } finally {
    await model.unload();
  }
  // the caller's choice stands: with streamWeights: 'none' the budget refuses
  await assert.rejects(
    loadModel(models.moe8, { maxContext: context, threads: 1, memoryBudget: bytes, streamWeights: 'none' }),
    (e) => e.code === 'NOMEM' && !/streamed/.test(e.message),
  );
  // nothing fits: the message names what each mode needs
  await assert.rejects(
    loadModel(models.moe8, {
      maxContext: context,
      threads: 1,
      memoryBudget: Math.round(experts.total / 4),
      weightCache: cache,
    }),
    (e) => {
      assert.equal(e.code, 'NOMEM');
      assert.match(
        e.message,
        /with weights streamed from the file it does not fit either \(streamWeights: 'experts' needs [\d.]+ GiB, streamWeights: 'all' needs [\d.]+ GiB, weightCache [\d.]+ GiB\)/,
      );
      return true;
    },
  );
  // a dense model whose context, not its weights, is over the budget: the context is named, nothing streamed
  const want = await estimateMemory(models.bench8, { context: 4096, threads: 1 });
  await assert.rejects(
    loadModel(models.bench8, { maxContext: 4096, threads: 1, memoryBudget: Math.round(want.total - want.kv / 2) }),
    (e) => e.code === 'NOMEM' && /try context: \d+/.test(e.message) && !/streamed/.test(e.message),
  );
  // the loaded model says nothing is streamed when nothing is
  const plain = await loadModel(models.tiny, { threads: 1 });
  assert.equal(plain.info.streamWeights, 'none');
  await plain.unload();
});

test('memoryBudget and estimate options are checked', async () => {
  assert.ok(defaultMemoryBudget() > 3 * 2 ** 30, 'Node: the wasm32 limit');
  await assert.rejects(
    loadModel(models.tiny, { memoryBudget: -1 }),
    (e) => e.code === 'RANGE' && /memoryBudget/.test(e.message),
  );
  await assert.rejects(
    loadModel(models.tiny, { memoryBudget: { fit: 'all' } }),
    (e) => e.code === 'RANGE' && /fit/.test(e.message),
  );
  await assert.rejects(
    estimateMemory(models.tiny, { kvType: 'q4' }),
    (e) => e.code === 'RANGE' && /kvType/.test(e.message),
  );
  await assert.rejects(
    estimateMemory(models.tiny, { context: 1 << 30 }),
    (e) => e.code === 'RANGE' && /exceeds the model's maximum/.test(e.message),
  );
  await assert.rejects(
    estimateMemory(path.join(dir, 'missing.gguf')),
    (e) => e.code === 'MISSING' && /missing.gguf: cannot open/.test(e.message),
  );
  const auto = await estimateMemory(models.tiny, { context: 64, memoryBudget: 'auto' });
  assert.equal(auto.context, 64);
});
