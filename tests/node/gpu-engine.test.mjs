// The GPU backend end to end in Node on a software adapter (lavapipe 25 from
// tools/setup-lavapipe.sh, else Debian chromium's SwiftShader): the whole forward of the tiny
// synthetic model (PLE, KV-shared layers, sliding + full attention, soft-cap) recorded by the C
// core and run on the GPU thread, against the CPU engine. Greedy token streams on F32 are
// identical; Q8_0 / Q4_K logits stay within the bands below; f16 / q8_0 KV rows and the sliding
// rings; MoE. Also the backend choice ('auto' never takes a software adapter), the fallbacks (a
// weight type with no kernel: that op on the CPU; a layer split), a lost device (the request
// fails, the model goes on on the CPU) and a chat's second turn after an image (the image's KV
// rows kept). Skipped, saying so, when no adapter can be created (no `webgpu` package, no
// Vulkan driver).
import assert from 'node:assert/strict';
import { loadModel, OxError } from '../../js/main/index.js';
import { synth, tmpDir } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';
import { maxDlogp as dlogp } from './dlogp.mjs';
import { GPU, gpuTests, bothBackends } from './webgpu_adapter.mjs';

const V = 1024; // the tiny preset's vocab
const N = 40; // prompt tokens: past the sliding window (16)
const TOKENS = Array.from({ length: N }, (_, i) => (i ? 7 + ((i * 7919) % 1000) : 2));
const dir = tmpDir('gpu');
const both = (file, fn, opts) => bothBackends(file, fn, { maxContext: 128, ...opts });

const gpuTest = await gpuTests(dir);

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

// Past a sliding ring's capacity (the tiny model's window 16 + OX_UBATCH 256 - 1 = 271 rows):
// 300 positions in two micro-batches, each KV type as the CPU stores it (q8_0 over the 40-token
// prompt only: its attention kernel is slow on a software adapter, and the ring's indexing is
// the same for every type). The bands: f32 as the
// F32 test. f16 / q8_0 rows are rounded as the CPU rounds them, but from K and V that differ
// from the CPU's in the last f32 bits (the matmuls' sum order), so now and then a value rounds
// to the neighbouring f16 / int8 step; the calm model keeps what that moves small.
for (const [kvType, band] of [
  ['f32', 1e-3],
  ['f16', 1e-2],
  ['q8_0', 1e-2],
])
  gpuTest(`KV caches on the GPU: ${kvType} rows, sliding layers as rings past their capacity`, async (t) => {
    const file = synth(dir, { preset: 'tiny', type: 'f32', extra: kvType === 'f32' ? [] : CALM });
    const P = kvType === 'q8_0' ? N : 300;
    const long = Array.from({ length: P }, (_, i) => (i ? 5 + ((i * 7919) % 1000) : 2));
    const r = await both(file, async (m) => ({ logits: await m.logits(long, { all: true }), stats: await m.stats() }), {
      maxContext: 1024,
      kvType,
    });
    const d = maxDlogp(r.gpu.logits, r.cpu.logits);
    const a = argmaxes(r.gpu.logits),
      b = argmaxes(r.cpu.logits),
      same = a.filter((x, i) => x === b[i]).length;
    t.diagnostic(`${kvType} KV over ${P} positions: max |dlogp| ${d.toExponential(2)}, argmax agrees at ${same}/${P}`);
    assert.ok(d < band, `${kvType} max |dlogp| ${d} (band ${band})`);
    assert.ok(same >= P - 1, `argmax agrees at ${same}/${P}`);
    // tiny's own-KV layers: two sliding rings (2 heads of 64: 256 rows, then the ring's 271),
    // one full layer (2 heads of 128: 256 rows, then 512); K and V each
    const row = { f32: (w) => 4 * w, f16: (w) => 2 * w, q8_0: (w) => (w / 32) * 34 }[kvType];
    const rows = P > 256 ? [271, 512] : [256, 256];
    assert.equal(r.gpu.stats.gpuMemory.kv, 2 * (2 * rows[0] * row(128) + rows[1] * row(256)));
  });

