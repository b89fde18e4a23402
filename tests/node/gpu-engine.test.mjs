// The GPU backend end to end in Node on a software adapter (lavapipe 25 from
// tools/setup-lavapipe.sh, else Debian chromium's SwiftShader): the whole forward of the tiny
// synthetic model (PLE, KV-shared layers, sliding + full attention, soft-cap) recorded by the C
// core and run on the GPU thread, against the CPU engine. Greedy token streams on F32 are
// identical; Q8_0 / Q4_K logits stay within the bands below. Also the backend choice ('auto'
// never takes a software adapter), the fallbacks (a weight type with no kernel, MoE) and a lost
// device (the request fails, the model goes on on the CPU). Skipped, saying so, when no adapter
// can be created (no `webgpu` package, no Vulkan driver).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { ROOT } from '../../tools/serve.mjs';
import { requireCli, requireDist, synth, tmpDir } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';
import { maxDlogp as dlogp } from './dlogp.mjs';

const LAVAPIPE = path.join(ROOT, 'build/lavapipe25/icd.json');
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (!process.env.VK_ICD_FILENAMES) process.env.VK_ICD_FILENAMES = [LAVAPIPE, SWIFTSHADER].filter(existsSync).join(':');

const V = 1024; // the tiny preset's vocab
const N = 40; // prompt tokens: past the sliding window (16)
const TOKENS = Array.from({ length: N }, (_, i) => (i ? 7 + ((i * 7919) % 1000) : 2));
const GPU = { backend: 'webgpu', allowFallbackAdapter: true };
const dir = tmpDir('gpu');

// null, or why no software adapter can be had here
let why = null;
try {
  requireCli();
  requireDist();
  const m = await loadModel(synth(dir, { preset: 'tiny', type: 'f32' }), { threads: 1, maxContext: 64, ...GPU });
  await m.unload();
} catch (e) {
  why = e.code === 'UNSUPPORTED' ? e.message : null;
  if (!why) throw e;
}
const gpuTest = (name, fn) => test(name, { skip: why ? `no WebGPU adapter: ${why}` : false, timeout: 600000 }, fn);

const maxDlogp = (a, b) => dlogp(a, b, V);

const argmaxes = (x) => {
  const out = [];
  for (let o = 0; o < x.length; o += V) {
    let b = o;
    for (let v = o; v < o + V; v++) if (x[v] > x[b]) b = v;
    out.push(b - o);
  }
  return out;
};

async function both(file, fn) {
  const cpu = await loadModel(file, { threads: 1, maxContext: 128, backend: 'cpu' });
  const gpu = await loadModel(file, { threads: 1, maxContext: 128, ...GPU });
  try {
    assert.equal(cpu.backend, 'cpu');
    assert.equal(gpu.backend, 'webgpu', gpu.info.backendNote);
    return { cpu: await fn(cpu), gpu: await fn(gpu), model: gpu };
  } finally {
    await cpu.unload();
    await gpu.unload();
  }
}

