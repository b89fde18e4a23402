// The vision tower on the GPU backend (docs/vision.md "On the GPU") in Node on a software
// adapter (lavapipe 25, else SwiftShader; as tests/node/gpu-engine.test.mjs): the tiny synthetic
// tower (oxinfer synth --vision tiny) recorded by the C core as one GPU step per image, against
// the same tower on the CPU engine. Image sizes: three grids, wide and tall; the
// standardizing, clipped variant; F32 towers and one with a type that has no GPU kernel (its
// linears on the CPU inside the step); an image prompt's next-token log-probabilities.
// Skipped, saying so, when no adapter can be created.
import assert from 'node:assert/strict';
import { estimateMemory, loadModel } from '../../js/main/index.js';
import { patternPng, synth, tmpDir } from '../oracle/fixtures.mjs';
import { GPU, gpuTests, bothBackends } from './webgpu_adapter.mjs';

const dir = tmpDir('gpu-vision');
const gpuTest = await gpuTests(dir);
const both = (file, fn, opts) => bothBackends(file, fn, { maxContext: 512, ...opts });

// [image, soft-token budget] (the processor's budgets: 70, 140, ...; 48 x 48 pixels per soft
// token with patch 16, pooling 3): every image has more than 256 patches (the feed-forward in
// chunks, the attention's keys in several chunks), each its own grid
const IMAGES = [
  [patternPng(64, 40, 1), 70],
  [patternPng(200, 50, 2), 70], // wide
  [patternPng(90, 160, 3), 70], // tall
];

// the models' files: the text GGUF and the tower as llama.cpp's mmproj
function files(type, extra = []) {
  return [
    synth(dir, { preset: 'tiny', type, extra: ['--vision', 'tiny'] }),
    synth(dir, { preset: 'tiny', type, extra: ['--vision', 'tiny', '--format', 'mmproj', ...extra] }),
  ];
}

// max |a - b| over max |b|: the GPU's rows against the CPU's, relative to their scale
function relErr(a, b) {
  assert.equal(a.length, b.length);
  let d = 0,
    m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  assert.ok(m > 0 && Number.isFinite(d), 'finite, non-zero rows');
  return d / m;
}

const embeddings = async (m) => {
  const out = [];
  for (const [img, budget] of IMAGES) out.push(await m.embedImage(img, { maxImageTokens: budget }));
  out.gpuWeights = (await m.stats()).gpuMemory?.weights ?? 0;
  return out;
};

// The tower in f32 on both sides: the same ops, summed in other orders (the GPU's matmul tiles
// and split softmax, its per-lane RMSNorm sums) — f32 rounding, about 1e-7 relative per
// operation, grown by two layers of norms and residuals; a mistake in an op (a wrong position,
// head, stride or pooling block) moves rows by their own size, 1e0. The band, 1e-4, is far from
// both (measured: docs/vision.md).
const BAND = 1e-4;

async function checkTower(t, file, label, opts) {
  const r = await both(file, embeddings, opts);
  for (const [i, [img]] of IMAGES.entries()) {
    const g = r.gpu[i],
      c = r.cpu[i];
    assert.deepEqual([g.softTokens, g.height, g.width], [c.softTokens, c.height, c.width], `image ${i}'s size`);
    const e = relErr(g.embeddings, c.embeddings);
    t.diagnostic(
      `${label}: ${c.width}x${c.height} (${c.softTokens} soft tokens): max rel |GPU - CPU| ${e.toExponential(2)}`,
    );
    assert.ok(e < BAND, `${label} image ${i} (${img.length} bytes): ${e}`);
  }
  return r;
}

gpuTest('F32 tower: the GPU rows equal the CPU rows within f32 rounding, at every image size', async (t) => {
  const r = await checkTower(t, files('f32'), 'f32');
  // the tower's weights went up beside the decoder's: more than the text model alone holds there
  const text = await loadModel(files('f32')[0], { threads: 1, maxContext: 512, ...GPU });
  const alone = (await text.stats()).gpuMemory.weights;
  await text.unload();
  assert.ok(r.gpu.gpuWeights > alone, `${r.gpu.gpuWeights} bytes on the GPU, the text model alone ${alone}`);
  // and the estimate counts them (as gpu-memory.test.mjs does the decoder's)
  const est = await estimateMemory(files('f32'), { backend: 'webgpu', context: 512, threads: 1 });
  t.diagnostic(`GPU weights: held ${r.gpu.gpuWeights} (text model alone ${alone}), estimated ${est.gpu.weights}`);
  assert.ok(Math.abs(est.gpu.weights - r.gpu.gpuWeights) <= 0.001 * r.gpu.gpuWeights, String(est.gpu.weights));
});

gpuTest('standardized, clipped tower (std_bias / std_scale, clamped linears) on the GPU', async (t) => {
  await checkTower(t, files('f32', ['--v-standardize', '--v-clipped']), 'f32 standardize+clipped');
});

// Q5_0 has no GPU kernel: the tower's linears run on the CPU inside the image's step (the
// recorded part runs, the input comes back, the CPU's matmul, the output goes up); the CPU
// quantizes the input to Q8_0 for Q5_0's dot, and an input a last f32 bit apart may round to
// the other Q8_0 level. The band is the quantized tower's own distance from exact arithmetic
// (test_vision: Q8_0 rows 0.07 from the float64 reference on rows of magnitude 2.5), 3e-2.
gpuTest('a tower type with no GPU kernel: its linears on the CPU inside the GPU step', async (t) => {
  const r = await both(files('q5_0'), embeddings);
  for (const [i] of IMAGES.entries()) {
    const e = relErr(r.gpu[i].embeddings, r.cpu[i].embeddings);
    t.diagnostic(`q5_0 image ${i}: max rel |GPU - CPU| ${e.toExponential(2)}`);
    assert.ok(e < 3e-2, `image ${i}: ${e}`);
  }
});

// The image's rows into the decoder (on the GPU too): the next tokens and their
// log-probabilities. Greedy streams agree; the top log-probabilities within 1e-3 (f32 logits
// of the tiny model, which the GPU decoder alone already puts 1e-5 apart: gpu-engine.test.mjs).
gpuTest('an image prompt on the GPU: the same tokens and log-probabilities as on the CPU', async (t) => {
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'image', image: IMAGES[1][0] },
        { type: 'text', text: 'What is it?' },
      ],
    },
  ];
  const greedy = { temperature: 0, maxTokens: 6, logprobs: 3, speculative: false, maxImageTokens: 70 };
  const r = await both(files('f32'), async (m) => {
    const out = { tokens: [], logprobs: [] };
    for await (const c of m.chat(messages, greedy))
      if (!c.stats && c.token !== null) (out.tokens.push(c.token), out.logprobs.push(c.logprob));
    return out;
  });
  assert.equal(r.cpu.tokens.length, 6);
  assert.deepEqual(r.gpu.tokens, r.cpu.tokens);
  const d = Math.max(...r.gpu.logprobs.map((x, i) => Math.abs(x - r.cpu.logprobs[i])));
  t.diagnostic(`image prompt: max |dlogprob| of the chosen tokens ${d.toExponential(2)}`);
  assert.ok(d < 1e-3, String(d));
});