// The MoE preset (26B-A4B's structure, small: 8 experts, top 2, fused gate/up, K = V layers):
// router top-K, expert matmuls and their weighted sum all on the GPU. F32: the band is wider
// than the dense one (the router's input is rms(x) * scale then 1/sqrt(H) on the GPU, rms(x)
// times scale/sqrt(H) on the CPU, one rounding apart) and the greedy stream is the CPU's. Q8_0:
// the positions before the first activation quant that rounds the other way (see CALM) agree
// to 1e-4; after it, what attention carries moves each position by about 0.1, and where it tips
// a router near a tie another expert runs (measured on lavapipe: max 2.1 at one position, the
// median 0.11, every argmax the same), so the median is held to the dense band.
gpuTest('MoE on the GPU: router and experts without a read-back, against the CPU engine', async (t) => {
  const greedy = { maxTokens: 16, temperature: 0, stopIds: [] };
  const f32 = synth(dir, { preset: 'moe', type: 'f32' });
  const r = await both(f32, async (m) => ({
    logits: await m.logits(TOKENS, { all: true }),
    tokens: (await collect(m.generate(TOKENS, greedy))).tokens,
  }));
  const d = maxDlogp(r.gpu.logits, r.cpu.logits);
  t.diagnostic(`MoE f32: max |dlogp| ${d.toExponential(2)}`);
  assert.ok(d < 5e-3, `MoE f32 max |dlogp| ${d}`);
  assert.deepEqual(argmaxes(r.gpu.logits), argmaxes(r.cpu.logits));
  assert.deepEqual(r.gpu.tokens, r.cpu.tokens, 'MoE F32 greedy tokens');

  const q8 = synth(dir, { preset: 'moe', type: 'q8_0', extra: CALM });
  const q = await both(q8, (m) => m.logits(TOKENS, { all: true }));
  const per = Array.from({ length: N }, (_, i) =>
    maxDlogp(q.gpu.subarray(i * V, (i + 1) * V), q.cpu.subarray(i * V, (i + 1) * V)),
  );
  const median = [...per].sort((x, y) => x - y)[N >> 1],
    a = argmaxes(q.gpu),
    b = argmaxes(q.cpu),
    same = a.filter((x, i) => x === b[i]).length;
  t.diagnostic(
    `MoE q8_0: |dlogp| median ${median.toExponential(2)}, max ${Math.max(...per).toExponential(2)}, argmax ${same}/${N}`,
  );
  assert.ok(per[0] < 1e-4, `MoE q8_0 position 0: ${per[0]}`);
  assert.ok(median < 0.5, `MoE q8_0 median |dlogp| ${median}`);
  assert.ok(Math.max(...per) < 5, `MoE q8_0 max |dlogp| ${Math.max(...per)}`);
  assert.ok(same >= N - 1, `MoE q8_0: argmax agrees at ${same}/${N}`);
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

// A layer split: the first N layers' step on the GPU (one submission), the hidden state and the
// PLE inputs read back, the other layers and the head on the CPU in the same forward. On tiny,
// layers 3-5 read the caches of layers 1 and 2: a split between them reads those layers' K, V
// rows back too and keeps them in the CPU's caches as well (the greedy stream runs on them).
gpuTest('a layer split: the first N layers on the GPU, the rest and the head on the CPU', async (t) => {
  const greedy = { maxTokens: 12, temperature: 0, stopIds: [] };
  for (const [preset, band] of [
    ['moe', 5e-3],
    ['tiny', 1e-3],
  ]) {
    const file = synth(dir, { preset, type: 'f32' });
    const cpu = await loadModel(file, { threads: 1, maxContext: 128, backend: 'cpu' });
    const want = {
      logits: await cpu.logits(TOKENS, { all: true }),
      tokens: (await collect(cpu.generate(TOKENS, greedy))).tokens,
    };
    const L = cpu.info.layers;
    await cpu.unload();
    for (let n = 1; n < L; n++) {
      const m = await loadModel(file, { threads: 1, maxContext: 128, ...GPU, gpuLayers: n });
      try {
        assert.equal(m.backend, 'webgpu', m.info.backendNote);
        assert.equal(m.info.gpu.layers, n, `${preset} gpuLayers ${n}`);
        const d = maxDlogp(await m.logits(TOKENS, { all: true }), want.logits);
        t.diagnostic(`${preset} split after ${m.info.gpu.layers} of ${L} layers: max |dlogp| ${d.toExponential(2)}`);
        assert.ok(d < band, `${preset} split ${n}: max |dlogp| ${d}`);
        assert.deepEqual((await collect(m.generate(TOKENS, greedy))).tokens, want.tokens, `${preset} split ${n}`);
      } finally {
        await m.unload();
      }
    }
  }
});

gpuTest('gpuMemory: fewer layers on the GPU until their weights fit', async (t) => {
  const file = synth(dir, { preset: 'moe', type: 'f32' });
  const all = await loadModel(file, { threads: 1, maxContext: 64, ...GPU });
  const { weights } = (await all.stats()).gpuMemory;
  const want = await all.logits(TOKENS.slice(0, 12));
  await all.unload();
  const half = await loadModel(file, { threads: 1, maxContext: 64, ...GPU, gpuMemory: Math.floor(weights / 2) });
  try {
    const { layers } = half.info.gpu,
      held = (await half.stats()).gpuMemory.weights;
    t.diagnostic(`gpuMemory ${Math.floor(weights / 2)}: ${layers} of ${half.info.layers} layers, ${held} bytes`);
    assert.ok(layers >= 1 && layers < half.info.layers, String(layers));
    assert.ok(held <= weights / 2 + 4 * 64, `${held} bytes held`);
    assert.ok(maxDlogp(await half.logits(TOKENS.slice(0, 12)), want) < 5e-3);
  } finally {
    await half.unload();
  }
  await assert.rejects(
    loadModel(file, { threads: 1, ...GPU, gpuMemory: -1 }),
    (e) => e instanceof OxError && e.code === 'RANGE' && /gpuMemory/.test(e.message),
  );
});

// Q5_0 has no GPU kernel: those matmuls run on the CPU inside the step (the recorded part runs,
// the input comes back, the CPU's matmul, the output goes up, recording goes on); everything
// else stays on the GPU. Every matmul of this model is such an op: the worst case. The CPU
// quantizes the activations it gets back to Q8_0 for Q5_0's dot, so the band is the quantized
// models' (an input a last f32 bit apart may round the other way next to a .5 boundary).
gpuTest('a weight type with no GPU kernel: its ops on the CPU inside the GPU step', async (t) => {
  const file = synth(dir, { preset: 'tiny', type: 'q5_0', extra: CALM });
  const r = await both(file, async (m) => ({ logits: await m.logits(TOKENS, { all: true }), stats: await m.stats() }));
  assert.equal(r.model.info.gpu.layers, r.model.info.layers);
  // only vectors went up (norm weights): the Q5_0 matrices stayed in wasm memory
  assert.ok(r.gpu.stats.gpuMemory.weights < 1e5, String(r.gpu.stats.gpuMemory.weights));
  const d = maxDlogp(r.gpu.logits, r.cpu.logits);
  const a = argmaxes(r.gpu.logits),
    b = argmaxes(r.cpu.logits),
    same = a.filter((x, i) => x === b[i]).length;
  t.diagnostic(`Q5_0 with its matmuls on the CPU: max |dlogp| ${d.toExponential(2)}, argmax agrees at ${same}/${N}`);
  assert.ok(d < 0.5, `max |dlogp| ${d}`);
  assert.ok(same >= N - 1, `argmax agrees at ${same}/${N}`);
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

gpuTest(
  "a chat's second turn keeps the image's KV rows on the GPU, and runs as the conversation from scratch",
  async () => {
    const text = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny'] });
    const mmproj = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny', '--format', 'mmproj'] });
    const m = await loadModel([text, mmproj], { threads: 1, maxContext: 256, ...GPU });
    try {
      assert.equal(m.backend, 'webgpu', m.info.backendNote);
      const w = 96,
        h = 48;
      const data = new Uint8Array(w * h * 4).map((_, i) => (i * 37) % 256);
      const turn1 = [
        { role: 'user', content: [{ type: 'image', image: { width: w, height: h, data } }, 'What is it?'] },
      ];
      const o = { temperature: 0, maxTokens: 4, maxImageTokens: 70, speculative: false };
      const first = await collect(m.chat(turn1, o));
      const turn2 = [...turn1, { role: 'assistant', content: first.text }, { role: 'user', content: 'And then?' }];
      const kept = await collect(m.chat(turn2, o));
      assert.ok(kept.stats.reusedTokens >= first.stats.promptTokens, `${kept.stats.reusedTokens} reused`);
      assert.deepEqual([kept.stats.imagesEncoded, kept.stats.imagesCached], [0, 1]);
      await m.resetChat();
      const fresh = await collect(m.chat(turn2, o));
      assert.equal(fresh.stats.reusedTokens, 0);
      assert.deepEqual(kept.tokens, fresh.tokens);
    } finally {
      await m.unload();
    }
  },
);