gpuTest('F32: greedy stream identical to the CPU engine; logits and embeddings agree', async (t) => {
  const file = synth(dir, { preset: 'tiny', type: 'f32' });
  const greedy = { maxTokens: 24, temperature: 0, stopIds: [] };
  const r = await both(file, async (m) => ({
    tokens: (await collect(m.generate(TOKENS, greedy))).tokens,
    logits: await m.logits(TOKENS, { all: true }),
    embed: (await m.embed([TOKENS.slice(1, 20)]))[0],
    stats: await m.stats(),
    info: m.info,
  }));
  assert.equal(r.gpu.tokens.length, 24);
  assert.deepEqual(r.gpu.tokens, r.cpu.tokens, 'greedy tokens');
  const d = maxDlogp(r.gpu.logits, r.cpu.logits);
  let de = 0;
  for (let i = 0; i < r.cpu.embed.length; i++) de = Math.max(de, Math.abs(r.gpu.embed[i] - r.cpu.embed[i]));
  t.diagnostic(`F32 over ${N} positions: max |dlogp| ${d.toExponential(2)}, max |dembedding| ${de.toExponential(2)}`);
  assert.ok(d < 1e-3, `F32 max |dlogp| ${d}`);
  assert.ok(de < 1e-4, `F32 max |dembedding| ${de}`);
  assert.deepEqual(argmaxes(r.gpu.logits), argmaxes(r.cpu.logits));
  const g = r.gpu.stats;
  assert.equal(g.backend, 'webgpu');
  assert.ok(
    g.gpuMemory.weights > 5e6 && g.gpuMemory.kv > 0 && g.gpuBytes >= g.gpuMemory.weights + g.gpuMemory.kv,
    JSON.stringify(g.gpuMemory),
  );
  assert.equal(r.cpu.stats.gpuBytes, 0);
  // the uploaded matrices left wasm memory (the embedding table stays: rows are read from it)
  assert.ok(
    r.gpu.stats.residentBytes < r.cpu.stats.residentBytes - 0.8 * g.gpuMemory.weights,
    `resident ${r.gpu.stats.residentBytes} vs ${r.cpu.stats.residentBytes}`,
  );
  assert.match(r.gpu.info.gpu.adapter, /\S/);
  assert.equal(r.gpu.info.gpu.fallbackAdapter, true);
});

// The calm tiny model of kv.test.mjs. The GPU quantizes activations as the CPU does (Q8_0 /
// Q8_K), so most rows agree exactly; WGSL's division may round a quant next to a .5 boundary
// the other way, and one such flip moves this model's log-probabilities by about 0.1 (measured
// on lavapipe over the kernels' versions: Q4_K up to 0.05, Q8_0 up to 0.2; the argmax agreed at
// 39 or 40 of the 40 positions).
const CALM = ['--branch-gain', '0.5', '--qk-norm-scale', '0.5'];
for (const [type, band] of [
  ['q8_0', 0.5],
  ['q4_k', 0.5],
])
  gpuTest(`${type}: logits within the CPU band at every position`, async (t) => {
    const file = synth(dir, { preset: 'tiny', type, extra: CALM });
    const r = await both(file, (m) => m.logits(TOKENS, { all: true }));
    const d = maxDlogp(r.gpu, r.cpu);
    const a = argmaxes(r.gpu),
      b = argmaxes(r.cpu),
      same = a.filter((x, i) => x === b[i]).length;
    t.diagnostic(`${type}: max |dlogp| ${d.toExponential(2)}, argmax agrees at ${same}/${N}`);
    assert.ok(d < band, `${type} max |dlogp| ${d} (band ${band})`);
    assert.ok(same >= N - 1, `${type}: argmax agrees at ${same}/${N}`);
  });

gpuTest('KV caches on the GPU grow with the positions (two micro-batches, one growth)', async (t) => {
  const file = synth(dir, { preset: 'tiny', type: 'f32' });
  const long = Array.from({ length: 300 }, (_, i) => (i ? 5 + ((i * 7919) % 1000) : 2));
  const run = async (backend) => {
    const m = await loadModel(file, { threads: 1, maxContext: 1024, ...backend });
    try {
      return { logits: await m.logits(long), stats: await m.stats() };
    } finally {
      await m.unload();
    }
  };
  const c = await run({ backend: 'cpu' }),
    g = await run(GPU);
  let d = 0;
  for (let i = 0; i < V; i++) d = Math.max(d, Math.abs(c.logits[i] - g.logits[i]));
  t.diagnostic(`after 300 positions: max |dlogit| ${d.toExponential(2)}`);
  assert.ok(d < 1e-3, String(d));
  // tiny's own-KV layers: two sliding (2 heads of 64), one full (2 of 128); 256 rows, then 512
  assert.equal(g.stats.gpuMemory.kv, 2 * 512 * 4 * (128 + 128 + 256));
});

gpuTest('speculative verify rows on the GPU: prompt-lookup drafts give the plain greedy tokens', async (t) => {
  const file = synth(dir, { preset: 'tiny', type: 'f32' });
  // a prompt that repeats itself and a bias towards one token: drafts are made and accepted
  const prompt = [2, ...Array.from({ length: 30 }, (_, i) => 400 + (i % 7) * 13)];
  const o = { temperature: 0, maxTokens: 16, stopIds: [], logitBias: { 300: 60 } };
  const r = await both(file, async (m) => ({
    plain: await collect(m.generate(prompt, { ...o, speculative: false })),
    drafted: await collect(m.generate(prompt, { ...o, speculative: { draftTokens: 4, fixedLength: true } })),
  }));
  const s = r.gpu.drafted.stats;
  t.diagnostic(`GPU: ${s.draftedTokens} drafted, ${s.acceptedTokens} accepted`);
  assert.ok(s.draftedTokens > 0 && s.acceptedTokens > 0, JSON.stringify(s));
  assert.deepEqual(r.gpu.drafted.tokens, r.gpu.plain.tokens);
  assert.deepEqual(r.gpu.plain.tokens, r.cpu.plain.tokens);
});

gpuTest("backend choice: 'auto' never takes a software adapter, 'webgpu' asks for it by name", async () => {
  const file = synth(dir, { preset: 'tiny', type: 'f32' });
  const auto = await loadModel(file, { threads: 1, maxContext: 64 });
  try {
    assert.equal(auto.backend, 'cpu');
    assert.match(auto.info.backendNote, /software|fallback/);
    assert.equal((await auto.stats()).gpuBytes, 0);
  } finally {
    await auto.unload();
  }
  await assert.rejects(
    loadModel(file, { threads: 1, backend: 'webgpu' }),
    (e) => e instanceof OxError && e.code === 'UNSUPPORTED' && /allowFallback/.test(e.message),
  );
  await assert.rejects(
    loadModel(file, { backend: 'gpu' }),
    (e) => e instanceof OxError && e.code === 'RANGE' && /backend/.test(e.message),
  );
});

gpuTest('what the GPU backend lacks runs on the CPU: a weight type with no kernel, MoE', async () => {
  for (const [preset, type, note] of [
    ['tiny', 'q5_0', /weight type 6 has no GPU kernel/],
    ['moe', 'f32', /mixture-of-experts/],
  ]) {
    const file = synth(dir, { preset, type });
    const m = await loadModel(file, { threads: 1, maxContext: 64, ...GPU });
    const c = await loadModel(file, { threads: 1, maxContext: 64, backend: 'cpu' });
    try {
      assert.equal(m.backend, 'cpu', `${preset} ${type}`);
      assert.match(m.info.backendNote, note);
      assert.deepEqual(await m.logits(TOKENS.slice(0, 8)), await c.logits(TOKENS.slice(0, 8)));
    } finally {
      await m.unload();
      await c.unload();
    }
  }
});

gpuTest('a lost device ends that request with a clear error; the model goes on on the CPU', async () => {
  const file = synth(dir, { preset: 'tiny', type: 'f32' });
  const greedy = { maxTokens: 4, temperature: 0, stopIds: [] };
  const cpu = await loadModel(file, { threads: 1, maxContext: 128, backend: 'cpu' });
  const m = await loadModel(file, { threads: 1, maxContext: 128, ...GPU });
  try {
    const want = (await collect(cpu.generate(TOKENS, greedy))).tokens;
    assert.deepEqual((await collect(m.generate(TOKENS, greedy))).tokens, want);
    assert.equal(await m.engine.call('gpuDestroyDevice'), true);
    await assert.rejects(
      collect(m.generate(TOKENS, greedy)),
      (e) => e instanceof OxError && e.code === 'IO' && /GPU device was lost/.test(e.message),
    );
    const st = await m.stats();
    assert.equal(st.backend, 'cpu');
    assert.equal(m.backend, 'cpu');
    assert.equal(st.gpuBytes, 0);
    assert.deepEqual(
      (await collect(m.generate(TOKENS, greedy))).tokens,
      want,
      'the same tokens on the CPU after the loss',
    );
  } finally {
    await cpu.unload();
    await m.unload();
  }
});
